"""Writing scores: replace-by-key into a Parquet/CSV file or a SQL table, all or nothing.

Rows are keyed by ``KEYS`` (lot, window end) unless the job names other keys (a forecast adds
sensor and step, an image score is keyed by the image path). Writing a batch replaces the rows
with the same keys and keeps the others, so re-running a job on the same input gives the same
output without duplicates. A file is rewritten through a temporary file in the same folder and
renamed into place (readers see the old or the new file, never half of one); a SQL table is
changed in one transaction (delete the batch's keys, insert the batch) and carries a unique
index on the keys.

Scores written by mfgtx before the output columns were named from the classes (``p_0``,
``p_1``, a ``decision`` of 1/0) are not merged with today's (``p_bad``, ``decision`` bad/good):
such a file or table is refused, naming it and its old columns (:func:`old_columns_problem`).

Only outputs mfgtx wrote are merged into and replaced (:mod:`mfgtx._files`): a file it wrote
and nobody changed since, a table it created (with its index,
:func:`~mfgtx.jobs._sql.table_problem`). A user's file or table of that name is refused.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from mfgtx._files import NotWrittenByMfgtx, atomic_write, replace_problem
from mfgtx.jobfile.config import SinkSection

__all__ = ["KEYS", "describe_sink", "write_errors", "write_scores", "write_text"]

log = logging.getLogger(__name__)

KEYS = ("lot", "window_end")

_OLD_PROBABILITY = re.compile(r"p_\d+")  # p_0, p_1 ...: class indices, before class names


def old_columns_problem(where: str, columns: Iterable[str], frame: pd.DataFrame) -> str | None:
    """Why an existing output (``where``: its file or table, with ``columns``) cannot take
    ``frame``: it holds probabilities named by class index (``p_0``, ``p_1``), written before
    the scores were named from the classes; ``None`` when it can.

    Example:
        >>> new = pd.DataFrame(columns=["lot", "p_bad", "decision"])
        >>> old_columns_problem("out.csv", ["lot", "p_bad", "decision"], new) is None
        True
        >>> print(old_columns_problem("out.csv", ["lot", "p_0", "p_1", "decision"], new))
        ... # doctest: +ELLIPSIS
        out.csv holds scores named the old way (columns p_0, p_1, decision as 1/0) ...
    """
    old = [str(c) for c in columns if _OLD_PROBABILITY.fullmatch(str(c)) and c not in frame]
    if not old:
        return None
    new = ", ".join(str(c) for c in frame.columns if str(c).startswith("p_") or c == "decision")
    return (
        f"{where} holds scores named the old way (columns {', '.join(old)}, decision as 1/0) "
        f"and these scores are named from the classes ({new}); write them to a new file or "
        "table, or rename or move the old one away; nothing was written"
    )


def describe_sink(sink: SinkSection) -> str:
    if sink.path is not None:
        return sink.path
    from sqlalchemy.engine import make_url

    assert sink.url is not None  # a SinkSection holds exactly one of path and url
    return f"{make_url(sink.url).render_as_string(hide_password=True)} table {sink.table}"


def write_text(path: Path, text: str) -> None:
    """Write a text file atomically (temporary file in the same folder, then rename)."""
    atomic_write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8"))


def _write_frame(path: Path, frame: pd.DataFrame) -> None:
    def write(tmp: str) -> None:
        if path.name.lower().endswith(".parquet"):
            frame.to_parquet(tmp, index=False, engine="pyarrow")
        else:
            frame.to_csv(tmp, index=False, lineterminator="\n")

    atomic_write(path, write)


def _read_file(path: Path, keys: tuple[str, ...]) -> pd.DataFrame | None:
    if not path.exists():
        return None
    if path.name.lower().endswith(".parquet"):
        return pd.read_parquet(path, engine="pyarrow")
    return pd.read_csv(path, dtype={k: str for k in keys if k != "step"})


def _key_index(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.MultiIndex:
    return pd.MultiIndex.from_frame(frame[list(keys)].astype(str))


def _merge(old: pd.DataFrame | None, new: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    if old is not None and len(old):
        missing = [k for k in keys if k not in old.columns]
        if missing:
            raise ValueError(
                f"the existing output has no key column(s) {missing} (columns "
                f"{list(old.columns)}): it was written by another kind of job; choose another "
                "output"
            )
        old = old[~_key_index(old, keys).isin(_key_index(new, keys))]
        new = pd.concat([old, new], ignore_index=True) if len(old) else new
    return new.sort_values(list(keys), kind="stable").reset_index(drop=True)


def _write_sql(sink: SinkSection, frame: pd.DataFrame, keys: tuple[str, ...]) -> None:
    import sqlalchemy as sa

    from mfgtx.jobfile._sql import resolve_table
    from mfgtx.jobs._sql import lock_table, output_index, table_problem, write_engine

    schema, name = resolve_table(str(sink.table))
    engine = write_engine(str(sink.url))
    try:
        with engine.begin() as conn:  # one transaction: all rows or none
            lock_table(conn, str(sink.table))  # writers of this table take turns
            problem = table_problem(str(sink.url), str(sink.table), conn)
            if problem is not None:
                raise NotWrittenByMfgtx(f"{describe_sink(sink)} {problem}; nothing was written")
            table = sa.table(name, *(sa.column(k) for k in keys), schema=schema)
            if sa.inspect(conn).has_table(name, schema=schema):
                columns = [c["name"] for c in sa.inspect(conn).get_columns(name, schema=schema)]
                old = old_columns_problem(describe_sink(sink), columns, frame)
                if old is not None:
                    raise ValueError(old)
                _add_columns(conn, schema, name, [c for c in frame.columns if c not in columns],
                             frame, describe_sink(sink))  # fmt: skip
                rows = frame[list(keys)].astype(str).to_dict("records")
                stmt = sa.delete(table).where(
                    *(table.c[k] == sa.bindparam(f"k_{i}") for i, k in enumerate(keys))
                )
                conn.execute(stmt, [{f"k_{i}": r[k] for i, k in enumerate(keys)} for r in rows])
            frame.to_sql(name, conn, schema=schema, if_exists="append", index=False)
            index = output_index(name)
            index_table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=conn)
            if not any(ix.name == index for ix in index_table.indexes):
                sa.Index(index, *(index_table.c[k] for k in keys), unique=True).create(conn)
    finally:
        engine.dispose()


def _add_columns(
    conn: Any, schema: str | None, name: str, added: list[str], frame: pd.DataFrame, where: str
) -> None:
    """Add the columns a newer mfgtx writes (the lot's ``line``) to a table an earlier run
    created (its rows keep them empty), in the run's transaction; the table is mfgtx's
    (checked before), so its shape is mfgtx's to extend."""
    import sqlalchemy as sa

    quote = conn.dialect.identifier_preparer.quote
    table = f"{quote(schema)}.{quote(name)}" if schema else quote(name)
    for column in added:
        numeric = pd.api.types.is_numeric_dtype(frame[column])
        kind = (sa.Float() if numeric else sa.Text()).compile(dialect=conn.dialect)
        conn.execute(sa.text(f"ALTER TABLE {table} ADD COLUMN {quote(column)} {kind}"))
        log.info("%s: added the column %s (earlier rows leave it empty)", where, column)


def write_scores(sink: SinkSection, frame: pd.DataFrame, keys: tuple[str, ...] = KEYS) -> int:
    """Replace the rows of ``frame``'s ``keys`` in ``sink``; returns the rows now in the
    output (files) or written (SQL)."""
    if frame[list(keys)].duplicated().any():
        raise ValueError(f"scores hold the same ({', '.join(keys)}) twice")
    if sink.path is not None:
        path = Path(sink.path)
        problem = replace_problem(path)
        if problem is not None:  # before reading it: its columns say nothing about whose it is
            raise NotWrittenByMfgtx(
                f"{path} {problem}; choose another file or move it away; nothing was written"
            )
        existing = _read_file(path, keys)
        if existing is not None:
            old = old_columns_problem(str(path), existing.columns, frame)
            if old is not None:
                raise ValueError(old)
        merged = _merge(existing, frame, keys)
        _write_frame(path, merged)
        return len(merged)
    _write_sql(sink, frame, keys)
    return len(frame)


def write_errors(path: Path, errors: list[dict[str, object]]) -> None:
    """Write the error list (lot, file, line, column, reason) as CSV, atomically; always
    written, with a header only when there is nothing to report."""
    frame = pd.DataFrame(errors, columns=["lot", "file", "line", "column", "reason"])
    lines = pd.to_numeric(frame["line"], errors="coerce")
    if lines.notna().sum() == frame["line"].notna().sum() and (lines.dropna() % 1 == 0).all():
        frame["line"] = lines.astype("Int64")  # line 2, not 2.0 beside an empty line
    _write_frame(path, frame)
