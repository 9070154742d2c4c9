"""Reading a job's inputs: CSV/Parquet files or folders, SQL databases, C-MAPSS text files.

:func:`read_frame` reads a whole source (training). :func:`iter_lot_frames` reads it in
chunks of about ``chunk_rows`` rows and yields frames that each hold *complete* lots, so a
scoring job never holds more than a chunk and a lot in memory (files through
:func:`mfgtx.data.io.file_chunks`: Parquet batches, CSV in blocks of whole lines bounded by
``chunk_rows``, ``chunk_mb`` and a longest line, whatever the file's layout; SQL through a
server-side ``ORDER BY`` cursor). Rows of a lot must come together (as plant exports and
``ORDER BY lot`` give them); a lot that reappears after others is an error naming it, and a
lot of more than ``max_lot_rows`` rows is refused by name. Compressed CSV (gzip, bz2, xz, a
zip of one file; found by their first bytes) stops at ``max_inflated_mb``.

CSV values are read as text (:mod:`mfgtx.data.io`). Every yielded frame carries ``_line``
and ``_file`` (the row's line in its file, or its row in a query, and the file or table).
Whatever a library raises while reading (pyarrow, pandas, SQLAlchemy, zlib, the OS) comes
out as a :class:`~mfgtx.data.DataError` naming the file and, where known, the line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import DataError, Problems
from mfgtx.data.io import (
    CSV_SUFFIXES,
    FILE,
    LINE,
    CsvFormat,
    check_column_names,
    file_chunks,
    file_format,
    plant_files,
    read_csv_bytes,
    reason_of,
    without_position,
)
from mfgtx.data.io import csv_delimiter as _csv_delimiter
from mfgtx.data.read_options import LabelWords
from mfgtx.data.table import Where, pass_fail, read_times
from mfgtx.jobfile.config import DataSection, SourceSection
from mfgtx.jobfile.sql_rows import SqlRows, on_grid, plan_rows

__all__ = [
    "FILE",
    "LINE",
    "WHOLE",
    "UngroupedLotsError",
    "add_segments",
    "csv_delimiter",
    "csv_format",
    "describe",
    "iter_lot_frames",
    "prepare",
    "read_chunks",
    "read_csv_bytes",
    "read_frame",
    "sql_ranges",
    "without_position",
]

log = logging.getLogger(__name__)


#: ``segment`` value that makes a whole continuous series one lot.
WHOLE = "whole"


class UngroupedLotsError(DataError):
    """A lot's rows do not come together in the input, so it cannot be read lot by lot."""


def describe(source: SourceSection) -> str:
    """The source in words, without a password from a URL."""
    if source.path is not None:
        return source.path
    from sqlalchemy.engine import make_url

    what = source.table or "query"
    return f"{make_url(str(source.url)).render_as_string(hide_password=True)} ({what})"


def csv_format(source: SourceSection) -> CsvFormat:
    """How the source's CSV files are written (``delimiter``, ``decimal``, ``encoding``;
    one it leaves out as a plain CSV file: ``auto``, ``.``, ``utf-8``)."""
    return source.csv_format()


def csv_delimiter(file: Path, source: SourceSection) -> tuple[str, str]:
    """The delimiter of a CSV file and where it came from
    (:func:`mfgtx.data.io.csv_delimiter` in the source's format).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = Path(d, "export.csv")
    ...     _ = f.write_text("lot;time;temp\\nA;2026-01-01;1,5\\n")
    ...     csv_delimiter(f, SourceSection(path=str(f)))
    (';', 'found in its header line')
    """
    return _csv_delimiter(file, file.name, csv_format(source))


def _cmapss_chunks(file: Path, source: SourceSection) -> Iterator[pd.DataFrame]:
    from mfgtx.datasets import cmapss_fleet, read_cmapss

    df = read_cmapss(file)
    labelled = file.name.lower().startswith("train")
    out = cmapss_fleet(df, labelled=labelled, rul_cap=source.rul_cap)
    out[LINE] = range(1, len(out) + 1)
    out[FILE] = file.name
    yield out


