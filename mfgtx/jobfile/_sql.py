"""SQL databases a job reads: read-only sources, one-SELECT queries, table names and URLs.

A job reads plant data through an engine that cannot change the database, whatever the job
file says: SQLite is opened read-only (``mode=ro``) with ``PRAGMA query_only`` and an
authorizer that allows reading only (no ``ATTACH``, no ``VACUUM INTO``, no writes);
PostgreSQL sessions start with ``default_transaction_read_only`` and every transaction is
``SET TRANSACTION READ ONLY``. On top of that a ``query`` must be one ``SELECT`` (or
``WITH ... SELECT``) statement. Give the job a database role that may only read the source
tables as well: these checks are a second line, not a replacement for the database's own
permissions. Only SQLite (the embedded default) and PostgreSQL (``postgresql+psycopg://``)
are supported.

A table name is used as the database resolves an unquoted name (:func:`resolve_table`):
PostgreSQL folds it to lower case and looks in the schema ``public``; SQLite compares names
without regard to case and calls its schema ``main``. ``Scores``, ``scores``,
``public.scores`` (PostgreSQL) and ``main.SCORES`` (SQLite) are one table. Writing scores
(serialised writers, the mark on a table mfgtx created) is :mod:`mfgtx.jobs._sql`'s.
"""

from __future__ import annotations

import os
import re
import sqlite3
from typing import Any

__all__ = [
    "check_query",
    "check_table_name",
    "check_url",
    "dialect",
    "read_engine",
    "resolve_table",
    "safe_slug",
    "same_table",
    "split_table",
]

_IDENT = r"[A-Za-z_][A-Za-z0-9_]{0,62}"
_TABLE = re.compile(rf"^{_IDENT}(?:\.{_IDENT})?$")
#: Words that write, which have no place in a read-only query (outside literals and quoted
#: names): a statement must start with SELECT or WITH, and these are what could still write
#: inside one (data-modifying CTEs, SELECT ... INTO) or smuggle in another statement.
_FORBIDDEN = {
    "alter", "attach", "copy", "create", "delete", "detach", "drop", "grant", "insert", "into",
    "merge", "pragma", "revoke", "truncate", "update", "vacuum",
    # PostgreSQL functions that change settings, reach files or other sessions
    "dblink", "lo_export", "lo_import", "pg_cancel_backend", "pg_ls_dir", "pg_read_binary_file",
    "pg_read_file", "pg_reload_conf", "pg_terminate_backend", "set_config",
}  # fmt: skip
_DIALECTS = ("sqlite", "postgresql")


def safe_slug(name: str) -> str:
    """``name`` reduced to letters, digits, ``_``, ``-`` and ``.`` for use in a file name.

    Example:
        >>> safe_slug("x; DROP TABLE sensors; --")
        'x_DROP_TABLE_sensors'
    """
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("._-")
    return slug[:64] or "table"


def check_table_name(table: str, key: str) -> str:
    """``table`` if it is a plain ``name`` or ``schema.name``; else a ``ValueError``."""
    if not _TABLE.match(table):
        raise ValueError(
            f"{key}: {table!r} is not a table name; use letters, digits and _ (at most 63), "
            "optionally as schema.table"
        )
    return table


def split_table(table: str) -> tuple[str | None, str]:
    """``"schema.name"`` -> ``("schema", "name")``; ``"name"`` -> ``(None, "name")``."""
    schema, _, name = table.rpartition(".")
    return (schema or None), name


_DEFAULT_SCHEMA = {"sqlite": "main", "postgresql": "public"}
_LOCAL_HOSTS = {"", "localhost", "127.0.0.1", "::1"}


def resolve_table(table: str) -> tuple[str | None, str]:
    """``(schema, name)`` of ``table`` as both databases resolve the unquoted name: in lower
    case (PostgreSQL folds it so, SQLite ignores case), the schema left as given.

    Example:
        >>> resolve_table("Line3.Scores")
        ('line3', 'scores')
    """
    return split_table(table.lower())


def _database(url_text: str) -> tuple[str, ...]:
    """Which database ``url_text`` names: SQLite's file (resolved), PostgreSQL's server
    and database (the local socket and localhost taken as one)."""
    from sqlalchemy.engine import make_url

    url = make_url(url_text)
    backend = url.get_backend_name()
    if backend == "sqlite":
        return (backend, os.path.realpath(str(url.database or "")))
    host = (url.host or "").lower()
    return (
        backend,
        "localhost" if host in _LOCAL_HOSTS else host,
        str(url.port or 5432),
        str(url.database or ""),
    )


def same_table(url_a: str, table_a: str, url_b: str, table_b: str) -> bool:
    """Whether two ``(url, table)`` name one table of one database, as the database resolves
    the names (case, default schema).

    Example:
        >>> same_table("sqlite:///plant.db", "Sensors", "sqlite:///./plant.db", "main.sensors")
        True
    """
    if _database(url_a) != _database(url_b):
        return False
    default = _DEFAULT_SCHEMA.get(_database(url_a)[0])
    a, b = resolve_table(table_a), resolve_table(table_b)
    return (a[0] or default, a[1]) == (b[0] or default, b[1])


