"""Reading plant files: CSV text and Parquet, in bounded memory, every row with its place.

:func:`file_chunks` reads one file in chunks of at most ``chunk_rows`` rows (Parquet
through pyarrow's batch reader; CSV in blocks of whole lines, :mod:`mfgtx.data._csv`:
bounded by ``chunk_rows``, ``chunk_mb`` and a longest line, whatever the file's layout);
:func:`read_csv_bytes` reads a CSV held in memory (an upload) whole. Compressed CSV (gzip,
bz2, xz, a zip of one file; found by their first bytes) stops at ``max_inflated_mb``.

CSV values are read as text, so that :func:`~mfgtx.data.read_table` parses numbers and
times itself and names the line of a bad value. Every frame carries ``_line`` (:data:`LINE`):
the row's line in its CSV file (header = line 1; the line a record starts on, however many
lines its quoted values span) or its row number in a Parquet file, and ``_file``
(:data:`FILE`): the file name. Whatever a library raises while reading (pyarrow, pandas,
zlib, the OS) comes out as a :class:`~mfgtx.data.DataError` naming the file and, where
known, the line; a column name that appears twice is refused naming both positions.

The CSV dialect is a :class:`CsvFormat`: the delimiter (``auto``: sniffed from the header
line), the decimal mark and the encoding, the ``source`` keys of a job file.
"""

from __future__ import annotations

import codecs
import csv
import logging
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from mfgtx.data._csv import csv_frames, open_input
from mfgtx.data._reasons import reason_of
from mfgtx.data.errors import DataError
from mfgtx.data.table import COMMA_NUMBER

__all__ = [
    "CSV_SUFFIXES",
    "DELIMITERS",
    "FILE",
    "LINE",
    "PARQUET_SUFFIXES",
    "UPLOAD_INFLATED_MB",
    "CsvFormat",
    "check_column_names",
    "csv_delimiter",
    "csv_header",
    "decimal_points",
    "file_chunks",
    "file_format",
    "plant_files",
    "read_csv_bytes",
    "reason_of",
    "without_position",
]

log = logging.getLogger(__name__)

#: The column of each row's line in its CSV file (its row in a Parquet file or query).
LINE = "_line"
#: The column of the file (or SQL table) each row came from.
FILE = "_file"

#: File names read as CSV text and as Parquet (any case).
CSV_SUFFIXES = tuple(
    f"{s}{z}" for s in (".csv", ".txt", ".tsv") for z in ("", ".gz", ".bz2", ".xz", ".zip")
)
PARQUET_SUFFIXES = (".parquet", ".pq")

#: What ``delimiter: auto`` looks for in a CSV file's header line (ties: the first).
DELIMITERS = (",", ";", "\t", "|")

#: ``read_csv_bytes``'s default limit on what compressed bytes inflate to (MB): the whole
#: file becomes one DataFrame, several times the size of its text.
UPLOAD_INFLATED_MB = 64


@dataclass(frozen=True)
class CsvFormat:
    """How a CSV file is written: the job file's ``source.delimiter``, ``source.decimal``
    and ``source.encoding``.

    Args:
        delimiter: the character between values, ``auto`` (the one of ``,`` ``;`` tab
            ``|`` that the header line holds most often, ``,`` when it holds none) or ``tab``.
        decimal: ``,`` reads ``1,25`` as 1.25 (European exports; the delimiter is then not
            ``,``). Only values that are numbers with one decimal comma change.
        encoding: the text encoding (``utf-8``, a byte-order mark is skipped; Windows
            exports are often ``cp1252``).

    Example:
        >>> CsvFormat(delimiter=";", decimal=",").decimal
        ','
        >>> CsvFormat(delimiter=",", decimal=",")
        Traceback (most recent call last):
        ...
        ValueError: decimal ',' needs another delimiter than ',' (such as ';')
    """

    delimiter: str = "auto"
    decimal: str = "."
    encoding: str = "utf-8"

    def __post_init__(self) -> None:
        if self.delimiter not in ("auto", "tab") and (
            len(self.delimiter) != 1 or self.delimiter in '"\r\n'
        ):
            raise ValueError(
                f"delimiter: one character (such as ',' or ';'), 'tab' or 'auto', found "
                f"{self.delimiter!r}"
            )
        if self.decimal not in (".", ","):
            raise ValueError(f"decimal: '.' or ',', found {self.decimal!r}")
        if self.decimal == "," and self.delimiter == ",":
            raise ValueError("decimal ',' needs another delimiter than ',' (such as ';')")
        try:
            codecs.lookup(self.encoding)
        except LookupError:
            raise ValueError(
                f"encoding: {self.encoding!r} is not a text encoding Python knows (such as "
                "utf-8, cp1252, latin-1)"
            ) from None

    @property
    def plain(self) -> bool:
        """Whether this is the default format (``auto``, ``.``, ``utf-8``)."""
        return self == CsvFormat()