def _sql_from(source: SourceSection) -> Any:
    """The source's ``table`` as an SQLAlchemy ``FROM`` clause, named as the database
    resolves it."""
    import sqlalchemy as sa

    from mfgtx.jobfile._sql import resolve_table

    schema, name = resolve_table(str(source.table))
    return sa.table(name, schema=schema)


def _sql_engine(source: SourceSection) -> Any:
    from mfgtx.jobfile._sql import read_engine

    try:
        return read_engine(str(source.url))  # cannot write, whatever the query says
    except Exception as e:  # a missing driver, a URL SQLAlchemy cannot use
        raise DataError(f"{describe(source)}: cannot connect: {reason_of(e)}") from e


def sql_ranges(
    source: SourceSection, lot: str, time: str, parts: int, most_rows: int
) -> list[SqlRows] | None:
    """Lot-complete ranges of the source's ``table`` that cut the frames
    :func:`iter_lot_frames` cuts of the whole table (:func:`~mfgtx.jobfile.sql_rows.plan_rows`:
    at least ``parts``, of about ``most_rows`` rows at most); ``None`` for a ``query``, or
    where ranges cannot be exact or the database cannot count (the whole read then says
    what is wrong)."""
    if source.url is None or source.table is None:
        return None
    engine = _sql_engine(source)
    try:
        return plan_rows(engine, _sql_from(source), lot, time, source.chunk_rows, parts, most_rows)
    except Exception as e:  # the whole read names a missing column or table in words
        log.info("%s: no ranges (%s); each partition reads it whole", describe(source),
                 reason_of(e))  # fmt: skip
        return None
    finally:
        engine.dispose()


def _sql_chunks(
    source: SourceSection, order: tuple[str, ...], rows: SqlRows | None = None
) -> Iterator[pd.DataFrame]:
    """The table (``ORDER BY order``) or the query's result in chunks of ``chunk_rows``;
    with ``rows``, that range of the table, its chunks ending where the whole read's do."""
    import sqlalchemy as sa

    engine = _sql_engine(source)
    try:
        if source.query is not None:
            stmt: sa.TextClause | sa.Select[Any] = sa.text(source.query)
        else:
            stmt = sa.select(sa.text("*")).select_from(_sql_from(source))
            if rows is not None:  # ranges are planned only for a table, ORDER BY lot, time
                lot: sa.ColumnClause[Any] = sa.column(order[0])
                if rows.low is not None:
                    stmt = stmt.where(lot >= rows.low)
                stmt = stmt.where(lot <= rows.high).limit(rows.count)
            stmt = stmt.order_by(*(sa.column(c) for c in order))
        start = first = 0 if rows is None else rows.start
        # a server-side cursor: psycopg's default fetches the whole result at once
        stmt = stmt.execution_options(stream_results=True)
        with engine.connect() as conn:
            chunks = pd.read_sql(stmt, conn, chunksize=source.chunk_rows)
            if rows is not None:
                chunks = on_grid(chunks, rows.start, source.chunk_rows)
            for chunk in chunks:
                if first == start:
                    check_column_names(list(chunk.columns), describe(source), "the result")
                chunk[LINE] = range(first, first + len(chunk))
                chunk[FILE] = source.table or "query"
                first += len(chunk)
                yield chunk
        if rows is not None and first != rows.stop:
            raise DataError(
                f"{describe(source)}: rows {rows.start} to {rows.stop} were planned and "
                f"{first - rows.start} read: the table changed while it was scored"
            )
    except DataError:
        raise
    except sa.exc.SQLAlchemyError as e:
        why = reason_of(getattr(e, "orig", None) or e)
        raise DataError(f"{describe(source)}: cannot read: {why}") from e
    except Exception as e:  # a driver's or pandas' error: in words, with the source
        raise DataError(f"{describe(source)}: cannot read: {reason_of(e)}") from e
    finally:
        engine.dispose()


