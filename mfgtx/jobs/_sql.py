"""SQL databases a job writes: serialised writers, and the mark on a table mfgtx created.

Scores are written through an engine whose transactions serialise writers of one table:
SQLite transactions begin ``IMMEDIATE`` (the second writer waits up to
:data:`BUSY_TIMEOUT_S`), PostgreSQL transactions take an advisory lock on the table's name.
Only SQLite (the embedded default) and PostgreSQL (``postgresql+psycopg://``) are supported.

Table names are used as the database resolves them (:func:`mfgtx.jobfile._sql.resolve_table`).
mfgtx writes scores only into a table it created: one with its unique index
``ux_<table>_keys`` on the keys (:func:`table_problem`); any other existing table is refused.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from mfgtx.jobfile._sql import dialect, read_engine, resolve_table

__all__ = [
    "BUSY_TIMEOUT_S",
    "copy_index",
    "copy_problem",
    "lock_table",
    "output_index",
    "table_problem",
    "write_engine",
]

#: Seconds a SQLite writer waits for another writer of the same database.
BUSY_TIMEOUT_S = 60.0


def output_index(name: str) -> str:
    """The unique index mfgtx gives a score table it creates (at most 63 characters, as
    PostgreSQL keeps of a name): the mark that the table is mfgtx's."""
    return f"ux_{name}_keys"[:63]


def copy_index(name: str) -> str:
    """The index :func:`~mfgtx.jobs.copy_sql.copy_to_sql` gives a table it creates: the mark
    that it may replace that table."""
    return f"mfgtx_copy_{name}"[:63]


def copy_problem(conn: Any, schema: str | None, name: str) -> str | None:
    """Why the existing table ``name`` may not be replaced by a copy (``None``: a copy
    created it)."""
    import sqlalchemy as sa

    index = copy_index(name)
    for ix in sa.inspect(conn).get_indexes(name, schema=schema):
        if str(ix.get("name") or "").lower() == index:
            return None
    return (
        f"exists and was not created by mfgtx (it has no index {index}, which mfgtx gives "
        "the tables it copies into); choose another table, or drop that one yourself"
    )


def _table_problem(conn: Any, schema: str | None, name: str) -> str | None:
    import sqlalchemy as sa

    inspector = sa.inspect(conn)
    if not inspector.has_table(name, schema=schema):
        return None
    index = output_index(name)
    for ix in inspector.get_indexes(name, schema=schema):
        if str(ix.get("name") or "").lower() == index and ix.get("unique"):
            return None
    return (
        f"exists and was not created by mfgtx (it has no unique index {index}, which mfgtx "
        "gives the tables it creates); choose another table, or rename that one"
    )


def _inspect_engine(url_text: str) -> Any:
    """An engine that reads the database's catalogue without changing anything (``None``:
    a SQLite file that does not exist yet)."""
    import urllib.parse

    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    url = make_url(url_text)
    if dialect(url) != "sqlite":
        return read_engine(url_text)
    path = str(url.database)
    if not os.path.exists(path):
        return None

    def connect() -> sqlite3.Connection:
        uri = f"file:{urllib.parse.quote(path)}?mode=ro"
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    return sa.create_engine("sqlite://", creator=connect, poolclass=sa.pool.NullPool)


def table_problem(url_text: str, table: str, conn: Any = None) -> str | None:
    """Why scores may not be written into ``table`` (``None``: it does not exist yet, or
    mfgtx created it). Reads the catalogue only; with ``conn`` inside its transaction.

    Example:
        >>> import sqlite3, tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with sqlite3.connect(f"{tmp}/plant.db") as db:
        ...         _ = db.execute("CREATE TABLE scores (lot TEXT, p REAL)")
        ...     print(table_problem(f"sqlite:///{tmp}/plant.db", "Scores").split(" (")[0])
        exists and was not created by mfgtx
    """
    import sqlalchemy as sa

    schema, name = resolve_table(table)
    if conn is not None:
        return _table_problem(conn, schema, name)
    engine = _inspect_engine(url_text)
    if engine is None:
        return None
    try:
        with engine.connect() as c:
            return _table_problem(c, schema, name)
    except sa.exc.SQLAlchemyError as e:
        reason = " ".join(str(getattr(e, "orig", None) or e).split())[:200]
        return f"cannot be checked: the database did not answer ({reason})"
    finally:
        engine.dispose()


def write_engine(url_text: str) -> Any:
    """A SQLAlchemy engine for writing scores; see the module docstring for how writers of
    one table are serialised (:func:`lock_table` takes the lock in a transaction)."""
    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    url = make_url(url_text)
    if dialect(url) == "sqlite":
        engine = sa.create_engine(
            url, poolclass=sa.pool.NullPool, connect_args={"timeout": BUSY_TIMEOUT_S}
        )

        @sa.event.listens_for(engine, "connect")
        def _no_implicit_begin(dbapi_conn: Any, record: Any) -> None:
            dbapi_conn.isolation_level = None  # SQLAlchemy emits BEGIN itself (below)

        @sa.event.listens_for(engine, "begin")
        def _begin_immediate(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")  # take the write lock first

        return engine
    return sa.create_engine(
        url, poolclass=sa.pool.NullPool, connect_args={"application_name": "mfgtx-write"}
    )


def lock_table(conn: Any, table: str) -> None:
    """Serialise writers of ``table`` for the rest of the transaction (PostgreSQL: an
    advisory lock on its name as the database resolves it, ``schema.`` left out for
    ``public``; SQLite: the ``IMMEDIATE`` transaction holds it already)."""
    import sqlalchemy as sa

    if conn.dialect.name == "postgresql":
        schema, name = resolve_table(table)
        key = name if schema in (None, "public") else f"{schema}.{name}"
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": f"mfgtx:{key}"}
        )


def open_job_history(url: str) -> tuple[Any, str]:
    """The history at ``url`` opened for writing (created or upgraded; a SQLite file's folder
    made), and where it is in words (:func:`mfgtx.history.history_where`): what ``score``,
    ``truth``, ``watch`` and ``promote`` record into.

    Raises:
        HistoryError, OSError, ValueError: the history cannot be opened.
    """
    from pathlib import Path

    from mfgtx.history import history_where, open_history

    where = history_where(url)
    if url.startswith("sqlite:///"):
        Path(where).parent.mkdir(parents=True, exist_ok=True)
    return open_history(write_engine(url), where), where
