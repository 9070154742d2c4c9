"""Reading job inputs: CSV/Parquet files or folders, SQL databases, C-MAPSS text files.

:func:`read_frame` reads a whole source (training). :func:`iter_lot_frames` reads it in
chunks of about ``chunk_rows`` rows and yields frames that each hold *complete* lots, so a
scoring job never holds more than a chunk and a lot in memory (Parquet through pyarrow's
batch reader, CSV in blocks of whole lines (:mod:`mfgtx.jobs._csv`: bounded by
``chunk_rows``, ``chunk_mb`` and a longest line, whatever the file's layout), SQL through a
server-side ``ORDER BY`` cursor). Rows of a lot must come together (as plant exports and
``ORDER BY lot`` give them); a lot that reappears after others is an error naming it, and a
lot of more than ``max_lot_rows`` rows is refused by name. Compressed CSV (gzip, bz2, xz, a
zip of one file; found by their first bytes) stops at ``max_inflated_mb``.

CSV values are read as text, so that the data layer parses numbers and times itself and
names the line of a bad value. Every yielded frame carries ``_line``: the row's line in its
CSV file (header = line 1; the line a record starts on, however many lines its quoted
values span) or its row number in a Parquet file or query, and ``_file``: the file name (or
the table) it came from. Whatever a library raises while reading (pyarrow, pandas,
SQLAlchemy, zlib, the OS) comes out as a :class:`~mfgtx.data.DataError` naming the file
and, where known, the line; a column name that appears twice is refused naming both
positions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from mfgtx.data import DataError
from mfgtx.data.table import COMMA_NUMBER
from mfgtx.jobs._csv import csv_frames, open_input
from mfgtx.jobs._reasons import reason_of
from mfgtx.jobs.config import DataSection, SourceSection

__all__ = [
    "FILE",
    "LINE",
    "WHOLE",
    "UngroupedLotsError",
    "add_segments",
    "copy_to_sql",
    "csv_delimiter",
    "decimal_points",
    "describe",
    "iter_lot_frames",
    "prepare",
    "read_csv_bytes",
    "read_frame",
    "without_position",
]

log = logging.getLogger(__name__)

LINE = "_line"


#: ``segment`` value that makes a whole continuous series one lot.
WHOLE = "whole"


class UngroupedLotsError(DataError):
    """A lot's rows do not come together in the input, so it cannot be read lot by lot."""


FILE = "_file"