def _file_chunks(file: Path, source: SourceSection) -> Iterator[pd.DataFrame]:
    """Chunks of one file; whatever a library raises comes out as a DataError naming it."""
    if file_format(file, source.format) != "cmapss":
        yield from file_chunks(
            file,
            format=source.format,
            csv=csv_format(source),
            chunk_rows=source.chunk_rows,
            chunk_mb=source.chunk_mb,
            max_inflated_mb=source.max_inflated_mb,
        )
        return
    try:
        yield from _cmapss_chunks(file, source)
    except DataError:
        raise
    except Exception as e:  # pandas, the OS...: in words, with the file
        raise DataError(f"cannot read {file.name} as C-MAPSS text: {reason_of(e)}",
                        file=file.name) from e  # fmt: skip


def read_chunks(
    source: SourceSection,
    order: tuple[str, ...] = (),
    problems: list[dict[str, object]] | None = None,
    *,
    rows: SqlRows | None = None,
) -> Iterator[pd.DataFrame]:
    """Chunks of every file (or the SQL result; ``rows``: that range of the table, planned
    by :func:`sql_ranges`). With ``problems`` a file that cannot be read, or holds no rows,
    is listed there (``file``, ``line``, ``reason``) and the others are still read; without
    it, that is a :class:`~mfgtx.data.DataError`."""
    if source.url is not None:
        yield from _sql_chunks(source, order, rows)
        return
    for file in plant_files(source.path or ""):
        count = 0
        try:
            for chunk in _file_chunks(file, source):
                count += len(chunk)
                if len(chunk):
                    yield chunk
        except DataError as e:
            if problems is None:
                raise
            line = getattr(e, "line", None)
            reason = str(e) if not count or line else f"{e}; {count} rows read before"
            problems.append({"file": file.name, "line": line, "reason": reason,
                             "problem": getattr(e, "problem", None)})  # fmt: skip
            log.warning("%s", reason)
            if count:  # the last lot read from it may be cut short: the reader must know
                yield _cut_off(file.name)
            continue
        if count == 0:
            reason = f"{file.name} holds no rows (a header only, or empty)"
            if problems is None and len(plant_files(source.path or "")) == 1:
                raise DataError(f"{describe(source)}: no rows")
            if problems is not None:
                problems.append({"file": file.name, "line": None, "reason": reason})
            log.warning("%s", reason)


_CUT_OFF = "mfgtx_cut_off"


def _cut_off(name: str) -> pd.DataFrame:
    """The mark :func:`read_chunks` yields after a file that stopped while it was read."""
    mark = pd.DataFrame()
    mark.attrs[_CUT_OFF] = name
    return mark


def read_frame(source: SourceSection) -> pd.DataFrame:
    """The whole source as one DataFrame (with the ``_line`` column)."""
    parts = list(read_chunks(source))
    if not parts:
        raise DataError(f"{describe(source)}: no rows")
    return pd.concat(parts, ignore_index=True)


def add_segments(
    frame: pd.DataFrame,
    lot: str,
    time: str,
    segment: str,
    where: str = "input",
    time_format: str | None = None,
) -> pd.DataFrame:
    """``frame`` with a ``lot`` column cut from ``time`` into ``segment``-long calendar
    blocks (``data.segment``: one continuous series without lots); :data:`WHOLE` makes the
    whole series one lot (scoring: the latest window must not be cut off). Times are ISO
    8601, or written as ``time_format`` (``data.columns.time_format``).

    Raises:
        DataError: the input already has a ``lot`` column, or a time that is not ISO 8601
            (not ``time_format``).
    """
    if lot in frame.columns:
        raise DataError(
            f"{where}: data.segment creates the lot column {lot!r}, but the input has one; "
            "drop data.segment or name another columns.lot",
            column=lot,
        )
    if time not in frame.columns:
        raise DataError(f"{where}: missing time column {time!r}", column=time)
    fmt = time_format or "ISO8601"
    stamps = pd.to_datetime(frame[time], utc=True, format=fmt, errors="coerce")
    bad = stamps.isna().to_numpy()
    if bad.any():
        i = int(bad.argmax())
        line = frame[LINE].iloc[i] if LINE in frame.columns else i
        written = (
            f"written as {time_format!r} (data.columns.time_format)"
            if time_format
            else "an ISO 8601 time (data.segment needs timestamps; data.columns.time_format "
            "reads others, such as '%d.%m.%Y %H:%M')"
        )
        raise DataError(
            f"{where}: line {line}: time {frame[time].iloc[i]!r} is not {written}",
            column=time,
        )
    out = frame.copy()
    if segment == WHOLE:
        out[lot] = WHOLE
    else:
        out[lot] = stamps.dt.floor(pd.Timedelta(segment)).dt.strftime("%Y-%m-%dT%H:%M")
    return out


