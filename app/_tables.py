"""Sensor tables of a page: the data folder's file of a bundle's columns, and an uploaded
CSV, both read by the library's reader (:mod:`mfgtx.data.io`) in the CSV format chosen
under "CSV format" (it starts as the bundle's read options: how its training data was
written). Their times are parsed once, by the library with the bundle's time format and
zone (:func:`mfgtx.data.table.read_times`): the page draws and writes those, never its own
reading of the text (a column that reads both day first and month first is refused,
naming both readings)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from _recorded import recorded
from _settings import MAX_CSV_INFLATED_MB, MAX_CSV_MB

from mfgtx.data import ColumnMap, DataError, read_times
from mfgtx.data.io import FILE, LINE, CsvFormat, csv_header, read_csv_bytes, without_position

#: The CSV formats an upload may be read in: a job file's ``source.delimiter``,
#: ``source.decimal`` and ``source.encoding``, worded for the page.
DELIMITERS = {"auto": "found in the header line", ",": "comma ,", ";": "semicolon ;",
              "tab": "tab", "|": "bar |"}  # fmt: skip
DECIMALS = {".": "point (1.25)", ",": "comma (1,25)"}
ENCODINGS = ("utf-8", "cp1252", "latin-1")
#: The job file's settings, as this page's controls name them.
CONTROLS = (
    ("source.decimal: ','", "Decimal mark: comma under CSV format"),
    ("source.decimal", "Decimal mark under CSV format"),
    ("source.delimiter", "Between values under CSV format"),
    ("source.encoding", "Encoding under CSV format"),
)


def start_format(predictor: Any, manifest: Any) -> CsvFormat:
    """The CSV format an upload starts from: the bundle's read options (a predictor of
    sensor rows saves them), else as its recorded job read its training data
    (:func:`_recorded.recorded`)."""
    options = getattr(predictor, "read_options", None)
    return options.csv if options is not None else recorded(manifest).fmt


def csv_format(manifest: Any, key: str, predictor: Any = None) -> dict[str, str]:
    """The upload's CSV format (``delimiter``, ``decimal``, ``encoding``), chosen under "CSV
    format"; it starts as the bundle's read options (:func:`start_format`). A choice that
    does not go together is refused when the file is read, naming the control."""
    start = start_format(predictor, manifest)
    encodings = list(dict.fromkeys([*ENCODINGS, start.encoding]))
    delimiters = list(dict.fromkeys([*DELIMITERS, start.delimiter]))
    with st.expander("CSV format", expanded=not start.plain):
        st.caption("As the bundle's job file read its training data; change it for a file "
                   "written otherwise.")  # fmt: skip
        c1, c2, c3 = st.columns(3)
        delimiter = c1.selectbox(
            "Between values",
            delimiters,
            delimiters.index(start.delimiter),
            format_func=lambda d: DELIMITERS.get(d, repr(d)),
            key=f"{key}_delimiter",
        )
        decimals = list(DECIMALS)
        decimal = c2.selectbox(
            "Decimal mark",
            decimals,
            decimals.index(start.decimal),
            format_func=DECIMALS.get,
            key=f"{key}_decimal",
        )
        encoding = c3.selectbox(
            "Encoding", encodings, encodings.index(start.encoding), key=f"{key}_encoding"
        )
    return {"delimiter": delimiter, "decimal": decimal, "encoding": encoding}


def page_words(reason: str) -> str:
    """A reader's reason with the job file's setting named as this page's control."""
    for setting, control in CONTROLS:
        reason = reason.replace(setting, control)
    return reason


def read_upload_bytes(data: bytes, name: str, fmt: Mapping[str, str]) -> pd.DataFrame:
    """An upload read as ``mfgtx score`` reads a job's CSV source in format ``fmt``, with
    ``_line`` and ``_file``.

    Raises:
        DataError: the file cannot be read in ``fmt``; the reason names the control to change.
    """
    try:
        return read_csv_bytes(data, name, max_inflated_mb=MAX_CSV_INFLATED_MB, **fmt)
    except DataError as e:
        raise DataError(
            page_words(str(e)), column=e.column, lot=e.lot, row=e.row, file=e.file, line=e.line
        ) from None
    except ValueError as e:  # a format whose parts do not go together
        raise DataError(page_words(str(e)), file=name) from None


def read_csv(data: bytes, name: str, fmt: Mapping[str, str], text: tuple[str, ...]) -> pd.DataFrame:
    """A CSV file read as :func:`read_upload_bytes` reads it, with every column but the
    ``text`` ones (:func:`text_columns`) as numbers where all its values are numbers.

    Raises:
        DataError: the file cannot be read in ``fmt``; the reason names the control to change.
    """
    frame = read_upload_bytes(data, name, fmt)
    for c in frame.columns.difference([*text, LINE, FILE]):
        values = pd.to_numeric(frame[c], errors="coerce")
        if values.notna().sum() == frame[c].notna().sum():
            frame[c] = values
    return frame