def without_position(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` without the ``_line`` and ``_file`` columns the readers add."""
    return frame.drop(columns=[LINE, FILE], errors="ignore")


def plant_files(path: str | Path) -> list[Path]:
    """The file at ``path``, or the CSV and Parquet files of the folder ``path`` in name
    order.

    Raises:
        DataError: the path does not exist, the folder cannot be listed or holds none.
    """
    path = Path(path)
    if path.is_dir():
        try:
            names = list(path.iterdir())
        except OSError as e:
            raise DataError(f"{path}: cannot list this folder: {reason_of(e)}") from e
        files = sorted(p for p in names if p.name.lower().endswith(CSV_SUFFIXES + PARQUET_SUFFIXES))
        if not files:
            raise DataError(f"{path}: no .csv or .parquet files in this folder")
        return files
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    return [path]


def file_format(file: Path, format: str = "auto") -> str:
    """``format``, or with ``auto`` the one the file's name says: ``csv`` or ``parquet``.

    Raises:
        DataError: ``auto`` and the name ends in neither.
    """
    if format != "auto":
        return format
    name = file.name.lower()
    if name.endswith(PARQUET_SUFFIXES):
        return "parquet"
    if name.endswith(CSV_SUFFIXES):
        return "csv"
    raise DataError(f"{file.name}: unknown file type; expected .csv or .parquet (or set format)")


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


def csv_delimiter(
    data: Path | bytes, name: str | None = None, fmt: CsvFormat = CsvFormat()
) -> tuple[str, str]:
    """The delimiter of a CSV file (or of its bytes) and where it came from (the format's
    ``delimiter``, a ``.tsv`` name, or the header line: the one of :data:`DELIMITERS` it
    holds most often). ``name``: the file's name (default: the path's).

    >>> csv_delimiter(b"lot;time;temp\\nA;2026-01-01;1,5\\n", "export.csv")
    (';', 'found in its header line')
    """
    if fmt.delimiter != "auto":
        return ("\t" if fmt.delimiter == "tab" else fmt.delimiter), "source.delimiter"
    if name is None:
        name = data.name if isinstance(data, Path) else ""
    if name.lower().endswith(".tsv"):
        return "\t", "a .tsv file"
    with open_input(data, name) as f:
        head = f.read(65536)
    header = _header_line(head, fmt.encoding)
    counts = {d: _count_outside_quotes(header, d) for d in DELIMITERS}
    best = max(DELIMITERS, key=counts.__getitem__)
    return (best, "found in its header line") if counts[best] else (",", "the default")


def csv_header(file: Path, fmt: CsvFormat = CsvFormat()) -> list[str]:
    """The column names of a CSV file written in ``fmt`` (its header line only).

    Raises:
        DataError: the file is a format that is not CSV text (Parquet, 7-Zip...).
    """
    sep, _ = csv_delimiter(file, file.name, fmt)
    with open_input(file, file.name) as f:
        line = _header_line(f.read(65536), fmt.encoding)
    return next(csv.reader([line], delimiter=sep), [])


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


def check_column_names(names: Sequence[object], where: str, what: str = "the header") -> None:
    """Refuse a column name that appears twice (naming both positions, from 1) or that is
    one the readers add (``_line``, ``_file``).

    Raises:
        DataError: naming the column and ``where`` (the file or table).
    """
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


def _csv_chunks(
    data: Path | bytes,
    name: str,
    fmt: CsvFormat,
    *,
    chunk_rows: int,
    chunk_mb: int,
    max_inflated_mb: int,
    setting: str = "source.max_inflated_mb",
) -> Iterator[pd.DataFrame]:
    """Chunks of text values with ``_line`` (the file's own line numbers: blank lines are
    counted, then dropped) and ``_file`` (:func:`mfgtx.data._csv.csv_frames`)."""
    sep, why = csv_delimiter(data, name, fmt)
    if fmt.decimal == "," and sep == ",":
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
        encoding=fmt.encoding,
        chunk_rows=chunk_rows,
        chunk_chars=chunk_mb << 20,
        max_inflated=max_inflated_mb << 20,
        setting=setting,
        dialect=f"values separated by {sep!r} ({why})",
    )
    for chunk in frames:
        check_column_names(chunk.columns[:-1], name)
        if fmt.decimal == ",":
            chunk = decimal_points(chunk)
        chunk[FILE] = name
        yield chunk


def _parquet_chunks(file: Path, chunk_rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    reader = pq.ParquetFile(file)
    check_column_names(reader.schema_arrow.names, file.name, "its fields")
    first = 0
    for batch in reader.iter_batches(batch_size=chunk_rows):
        chunk = batch.to_pandas()
        chunk[LINE] = range(first, first + len(chunk))
        chunk[FILE] = file.name
        first += len(chunk)
        yield chunk


_WORDS = {"csv": "CSV", "parquet": "Parquet"}


def file_chunks(
    file: Path,
    *,
    format: str = "auto",
    csv: CsvFormat = CsvFormat(),
    chunk_rows: int = 200_000,
    chunk_mb: int = 32,
    max_inflated_mb: int = 2048,
) -> Iterator[pd.DataFrame]:
    """Chunks of at most ``chunk_rows`` rows of one CSV or Parquet file (see the module
    docstring), with ``_line`` and ``_file``.

    ``format``: ``auto`` (from the file's name), ``csv`` or ``parquet``; ``csv``: how a CSV
    file is written; ``chunk_mb``: CSV text read at a time (MB); ``max_inflated_mb``:
    compressed CSV stops with an error past this many MB of decompressed data.

    Raises:
        DataError: naming the file and, where known, its line; whatever a library raised
            (pyarrow, pandas, zlib, the OS) is said in words.
    """
    kind = file_format(file, format)
    if kind not in _WORDS:
        raise ValueError(f"format: 'auto', 'csv' or 'parquet', found {format!r}")
    rows = 0
    try:
        if kind == "csv":
            chunks = _csv_chunks(file, file.name, csv, chunk_rows=chunk_rows, chunk_mb=chunk_mb,
                                 max_inflated_mb=max_inflated_mb)  # fmt: skip
        else:
            chunks = _parquet_chunks(file, chunk_rows)
        for chunk in chunks:
            rows += len(chunk)
            yield chunk
    except DataError:
        raise
    except Exception as e:  # pyarrow, pandas, zlib, the OS...: in words, with the file
        after = f" after {rows} rows" if rows else ""
        raise DataError(
            f"cannot read {file.name} as {_WORDS[kind]}{after}: {reason_of(e)}",
            file=file.name,
        ) from e


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
    values, the same delimiter sniffing, decimal commas and encoding (:class:`CsvFormat`),
    with ``_line`` and ``_file``. Compressed bytes (gzip, bz2, xz, a zip of one file) are
    read up to ``max_inflated_mb`` MB of decompressed data.

    >>> read_csv_bytes(b"lot;t\\nA;1,5\\n\\nB;2\\n", "export.csv", decimal=",")
      lot    t  _line       _file
    0   A  1.5      2  export.csv
    1   B    2      4  export.csv

    Raises:
        DataError: the file cannot be read with these options (the reason names the
            setting to change), it inflates past ``max_inflated_mb``, or it holds no rows.
        ValueError: the options are not valid (as in a job file's ``source`` section).
    """
    fmt = CsvFormat(delimiter=delimiter, decimal=decimal, encoding=encoding)
    if (
        isinstance(max_inflated_mb, bool)
        or not isinstance(max_inflated_mb, int)
        or (max_inflated_mb < 1)
    ):
        raise ValueError(f"max_inflated_mb: a whole number >= 1, found {max_inflated_mb!r}")
    try:
        parts = list(
            _csv_chunks(data, name, fmt, chunk_rows=200_000, chunk_mb=32,
                        max_inflated_mb=max_inflated_mb, setting="the limit for an upload")
        )  # fmt: skip
    except DataError:
        raise
    except Exception as e:  # anything a library raised, in words, with the file
        raise DataError(f"cannot read {name}: {reason_of(e)}", file=name) from e
    if not parts or not sum(map(len, parts)):
        raise DataError(f"{name} holds no rows (a header only, or empty)")
    return pd.concat(parts, ignore_index=True)