def iter_lot_frames(
    source: SourceSection,
    lot: str,
    time: str | None = None,
    *,
    segment: str | None = None,
    problems: list[dict[str, object]] | None = None,
    time_format: str | None = None,
    chunks: Iterable[pd.DataFrame] | None = None,
) -> Iterator[pd.DataFrame]:
    """Frames of complete lots, about ``chunk_rows`` rows each (see the module docstring).

    A SQL ``table`` is read ``ORDER BY lot, time``; a ``query`` is read as written. With
    ``segment`` the input has no lot column: lots are ``segment``-long blocks of ``time``
    (:func:`add_segments`) and a table is read ``ORDER BY time``. With ``problems``, a file
    of a folder that cannot be read or holds no rows is listed there and the rest are read.

    A lot of more than ``source.max_lot_rows`` rows is a :class:`~mfgtx.data.DataError`
    naming it; with ``problems`` it is listed there (``lot``, ``file``, ``line``,
    ``reason``) and its rows are passed over as they are read, the other lots still come.

    ``chunks``: the chunks to cut, as :func:`read_chunks` yields them (default: read
    ``source``), for a reader of some of its files (a partition of ``score --engine ray``).
    """
    done: set[str] = set()
    carry: pd.DataFrame | None = None
    limit = source.max_lot_rows
    passing: str | None = None  # a lot too large to hold, whose rows are passed over
    order = (lot,) if time is None else (lot, time)
    if segment is not None:
        if time is None:
            raise ValueError("segment needs the time column")
        order = (time,)
    for chunk in read_chunks(source, order, problems) if chunks is None else chunks:
        if _CUT_OFF in chunk.attrs:  # the file stopped: its last lot may be incomplete
            if carry is not None and len(carry) and problems is not None:
                lot_id = str(carry[lot].iloc[0])
                where = carry[FILE].iloc[0] if FILE in carry.columns else chunk.attrs[_CUT_OFF]
                first = carry[LINE].iloc[0] if LINE in carry.columns else None
                problems.append({
                    "lot": lot_id, "file": where, "line": first,
                    "reason": f"lot {lot_id}: {chunk.attrs[_CUT_OFF]} stopped while this lot "
                    f"was read ({len(carry)} rows read from line {first}); it is not scored, "
                    "since its rows may be incomplete",
                })  # fmt: skip
                done.add(lot_id)
            carry, passing = None, None
            continue
        if segment is not None and time is not None:
            chunk = add_segments(chunk, lot, time, segment, describe(source), time_format)
        if lot not in chunk.columns:
            raise DataError(
                f"{describe(source)}: missing lot column {lot!r}; found {list(chunk.columns)}",
                column=lot,
            )
        if passing is not None:
            lead = np.logical_and.accumulate((chunk[lot].astype(str) == passing).to_numpy())
            if lead.all():
                continue
            chunk, passing = chunk[~lead], None
        frame = chunk if carry is None else pd.concat([carry, chunk], ignore_index=True)
        ids = frame[lot].astype(str)
        last = ids.iloc[-1]
        tail = (ids == last).to_numpy()
        ready, carry = frame[~tail], frame[tail]
        if len(ready) > limit:  # a whole lot in one chunk (chunk_rows > max_lot_rows)
            counts = ids[~tail].value_counts()
            for big in counts.index[counts > limit]:
                rows = ready[ids[~tail] == big]
                _too_large(rows, str(big), lot, limit, source, problems)
                done.add(str(big))
                ready = ready[ready[lot].astype(str) != big]
        if len(ready):
            _check_grouped(ready, lot, done, source)
            yield ready.reset_index(drop=True)
        if len(carry) > limit:
            _check_grouped(carry.iloc[:1], lot, done, source)
            _too_large(carry, last, lot, limit, source, problems)
            passing, carry = last, None
    if carry is not None and len(carry):
        _check_grouped(carry, lot, done, source)
        yield carry.reset_index(drop=True)