def without_position(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the ``_line`` and ``_file`` columns the readers add."""
    return frame.drop(columns=[LINE, FILE], errors="ignore")


_CSV = tuple(
    f"{s}{z}" for s in (".csv", ".txt", ".tsv") for z in ("", ".gz", ".bz2", ".xz", ".zip")
)
_PARQUET = (".parquet", ".pq")


def describe(source: SourceSection) -> str:
    """The source in words, without a password from a URL."""
    if source.path is not None:
        return source.path
    from sqlalchemy.engine import make_url

    what = source.table or "query"
    return f"{make_url(source.url).render_as_string(hide_password=True)} ({what})"


def _files(source: SourceSection) -> list[Path]:
    path = Path(source.path or "")
    if path.is_dir():
        try:
            names = list(path.iterdir())
        except OSError as e:
            raise DataError(f"{path}: cannot list this folder: {reason_of(e)}") from e
        files = sorted(p for p in names if p.name.lower().endswith(_CSV + _PARQUET))
        if not files:
            raise DataError(f"{path}: no .csv or .parquet files in this folder")
        return files
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    return [path]


def _kind(file: Path, source: SourceSection) -> str:
    if source.format != "auto":
        return source.format
    name = file.name.lower()
    if name.endswith(_PARQUET):
        return "parquet"
    if name.endswith(_CSV):
        return "csv"
    raise DataError(f"{file.name}: unknown file type; expected .csv or .parquet (or set format)")


#: What ``delimiter: auto`` looks for in a CSV file's header line (ties: the first).
DELIMITERS = (",", ";", "\t", "|")


#: ``read_csv_bytes``'s default limit on what compressed bytes inflate to (MB): the whole
#: file becomes one DataFrame, several times the size of its text.
UPLOAD_INFLATED_MB = 64


def _head(data: Path | bytes, name: str) -> bytes:
    """The first 64 KiB of a file (or of bytes), decompressed when it is compressed."""
    with open_input(data, name) as f:
        return f.read(65536)


def _header_line(head: bytes, encoding: str) -> str:
    """The first line of a CSV file's first bytes, for sniffing its delimiter."""
    lines = head.decode(encoding, errors="replace").lstrip("\ufeff").splitlines()
    return lines[0] if lines else ""


def _count_outside_quotes(line: str, char: str) -> int:
    quoted, n = False, 0
    for c in line:
        if c == '"':
            quoted = not quoted
        elif c == char and not quoted:
            n += 1
    return n


def csv_delimiter(file: Path, source: SourceSection) -> tuple[str, str]:
    """The delimiter of a CSV file and where it came from (``source.delimiter``, a ``.tsv``
    name, or the header line: the one of :data:`DELIMITERS` it holds most often).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     f = Path(d, "export.csv")
    ...     _ = f.write_text("lot;time;temp\\nA;2026-01-01;1,5\\n")
    ...     csv_delimiter(f, SourceSection(path=str(f)))
    (';', 'found in its header line')
    """
    return _delimiter(file, file.name, source)


def _delimiter(data: Path | bytes, name: str, source: SourceSection) -> tuple[str, str]:
    if source.delimiter != "auto":
        return ("\t" if source.delimiter == "tab" else source.delimiter), "source.delimiter"
    if name.lower().endswith(".tsv"):
        return "\t", "a .tsv file"
    header = _header_line(_head(data, name), source.encoding)
    counts = {d: _count_outside_quotes(header, d) for d in DELIMITERS}
    best = max(DELIMITERS, key=counts.__getitem__)
    return (best, "found in its header line") if counts[best] else (",", "the default")


def decimal_points(chunk: pd.DataFrame) -> pd.DataFrame:
    """``chunk`` (text values) with every number written with a decimal comma rewritten with
    a point; other text (times, names, ``1.234,5``) is left as it is.

    >>> decimal_points(pd.DataFrame({"t": ["1,5", "-,25", "A,1", "2"]}))["t"].tolist()
    ['1.5', '-.25', 'A,1', '2']
    """
    for c in chunk.columns:
        s = chunk[c]
        if not (s.dtype == object or pd.api.types.is_string_dtype(s)):
            continue
        hit = s.str.fullmatch(COMMA_NUMBER, na=False).to_numpy(dtype=bool)
        if hit.any():
            chunk.loc[hit, c] = s[hit].str.replace(",", ".", regex=False)
    return chunk


def _csv_chunks(file: Path, source: SourceSection) -> Iterator[pd.DataFrame]:
    sep, why = csv_delimiter(file, source)
    yield from _read_csv(file, file.name, sep, why, source)


def _read_csv(
    data: Path | bytes,
    name: str,
    sep: str,
    why: str,
    source: SourceSection,
    setting: str = "source.max_inflated_mb",
) -> Iterator[pd.DataFrame]:
    """Chunks of text values with ``_line`` (the file's own line numbers: blank lines are
    counted, then dropped) and ``_file`` (:func:`mfgtx.jobs._csv.csv_frames`)."""
    if source.decimal == "," and sep == ",":
        raise DataError(
            f"{name}: the delimiter is ',' ({why}), so ',' cannot also be the decimal "
            "mark (source.decimal); set source.delimiter"
        )
    if sep != ",":
        log.info("%s: values separated by %r (%s)", name, sep, why)
    frames = csv_frames(
        data,
        name,
        sep=sep,
        encoding=source.encoding,
        chunk_rows=source.chunk_rows,
        chunk_chars=source.chunk_mb << 20,
        max_inflated=source.max_inflated_mb << 20,
        setting=setting,
        dialect=f"values separated by {sep!r} ({why})",
    )
    for chunk in frames:
        _check_columns(chunk.columns[:-1], name)
        if source.decimal == ",":
            chunk = decimal_points(chunk)
        chunk[FILE] = name
        yield chunk


def read_csv_bytes(
    data: bytes,
    name: str,
    *,
    delimiter: str = "auto",
    decimal: str = ".",
    encoding: str = "utf-8",
    max_inflated_mb: int = UPLOAD_INFLATED_MB,
) -> pd.DataFrame:
    """A CSV file held in memory (an upload) read as a job's CSV source reads it: text
    values, the same delimiter sniffing, decimal commas and encoding
    (:class:`~mfgtx.jobs.config.SourceSection`), with ``_line`` and ``_file``. Compressed
    bytes (gzip, bz2, xz, a zip of one file) are read up to ``max_inflated_mb`` MB of
    decompressed data.

    >>> read_csv_bytes(b"lot;t\\nA;1,5\\n\\nB;2\\n", "export.csv", decimal=",")
      lot    t  _line       _file
    0   A  1.5      2  export.csv
    1   B    2      4  export.csv

    Raises:
        DataError: the file cannot be read with these options (the reason names the
            setting to change), it inflates past ``max_inflated_mb``, or it holds no rows.
        ValueError: the options are not valid (as in a job file's ``source`` section).
    """
    source = SourceSection(
        path=name,
        delimiter=delimiter,
        decimal=decimal,  # type: ignore[arg-type]
        encoding=encoding,
        max_inflated_mb=max_inflated_mb,
    )
    try:
        sep, why = _delimiter(data, name, source)
        parts = list(_read_csv(data, name, sep, why, source, "the limit for an upload"))
    except DataError:
        raise
    except Exception as e:  # anything a library raised, in words, with the file
        raise DataError(f"cannot read {name}: {reason_of(e)}", file=name) from e
    if not parts or not sum(map(len, parts)):
        raise DataError(f"{name} holds no rows (a header only, or empty)")
    return pd.concat(parts, ignore_index=True)


def _check_columns(names: Sequence[object], where: str, what: str = "the header") -> None:
    """Refuse a column name that appears twice (naming both positions, from 1) or that is
    one the readers add (``_line``, ``_file``)."""
    first: dict[object, int] = {}
    for i, c in enumerate(names, start=1):
        if c in first:
            raise DataError(
                f"{where}: column {c!r} appears twice in {what} (columns {first[c]} and {i}); "
                "rename one",
                column=str(c),
                file=where,
            )
        first[c] = i
        if c in (LINE, FILE):
            raise DataError(
                f"{where}: column {c!r} (column {i}) has a name mfgtx keeps for where a row "
                "comes from; rename it",
                column=str(c),
                file=where,
            )


def _parquet_chunks(file: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(file)
    _check_columns(reader.schema_arrow.names, file.name, "its fields")
    first = 0
    for batch in reader.iter_batches(batch_size=chunk_rows):
        chunk = batch.to_pandas()
        chunk[LINE] = range(first, first + len(chunk))
        chunk[FILE] = file.name
        first += len(chunk)
        yield chunk


def _cmapss_chunks(file: Path, source: SourceSection) -> Iterator[pd.DataFrame]:
    from mfgtx.datasets import cmapss_fleet, read_cmapss

    df = read_cmapss(file)
    labelled = file.name.lower().startswith("train")
    out = cmapss_fleet(df, labelled=labelled, rul_cap=source.rul_cap)
    out[LINE] = range(1, len(out) + 1)
    out[FILE] = file.name
    yield out


def _sql_chunks(source: SourceSection, order: tuple[str, ...]) -> Iterator[pd.DataFrame]:
    import sqlalchemy as sa

    from mfgtx.jobs._sql import read_engine, resolve_table

    try:
        engine = read_engine(str(source.url))  # cannot write, whatever the query says
    except Exception as e:  # a missing driver, a URL SQLAlchemy cannot use
        raise DataError(f"{describe(source)}: cannot connect: {reason_of(e)}") from e
    try:
        if source.query is not None:
            stmt = sa.text(source.query)
        else:
            schema, name = resolve_table(str(source.table))  # as the database resolves it
            stmt = sa.select(sa.text("*")).select_from(sa.table(name, schema=schema))
            stmt = stmt.order_by(*(sa.column(c) for c in order))
        with engine.connect() as conn:
            first = 0
            for chunk in pd.read_sql(stmt, conn, chunksize=source.chunk_rows):
                if first == 0:
                    _check_columns(list(chunk.columns), describe(source), "the result")
                chunk[LINE] = range(first, first + len(chunk))
                chunk[FILE] = source.table or "query"
                first += len(chunk)
                yield chunk
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
    kind = _kind(file, source)
    rows = 0
    try:
        if kind == "csv":
            chunks = _csv_chunks(file, source)
        elif kind == "parquet":
            chunks = _parquet_chunks(file, source.chunk_rows)
        else:
            chunks = _cmapss_chunks(file, source)
        for chunk in chunks:
            rows += len(chunk)
            yield chunk
    except DataError:
        raise
    except Exception as e:  # pyarrow, pandas, zlib, the OS...: in words, with the file
        what = {"csv": "CSV", "parquet": "Parquet", "cmapss": "C-MAPSS text"}[kind]
        after = f" after {rows} rows" if rows else ""
        raise DataError(f"cannot read {file.name} as {what}{after}: {reason_of(e)}",
                        file=file.name) from e  # fmt: skip


def _chunks(
    source: SourceSection,
    order: tuple[str, ...] = (),
    problems: list[dict[str, object]] | None = None,
) -> Iterator[pd.DataFrame]:
    """Chunks of every file (or the SQL result). With ``problems`` a file that cannot be
    read, or holds no rows, is listed there (``file``, ``line``, ``reason``) and the others
    are still read; without it, that is a :class:`~mfgtx.data.DataError`."""
    if source.url is not None:
        yield from _sql_chunks(source, order)
        return
    for file in _files(source):
        rows = 0
        try:
            for chunk in _file_chunks(file, source):
                rows += len(chunk)
                if len(chunk):
                    yield chunk
        except DataError as e:
            if problems is None:
                raise
            line = getattr(e, "line", None)
            reason = str(e) if not rows or line else f"{e}; {rows} rows read before"
            problems.append({"file": file.name, "line": line, "reason": reason})
            log.warning("%s", reason)
            if rows:  # the last lot read from it may be cut short: the reader must know
                yield _cut_off(file.name)
            continue
        if rows == 0:
            reason = f"{file.name} holds no rows (a header only, or empty)"
            if problems is None and len(_files(source)) == 1:
                raise DataError(f"{describe(source)}: no rows")
            if problems is not None:
                problems.append({"file": file.name, "line": None, "reason": reason})
            log.warning("%s", reason)


_CUT_OFF = "mfgtx_cut_off"


def _cut_off(name: str) -> pd.DataFrame:
    """The mark :func:`_chunks` yields after a file that stopped while it was read."""
    mark = pd.DataFrame()
    mark.attrs[_CUT_OFF] = name
    return mark


def read_frame(source: SourceSection) -> pd.DataFrame:
    """The whole source as one DataFrame (with the ``_line`` column)."""
    parts = list(_chunks(source))
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
) -> Iterator[pd.DataFrame]:
    """Frames of complete lots, about ``chunk_rows`` rows each (see the module docstring).

    A SQL ``table`` is read ``ORDER BY lot, time``; a ``query`` is read as written. With
    ``segment`` the input has no lot column: lots are ``segment``-long blocks of ``time``
    (:func:`add_segments`) and a table is read ``ORDER BY time``. With ``problems``, a file
    of a folder that cannot be read or holds no rows is listed there and the rest are read.

    A lot of more than ``source.max_lot_rows`` rows is a :class:`~mfgtx.data.DataError`
    naming it; with ``problems`` it is listed there (``lot``, ``file``, ``line``,
    ``reason``) and its rows are passed over as they are read, the other lots still come.
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
    for chunk in _chunks(source, order, problems):
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
    unit = "line" if file.lower().endswith(_CSV) else "row"
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


def _truthy(s: pd.Series, column: str) -> pd.Series:
    words = {"true": 1.0, "false": 0.0, "pass": 1.0, "fail": 0.0, "yes": 1.0, "no": 0.0}
    text = s.astype("string").str.strip().str.lower()
    out = pd.to_numeric(text.replace(words), errors="coerce")
    bad = out.isna() & text.notna()
    if bad.any():
        i = int(bad.to_numpy().nonzero()[0][0])
        raise DataError(f"column {column!r} holds {s.iloc[i]!r}, expected pass/fail", column=column)
    return out


def prepare(
    frame: pd.DataFrame,
    data: DataSection,
    *,
    labels: bool = True,
    label_frame: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Join the labels, derive ``defect`` and the label time as ``data`` says.

    ``label_frame``: the label table already read (a chunked reader reads it once).
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
        passed = _truthy(frame[data.pass_column], data.pass_column)
        frame["defect"] = 1.0 - passed
        frame = frame.drop(columns=[data.pass_column])
    if labels and data.label_known == "lot_end":
        times = pd.to_numeric(frame[cols.time], errors="coerce")
        if times.isna().any():  # timestamps, not cycle numbers
            times = pd.to_datetime(frame[cols.time], utc=True, format="ISO8601")
        frame[cols.label_time] = times.groupby(frame[cols.lot]).transform("max")
    return frame


def copy_to_sql(source: SourceSection, url: str, table: str, *, replace: bool = False) -> int:
    """Copy a file source into a SQL table (to try SQL inputs, or to stage an export).

    Values are copied as read: text from CSV, typed values from Parquet. Returns the rows
    written. A table this function creates carries the index ``mfgtx_copy_<table>``, its
    mark; ``replace`` drops an existing table first, and only one with that mark: a table
    mfgtx did not create is refused (``ValueError``), and nothing is written. Otherwise rows
    are appended. The name is used as the database resolves it (``Sensors`` is ``sensors``).
    """
    import sqlalchemy as sa

    from mfgtx.jobs._sql import check_table_name, copy_index, copy_problem, resolve_table

    schema, name = resolve_table(check_table_name(table, "table"))
    engine = sa.create_engine(url)
    try:
        n = 0
        with engine.begin() as conn:
            exists = sa.inspect(conn).has_table(name, schema=schema)
            if exists and replace:
                problem = copy_problem(conn, schema, name)
                if problem is not None:
                    raise ValueError(f"table {table!r} {problem}; nothing was written")
            for i, chunk in enumerate(_chunks(source)):
                mode = "replace" if replace and i == 0 else "append"
                without_position(chunk).to_sql(
                    name, conn, schema=schema, if_exists=mode, index=False
                )
                if i == 0 and (replace or not exists):
                    q = conn.dialect.identifier_preparer
                    where = q.quote_schema(schema) + "." if schema else ""
                    index, column = q.quote(copy_index(name)), q.quote(str(chunk.columns[0]))
                    if conn.dialect.name == "sqlite":  # SQLite puts the schema on the index
                        create = f"CREATE INDEX {where}{index} ON {q.quote(name)} ({column})"
                    else:
                        create = f"CREATE INDEX {index} ON {where}{q.quote(name)} ({column})"
                    conn.execute(sa.text(create))
                n += len(chunk)
        return n
    finally:
        engine.dispose()