def text_columns(columns: ColumnMap) -> tuple[str, ...]:
    """The columns an upload keeps as text: ids (``001`` stays ``001``). A time column of
    numbers (a cycle counter) becomes numbers, as every reading does."""
    return (columns.lot, *columns.keys)


@st.cache_data(show_spinner=False, max_entries=8, ttl=60)  # new rows show within a minute
def _csv(
    path: str, delimiter: str, decimal: str, encoding: str, text: tuple[str, ...]
) -> pd.DataFrame:
    """The file as :func:`read_csv` gives it, keyed by its format and text columns."""
    fmt = {"delimiter": delimiter, "decimal": decimal, "encoding": encoding}
    return without_position(read_csv(Path(path).read_bytes(), Path(path).name, fmt, text))


def frame_for(cmap: ColumnMap, data_dir: Path, manifest: Any = None) -> pd.DataFrame:
    """The CSV file of the data folder that holds the bundle's columns: the file its
    recorded job trained on when that lies in the data folder, else the first file that
    has the columns, in the folder first, then one folder down (``sensors.csv`` for the
    quality and forecast models of the sample plant, ``degradation.csv`` for RUL,
    ``regimes/train.csv`` for the regimes fleet). Each is read in the recorded job's CSV
    format."""
    need = {cmap.lot, cmap.time, *cmap.keys, *(cmap.sensors or ())}
    if not data_dir.is_dir():
        raise DataError(f"the data folder {data_dir} does not exist")
    job = recorded(manifest)
    trained = job.trained_on
    here = [p for p in [trained] if p is not None and p.is_relative_to(data_dir.resolve())]
    found = sorted(data_dir.glob("*.csv")) + sorted(data_dir.glob("*/*.csv"))
    for path in here + found:
        if need <= _header(path, job.fmt):  # the header first: cheap
            f = job.fmt
            frame = _csv(str(path), f.delimiter, f.decimal, f.encoding, text_columns(cmap))
            return with_times(frame, cmap)
    raise DataError(f"no CSV file in {data_dir} has the bundle's columns {sorted(need)}")


def with_times(frame: pd.DataFrame, cmap: ColumnMap) -> pd.DataFrame:
    """``frame`` with its time column parsed by the library as the bundle reads it
    (``cmap``'s time format and zone): what the page draws and writes.

    Raises:
        DataError: a time that cannot be read so, or a column that reads both day first and
            month first without a time format (naming both readings).
    """
    out = frame.copy()
    out[cmap.time] = read_times(frame, cmap)
    return out


def _header(path: Path, fmt: CsvFormat) -> set[str]:
    """The column names of a CSV file in format ``fmt`` (none when it cannot be read so)."""
    try:
        return set(csv_header(path, fmt))
    except (OSError, ValueError):  # DataError too
        return set()


def read_upload_csv(
    upload: Any, predictor: Any, fmt: Mapping[str, str]
) -> tuple[pd.DataFrame | None, str | None]:
    """An uploaded CSV in format ``fmt`` (:func:`csv_format`) checked as the bundle reads
    its input: ``(frame, None)`` or ``(None, why)``; ``why`` names the file's line, as a
    spreadsheet numbers it."""
    if upload.size > MAX_CSV_MB * 2**20:
        size = upload.size / 2**20
        return None, f"{upload.name}: {size:.1f} MB is over the {MAX_CSV_MB} MB limit"
    try:
        frame = read_csv(upload.getvalue(), upload.name, fmt, text_columns(predictor.columns))
    except DataError as e:
        return None, str(e)
    frame = frame.reset_index(drop=True)
    try:
        predictor.table(frame)  # its _file and _line name the lines
        frame = with_times(frame, predictor.columns)  # as the table read them
    except DataError as e:
        return None, upload_reason(upload.name, e)
    return without_position(frame), None


def upload_reason(name: str, e: DataError) -> str:
    """``e`` in the page's words, naming the upload: a reason about a row of the file names
    it already (``e.file``); any other is prefixed with the file's name."""
    text = page_words(str(e))
    return text if e.file == name or text.startswith(name) else f"{name}: {text}"


def lot_windows(predictor: Any, rows: pd.DataFrame, *, stride: int | None = None) -> Any:
    """The windows of one lot's ``rows`` as ``mfgtx score`` cuts them (the bundle's window,
    ``min_rows`` and stride, or ``stride``; the last window ends at the latest row)."""
    return predictor.windows(rows, stride=stride)