def _too_large(
    rows: pd.DataFrame,
    lot_id: str,
    lot: str,
    limit: int,
    source: SourceSection,
    problems: list[dict[str, object]] | None,
) -> None:
    """Refuse a lot of more than ``limit`` rows (``rows``: those read of it), or list it in
    ``problems``."""
    file, line = str(rows[FILE].iloc[0]), int(rows[LINE].iloc[0])
    unit = "line" if file.lower().endswith(CSV_SUFFIXES) else "row"
    reason = (
        f"{describe(source)}: lot {lot_id} has more than {limit} rows (from {file} {unit} "
        f"{line}); a lot is held whole in memory: raise source.max_lot_rows if it is one "
        f"lot, or check that {lot!r} is the lot column"
    )
    if problems is None:
        raise DataError(reason, column=lot, lot=lot_id, file=file, line=line)
    problems.append({"lot": lot_id, "file": file, "line": line, "reason": reason})
    log.warning("%s; its rows are passed over", reason)


def _check_grouped(frame: pd.DataFrame, lot: str, done: set[str], source: SourceSection) -> None:
    col = frame[lot]
    named = col[col.notna() & (col.astype(str).str.strip() != "")]  # blank ids: reported later
    ids = pd.unique(named.astype(str))
    again = [i for i in ids if i in done]
    if again:
        raise UngroupedLotsError(
            f"{describe(source)}: rows of lot {again[0]} are not together (it appears again "
            "after other lots); sort the export by lot, or read a table with ORDER BY lot",
            lot=again[0],
        )
    done.update(ids)


def prepare(
    frame: pd.DataFrame,
    data: DataSection,
    *,
    labels: bool = True,
    label_frame: pd.DataFrame | None = None,
    problems: Problems | None = None,
    words: LabelWords | None = None,
) -> pd.DataFrame:
    """Join the labels, derive ``defect`` and the label time as ``data`` says.

    ``label_frame``: the label table already read (a chunked reader reads it once);
    ``problems``: a pass/fail value not understood is listed there and its lot left out
    (:class:`~mfgtx.data.Problems`), instead of raised; ``words``: the pass/fail words of
    ``data.pass_column`` (the job file's top-level ``labels``; default: true/pass/yes and
    false/fail/no).

    Raises:
        DataError: a pass/fail value that is none of ``words`` (without ``problems``), naming
            its file, line and lot, the accepted words and the key ``labels``.
    """
    cols = data.columns
    if labels and data.labels is not None:
        lab = label_frame if label_frame is not None else read_frame(data.labels.source)
        lab = without_position(lab)
        on = data.labels.on
        keep = list(data.labels.columns) or [c for c in lab.columns if c != on]
        missing = [c for c in [on, *keep] if c not in lab.columns]
        if missing:
            raise DataError(
                f"{describe(data.labels.source)}: missing label column(s) {missing}; found "
                f"{list(lab.columns)}",
                column=missing[0],
            )
        if lab[on].duplicated().any():
            dup = lab[on][lab[on].duplicated()].iloc[0]
            raise DataError(f"{describe(data.labels.source)}: lot {dup} has two label rows")
        frame = frame.merge(lab[[on, *keep]], on=on, how="left", validate="many_to_one")
    if labels and data.pass_column is not None:
        if data.pass_column not in frame.columns:
            raise DataError(
                f"pass_column {data.pass_column!r} is not a column", column=data.pass_column
            )
        lots = frame[cols.lot] if cols.lot in frame.columns else pd.Series("", frame.index)
        column = data.pass_column
        w = words or LabelWords()
        where = Where.of(frame, describe(data.source))
        passed = pass_fail(
            frame[column], column, where, lots.astype(str), problems, good=w.good, bad=w.bad
        )
        frame["defect"] = 1.0 - passed
        frame = frame.drop(columns=[data.pass_column])
    if labels and data.label_known == "lot_end":  # times read as the rows' own are
        times = read_times(frame, cols.column_map(targets=False))
        frame[cols.label_time] = times.groupby(frame[cols.lot]).transform("max")
    return frame