def _tokens(sql: str) -> list[str]:
    """The words and symbols of ``sql`` outside comments, literals and quoted names."""
    out: list[str] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
        elif sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            if j < 0:
                raise ValueError("query: a /* comment is not closed")
            i = j + 2
        elif c in "'\"`":
            j = i + 1
            while True:
                j = sql.find(c, j)
                if j < 0:
                    raise ValueError(f"query: a {c} quote is not closed")
                if sql.startswith(c * 2, j):  # an escaped quote
                    j += 2
                    continue
                break
            out.append("literal")
            i = j + 1
        elif c == "$" and (m := re.match(r"\$([A-Za-z_]\w*)?\$", sql[i:])):
            tag = m.group(0)
            j = sql.find(tag, i + len(tag))
            if j < 0:
                raise ValueError(f"query: a {tag} quoted string is not closed")
            out.append("literal")
            i = j + len(tag)
        elif c.isalpha() or c == "_":
            m = re.match(r"[A-Za-z_]\w*", sql[i:])
            assert m is not None
            out.append(m.group(0).lower())
            i += len(m.group(0))
        elif c.isspace():
            i += 1
        else:
            out.append(c)
            i += 1
    return out


def check_query(query: str) -> str:
    """``query`` if it is one read-only ``SELECT`` (or ``WITH ... SELECT``) statement.

    Raises:
        ValueError: more than one statement, another kind of statement, or a word that
            writes (``INSERT``, ``INTO``, ``ATTACH``, ``VACUUM``, ``PRAGMA``, ...).

    Example:
        >>> check_query("SELECT * FROM sensors ORDER BY lot, timestamp -- all lines")
        'SELECT * FROM sensors ORDER BY lot, timestamp -- all lines'
        >>> check_query("DROP TABLE sensors")
        Traceback (most recent call last):
        ...
        ValueError: query: must be one SELECT statement, found DROP
    """
    words = _tokens(query)
    while words and words[-1] == ";":
        words.pop()
    if not words:
        raise ValueError("query: is empty")
    if ";" in words:
        raise ValueError("query: must be one SELECT statement; it holds several (a ';')")
    if words[0] not in ("select", "with"):
        raise ValueError(f"query: must be one SELECT statement, found {words[0].upper()}")
    bad = sorted(set(words) & _FORBIDDEN)
    if bad:
        raise ValueError(
            f"query: a read-only SELECT cannot hold {', '.join(w.upper() for w in bad)}"
        )
    return query


def check_url(url_text: str) -> str:
    """``url_text`` if it names a supported database (SQLite with a file, or PostgreSQL);
    else a ``ValueError`` (the password never appears in the message)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(url_text)
    except ArgumentError:
        raise ValueError(
            "url: not a database URL; expected sqlite:///plant.db or "
            "postgresql+psycopg://user@host/db"
        ) from None
    dialect(url)
    return url_text


def dialect(url: Any) -> str:
    """The backend ``url`` names (``sqlite`` or ``postgresql``); else a ``ValueError``."""
    name = url.get_backend_name()
    if name not in _DIALECTS:
        raise ValueError(
            f"url: {name} databases are not supported; use sqlite:///plant.db or "
            "postgresql+psycopg://user@host/db"
        )
    if name == "sqlite":
        _sqlite_file(url)
    return name


_READ_ACTIONS = {
    sqlite3.SQLITE_SELECT,
    sqlite3.SQLITE_READ,
    sqlite3.SQLITE_FUNCTION,
    sqlite3.SQLITE_RECURSIVE,
    sqlite3.SQLITE_TRANSACTION,
}


def _sqlite_read_authorizer(action: int, arg1: Any, arg2: Any, db: Any, trigger: Any) -> int:
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg2 is None:  # reading a pragma, not setting it
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _sqlite_file(url: Any) -> str:
    path = url.database
    if not path or path == ":memory:":
        raise ValueError("url: SQLite needs a database file: sqlite:///plant.db")
    return path


def read_engine(url_text: str) -> Any:
    """A SQLAlchemy engine that can only read the database at ``url_text``.

    Raises:
        ValueError: an unsupported database, or a SQLite URL without a file.
    """
    import urllib.parse

    import sqlalchemy as sa
    from sqlalchemy.engine import make_url

    url = make_url(url_text)
    if dialect(url) == "sqlite":
        path = _sqlite_file(url)  # checked by _dialect: a file

        def connect() -> sqlite3.Connection:
            uri = f"file:{urllib.parse.quote(path)}?mode=ro"
            conn = sqlite3.connect(uri, uri=True, check_same_thread=False)
            conn.execute("PRAGMA query_only = ON")
            conn.set_authorizer(_sqlite_read_authorizer)
            return conn

        return sa.create_engine("sqlite://", creator=connect, poolclass=sa.pool.NullPool)
    engine = sa.create_engine(
        url,
        poolclass=sa.pool.NullPool,
        connect_args={
            "options": "-c default_transaction_read_only=on",
            "application_name": "mfgtx-read",
        },
    )

    @sa.event.listens_for(engine, "begin")
    def _read_only(conn: Any) -> None:
        conn.exec_driver_sql("SET TRANSACTION READ ONLY")

    return engine
