"""Reading and validating sensor tables: CSV or Parquet, wide or long, or a DataFrame.

A :class:`SensorTable` is the validated, wide, sorted form every later step works on: one
row per (lot, time), one float column per sensor (NaN where a reading is missing), targets,
an optional label-availability time, carried key columns, and ``_row``, the row's position in
the input.

Every message about a row names it as the user finds it (:class:`Where`): the line of a CSV
file as a text editor numbers it (header = line 1; a value with a line break inside quotes
takes two lines), the row of a Parquet file or query, or ``row N of the frame`` (its 0-based
position) for a DataFrame. A DataFrame read from files carries its rows' places in the
columns ``_file`` and ``_line`` (:data:`FILE`, :data:`LINE`, as :mod:`mfgtx.jobfile.sources`
adds them); a DataFrame with ``_line`` alone numbers rows of an earlier frame.

Nothing is dropped or filled silently. Bad input raises :class:`~mfgtx.data.DataError`
naming the file, column, lot and line: a column name given twice, a true/false or text value
in a sensor, an empty input. A fix the reader makes itself (sorting rows) or a column it
leaves out (non-numeric columns when sensors are not listed) comes with a
:class:`~mfgtx.data.DataWarning` and is recorded in :attr:`SensorTable.notes`.
"""

from __future__ import annotations

import difflib
import logging
import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict

import numpy as np
import pandas as pd

from mfgtx.data.categories import encode_categories
from mfgtx.data.columns import ColumnMap
from mfgtx.data.errors import DataError, DataWarning
from mfgtx.data.problems import Problems, flag

__all__ = [
    "FILE",
    "LINE",
    "TIME_KIND_WORDS",
    "SensorTable",
    "Where",
    "check_names",
    "pass_fail",
    "read_table",
    "read_times",
]

#: :attr:`SensorTable.time_kind` in words, for messages.
TIME_KIND_WORDS = {
    "utc": "timestamps with a zone offset (e.g. +00:00)",
    "naive": "timestamps without a zone offset",
    "number": "numbers as times (cycles or seconds)",
}

log = logging.getLogger(__name__)

_TZ_SUFFIX = r"\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:Z|UTC|[+-]\d{2}(?::?\d{2})?)$"
#: Largest magnitude of a reading: models compute in float32.
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: The pass/fail words read when a job file names none (its top-level ``labels``).
GOOD_WORDS, BAD_WORDS = ("true", "pass", "yes"), ("false", "fail", "no")
_BOOL_WORDS = {w: 1.0 for w in GOOD_WORDS} | {w: 0.0 for w in BAD_WORDS}
_CSV_SUFFIXES = (".csv", ".csv.gz", ".txt", ".tsv")
_PARQUET_SUFFIXES = (".parquet", ".pq")

#: The column of the file each row came from (a file name, or a SQL table).
FILE = "_file"
#: The column of each row's line in its file (CSV: header = line 1) or row (Parquet, SQL);
#: without :data:`FILE`, the row's 0-based position in the DataFrame it came from.
LINE = "_line"


class Place(TypedDict):
    """Where one input row is: :class:`~mfgtx.data.DataError`'s ``row``, ``file``, ``line``."""

    row: int | None
    file: str | None
    line: int | None


@dataclass(frozen=True, eq=False)
class Where:
    """Names the rows of one input the way the user finds them.

    Attributes:
        source: the input as a whole (a file name, or ``"DataFrame"``).
        lines: ``(R,)`` each input row's line in its file, or its position in the DataFrame
            it came from; ``None``: input row ``i`` is row ``i`` of the frame.
        files: ``(R,)`` index of each input row's file in ``names`` (``-1``: a DataFrame's
            row), or ``None`` when no row came from a file.
        names: the file names ``files`` points at.

    Example:
        >>> w = Where.of(pd.DataFrame({"x": [1, 2], "_file": "a.csv", "_line": [2, 4]}))
        >>> w(1), w.fields(1), Where("DataFrame")(3)
        ('a.csv line 4', {'row': 1, 'file': 'a.csv', 'line': 4}, 'row 3 of the frame')
    """

    source: str
    lines: np.ndarray | None = None
    files: np.ndarray | None = None
    names: tuple[str, ...] = ()

    @classmethod
    def of(cls, frame: pd.DataFrame, source: str = "DataFrame") -> Where:
        """The places of ``frame``'s rows, from its :data:`FILE` and :data:`LINE` columns.

        Raises:
            DataError: ``_line`` holds something other than whole numbers (the column is
                reserved for the places mfgtx's readers add).
        """
        if LINE not in frame.columns:
            return cls(source)
        raw = frame[LINE]
        lines = raw if pd.api.types.is_integer_dtype(raw) else pd.to_numeric(raw, errors="coerce")
        bad = (lines.isna() | (lines != lines.round())).to_numpy()
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{source}: column {LINE!r} holds {raw.iloc[i]!r} at row {i} of the frame; "
                "the name is reserved for the line numbers mfgtx's readers add: rename it",
                column=LINE,
                row=i,
            )
        if FILE not in frame.columns:
            return cls(source, lines.to_numpy(dtype=np.int64))
        codes, uniques = pd.factorize(frame[FILE])  # fast on millions of rows of one file
        names = tuple(str(f) for f in uniques)
        if names:
            source = names[0] if len(names) == 1 else f"{names[0]} and {len(names) - 1} more"
        return cls(source, lines.to_numpy(dtype=np.int64), codes, names)

    @classmethod
    def of_file(cls, name: str, lines: np.ndarray) -> Where:
        """Rows of one file ``name`` at ``lines``."""
        return cls(name, np.asarray(lines, dtype=np.int64), np.zeros(len(lines), np.int64), (name,))

    def fields(self, position: int) -> Place:
        """``row``, ``file`` and ``line`` of input row ``position``
        (:class:`~mfgtx.data.DataError`'s attributes)."""
        if self.lines is None:
            return Place(row=int(position), file=None, line=None)
        line = int(self.lines[position])
        code = -1 if self.files is None else int(self.files[position])
        if code < 0:
            return Place(row=line, file=None, line=None)
        return Place(row=int(position), file=self.names[code], line=line)

    def __call__(self, position: int) -> str:
        """Input row ``position`` in words: ``a.csv line 7``, ``b.parquet row 5`` or ``row 5
        of the frame``."""
        place = self.fields(position)
        if place["file"] is None:
            return f"row {place['row']} of the frame"
        return f"{place['file']} {_unit(place['file'])} {place['line']}"

    def span(self, first: int, last: int) -> str:
        """Input rows ``first`` to ``last`` in words: ``a.csv lines 2 to 41``."""
        a, b = self.fields(first), self.fields(last)
        if a["file"] is None and b["file"] is None:
            return f"rows {a['row']} to {b['row']} of the frame"
        if a["file"] == b["file"]:
            return f"{a['file']} {_unit(a['file'])}s {a['line']} to {b['line']}"
        return f"{self(first)} to {self(last)}"


def _unit(file: str | None) -> str:
    """How a file numbers its rows: ``line`` (text files, as an editor shows them) or
    ``row`` (Parquet files, SQL tables and queries)."""
    return "line" if str(file).lower().endswith(_CSV_SUFFIXES) else "row"


@dataclass(frozen=True, eq=False)
class SensorTable:
    """A validated sensor table (see :func:`read_table`).

    Attributes:
        frame: one row per (lot, time), sorted by lot (in order of first appearance) and time,
            with the lot column as ``str``, the time column as UTC datetimes (naive if the
            input had no zone) or numbers (cycles), float sensors, targets, key columns, the
            label time if mapped, and ``_row``, the input position of the row.
        columns: the column mapping, with ``sensors`` resolved to the actual list.
        source: where the data came from (file name or ``"DataFrame"``).
        notes: what the reader changed or left out, in words.
        categories: ``{column: {code: name}}`` of the category columns
            (:attr:`~mfgtx.data.ColumnMap.categories`), whose cells hold the codes.
    """

    frame: pd.DataFrame
    columns: ColumnMap
    source: str
    notes: tuple[str, ...] = ()
    places: Where | None = None
    categories: Mapping[str, Mapping[float, str]] = field(default_factory=dict)

    @property
    def sensors(self) -> tuple[str, ...]:
        return self.columns.sensors or ()

    @property
    def lots(self) -> list[str]:
        return list(pd.unique(self.frame[self.columns.lot]))

    @property
    def numeric_time(self) -> bool:
        """True when time is a number (cycles, seconds) rather than a timestamp."""
        return not pd.api.types.is_datetime64_any_dtype(self.frame[self.columns.time])

    @property
    def time_kind(self) -> str:
        """``"utc"`` (timestamps with a zone, held in UTC), ``"naive"`` (timestamps without
        one) or ``"number"`` (cycles, seconds): what a model trained on this table expects."""
        if self.numeric_time:
            return "number"
        return "naive" if self.frame[self.columns.time].dt.tz is None else "utc"

    def where(self, position: int) -> str:
        """How to find input row ``position`` (the ``_row`` value) in the source."""
        return (self.places or Where(self.source))(position)

    def lot_bounds(self) -> dict[str, tuple[int, int]]:
        """``{lot: (first_row, stop_row)}`` in :attr:`frame` (lots are contiguous)."""
        lots = self.frame[self.columns.lot].to_numpy()
        change = np.flatnonzero(lots[1:] != lots[:-1]) + 1
        starts = np.concatenate([[0], change])
        stops = np.concatenate([change, [len(lots)]])
        return {str(lots[a]): (int(a), int(b)) for a, b in zip(starts, stops, strict=True)}

    def unread_sensors(self) -> dict[str, tuple[str, ...]]:
        """``{lot: sensors}``: the sensors without a single reading in a lot (every value
        missing), for the lots that have such sensors.

        Example:
            >>> df = pd.DataFrame({"lot": ["A", "A", "B"], "t": [1, 2, 1],
            ...                    "x": [1.0, 2.0, None], "y": [None, None, 3.0]})
            >>> read_table(df, ColumnMap("lot", "t")).unread_sensors()
            {'A': ('y',), 'B': ('x',)}
        """
        sensors = list(self.sensors)
        seen = self.frame[sensors].notna().groupby(self.frame[self.columns.lot], sort=False).any()
        return {
            str(lot): tuple(s for s, ok in zip(sensors, row, strict=True) if not ok)
            for lot, row in zip(seen.index, seen.to_numpy(), strict=True)
            if not row.all()
        }


# --------------------------------------------------------------------------- loading


def _letters(position: int) -> str:
    """A 0-based column position as a spreadsheet names it (0 -> A, 27 -> AB)."""
    out, n = "", position + 1
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(ord("A") + r) + out
    return out


def check_names(
    names: list[object],
    source: str,
    *,
    header_line: bool = False,
    columns: ColumnMap | None = None,
) -> None:
    """Refuse a column name given twice: pandas reads only the first of two columns of one
    name (or renames the second), so the other would be scored silently.

    Args:
        names: the column names in order (a frame's columns, or a file's header as written).
        source: the input in words (a file name, or ``"DataFrame"``).
        header_line: ``names`` is a file's header line (positions counted from 1, with the
            spreadsheet column letters), not a DataFrame's columns (counted from 0).
        columns: the mapping the names will be read with: a column it reads (``X``) beside
            ``X.1`` is refused too, as a header that names ``X`` twice after pandas renamed
            the second (unless ``X.1`` is mapped itself).

    Raises:
        DataError: naming the column and both positions.

    Example:
        >>> try:
        ...     check_names(["lot", "t", "x", "t"], "DataFrame")
        ... except DataError as e:
        ...     print(str(e)[:60])
        DataFrame: column 't' appears twice, at positions 1 and 3 of
    """
    seen: dict[str, int] = {}
    for j, name in enumerate(str(n) for n in names):
        i = seen.setdefault(name, j)
        if i == j:
            continue
        if header_line:
            where = (
                f"{source} line 1: column {name!r} appears twice in the header, as fields "
                f"{i + 1} and {j + 1} (spreadsheet columns {_letters(i)} and {_letters(j)})"
            )
        else:
            where = (
                f"{source}: column {name!r} appears twice, at positions {i} and {j} of the "
                "frame's columns (counting from 0)"
            )
        raise DataError(
            f"{where}; rename or drop one of them",
            column=name,
            file=source if header_line else None,
            line=1 if header_line else None,
        )
    if columns is not None:
        _check_renamed([str(n) for n in names], columns, source)


def _check_renamed(names: list[str], columns: ColumnMap, source: str) -> None:
    """Refuse ``X`` beside ``X.1`` when the table reads ``X``: a header that names ``X``
    twice, read by pandas, which renames the second silently."""
    mapped = {*columns.non_sensor_columns, *(columns.sensors or ()), *columns.categories}
    if columns.layout == "long":
        mapped |= {columns.sensor_name, columns.value}
    every = columns.sensors is None and columns.layout == "wide"
    for j, name in enumerate(names):
        m = re.fullmatch(r"(.+)\.(\d+)", name)
        if m is None or name in mapped or m.group(1) not in names:
            continue
        first = m.group(1)
        if not (every or first in mapped):
            continue
        i = names.index(first)
        raise DataError(
            f"{source}: columns {first!r} and {name!r} (positions {i} and {j}, counting "
            f"from 0) look like a header that names {first!r} twice, the second renamed by "
            f"the reader (pandas does so silently); the model would read only one of them. "
            f"Rename or drop one in the export, or list {name!r} in data.columns if it is a "
            "reading of its own",
            column=first,
        )


def _csv_lines(df: pd.DataFrame) -> np.ndarray:
    """The line each record of a CSV file read as text begins on (header = line 1): a value
    with a line break inside quotes takes a line more, so records are not lines."""
    header = 1 + sum(str(c).count("\n") for c in df.columns)
    breaks = np.zeros(len(df), dtype=np.int64)
    for c in df.columns:
        text = df[c].astype("string")
        breaks += text.str.count("\n").fillna(0).to_numpy(dtype=np.int64)
    before = np.concatenate([[0], np.cumsum(breaks)[:-1]]).astype(np.int64)
    return header + 1 + np.arange(len(df), dtype=np.int64) + before[: len(df)]


def _load(source: str | Path | pd.DataFrame) -> tuple[pd.DataFrame, Where]:
    if isinstance(source, pd.DataFrame):
        check_names(list(source.columns), "DataFrame")
        where = Where.of(source)
        df = source.drop(columns=[c for c in (FILE, LINE) if c in source.columns])
        return df.reset_index(drop=True).copy(), where
    if not isinstance(source, str | Path):
        raise TypeError(
            f"read_table reads a file path or a DataFrame, found {type(source).__name__}"
        )
    path = Path(source)
    name = path.name.lower()
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    if name.endswith(_CSV_SUFFIXES):
        return _load_csv(path, "\t" if name.endswith(".tsv") else ",")
    if name.endswith(_PARQUET_SUFFIXES):
        try:
            import pyarrow.parquet as pq

            file = pq.ParquetFile(path)
            check_names(list(file.schema_arrow.names), path.name)
            df = file.read().to_pandas()
        except DataError:
            raise
        except Exception as err:  # pyarrow raises several types for corrupt files
            raise DataError(f"cannot read {path.name} as Parquet: {err}", file=path.name) from err
        check_names(list(df.columns), path.name)  # a pandas index stored as a column
        df = df.reset_index(drop=True)
        rows = np.arange(len(df), dtype=np.int64)  # numbered from 0, as the job readers do
        return df, Where.of_file(path.name, rows)
    raise DataError(
        f"{path.name}: unknown file type; expected one of "
        f"{', '.join(_CSV_SUFFIXES + _PARQUET_SUFFIXES)}"
    )


def _load_csv(path: Path, sep: str) -> tuple[pd.DataFrame, Where]:
    """A CSV file as text, its header checked as written (pandas renames a name given
    twice) and every record's line; blank lines are counted, then dropped."""
    try:  # everything as text: numbers and times are parsed here, with line numbers
        header = pd.read_csv(path, sep=sep, header=None, nrows=1, dtype=str)
        df = pd.read_csv(
            path, sep=sep, dtype=str, keep_default_na=False, na_values=[""],
            skip_blank_lines=False,
        )  # fmt: skip
    except pd.errors.EmptyDataError as err:
        raise DataError(f"{path.name} is empty: no header line", file=path.name) from err
    except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as err:
        raise DataError(f"cannot read {path.name} as CSV: {err}", file=path.name) from err
    check_names(header.iloc[0].tolist() if len(header) else [], path.name, header_line=True)
    lines = _csv_lines(df)
    kept = df.notna().any(axis=1).to_numpy()  # an empty record is a blank line
    df = df[kept].reset_index(drop=True)
    return df, Where.of_file(path.name, lines[kept])


#: What each mapped column is, in the words of a job file's ``data.columns``.
_ROLE_WORDS = {
    "lot": "the lot column, data.columns.lot",
    "time": "the time column, data.columns.time",
    "label_time": "the label-time column, data.columns.label_time",
    "targets": "a target, data.columns.targets",
    "keys": "a key column, data.columns.keys",
    "sensor_name": "the sensor-name column, data.columns.sensor_name",
    "value": "the value column, data.columns.value",
    "sensors": "a sensor, data.columns.sensors",
    "categories": "the regime column, data.regimes.column",
}


def _require(df: pd.DataFrame, columns: ColumnMap, where: Where) -> None:
    needed: list[tuple[str, str]] = [("lot", columns.lot), ("time", columns.time)]
    if columns.label_time is not None:
        needed.append(("label_time", columns.label_time))
    needed += [("targets", t) for t in columns.targets] + [("keys", k) for k in columns.keys]
    if columns.layout == "long":
        needed += [("sensor_name", columns.sensor_name), ("value", columns.value)]
    else:
        needed += [("sensors", s) for s in columns.sensors or ()]
        listed = columns.sensors or ()
        needed += [("categories", c) for c in columns.categories if c not in listed]
    missing = [(role, name) for role, name in needed if name not in df.columns]
    if missing:
        found = [str(c) for c in df.columns]
        unclaimed = [c for c in found if c not in {n for _, n in needed}]

        def one(role: str, name: str) -> str:
            close = difflib.get_close_matches(name, unclaimed, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"{name!r} ({_ROLE_WORDS[role]}{hint})"

        said = ", ".join(one(role, name) for role, name in missing)
        raise DataError(
            f"{where.source}: missing column(s) {said}; found columns {found}",
            column=missing[0][1],
            file=where.names[0] if len(where.names) == 1 else None,
            problem="missing column",
            found=", ".join(found),
            expected=", ".join(name for _, name in missing),
        )


# --------------------------------------------------------------------------- parsing


def _first(mask: np.ndarray | pd.Series) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def _parse_lots(
    s: pd.Series, column: str, where: Where, problems: Problems | None = None
) -> tuple[pd.Series, np.ndarray]:
    """The lot ids as text, and the rows without one (listed in ``problems``, or raised)."""
    missing = s.isna().to_numpy() | (s.astype(str).str.strip() == "").to_numpy()
    flag(missing, None, problems, lambda i, n: DataError(
        f"{where(i)}: no lot id in column {column!r} ({n} such rows); every reading must "
        "belong to a lot",
        column=column, problem="no lot id", found=s.iloc[i], expected="a lot id",
        **where.fields(i),
    ))  # fmt: skip
    return s.astype(str).str.strip(), missing


def _text_times(
    text: pd.Series, utc: bool, column: str, where: Where, lots: pd.Series
) -> pd.Series:
    """Text times that are not all ISO 8601: one format inferred for the whole column, read
    day first and month first; a column that reads both ways with different times is
    refused (``01.02.2026`` is 1 February in Europe, 2 January in the US)."""

    def read(dayfirst: bool) -> pd.Series:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return pd.to_datetime(text, utc=utc, dayfirst=dayfirst, errors="coerce")

    month_first = read(False)
    if text.str.match(r"\s*\d{4}(?:\D|\d{4})", na=False).all():
        return month_first  # year first (2026/03/02): nobody writes the day before the month
    day_first = read(True)
    if month_first.notna().all() and day_first.notna().all():
        differ = (month_first != day_first).to_numpy()
        if differ.any():
            i = _first(differ)
            raise DataError(
                f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {text.iloc[i]!r}, "
                f"which reads as {day_first.iloc[i]:%d %B %Y} (day first) or "
                f"{month_first.iloc[i]:%d %B %Y} "
                "(month first); say which with data.columns.time_format, such as "
                "'%d.%m.%Y %H:%M'",
                column=column,
                problem="day or month first?",
                found=text.iloc[i],
                expected="data.columns.time_format",
                **where.fields(i),
            )
        return month_first
    return day_first if day_first.isna().sum() < month_first.isna().sum() else month_first


def _in_zone(
    out: pd.Series, raw: pd.Series, time_zone: str, column: str, where: Where, lots: pd.Series
) -> pd.Series:
    """Naive times read as the clock of ``time_zone`` and kept in UTC; a time that clock
    skips or shows twice (a daylight-saving change) is refused, naming its row."""
    local = out.dt.tz_localize(time_zone, ambiguous="NaT", nonexistent="NaT")
    bad = (local.isna() & out.notna()).to_numpy()
    if bad.any():
        i = _first(bad)
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): time {raw.iloc[i]!r} in column {column!r} is "
            f"skipped or shown twice by the clock of {time_zone} (a daylight-saving change; "
            f"{int(bad.sum())} such rows), so it names no one moment; export the times with "
            "an offset (+01:00) or in UTC",
            column=column,
            lot=str(lots.iloc[i]),
            **where.fields(i),
        )
    return local.dt.tz_convert("UTC")


def _parse_times(
    s: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    time_format: str | None = None,
    problems: Problems | None = None,
    time_zone: str | None = None,
) -> pd.Series:
    """Timestamps -> UTC (or naive) datetimes; numbers (cycles) stay numbers. With
    ``problems``, a bad time is listed there (the first of each lot) and left missing; with
    ``time_zone`` naive times are that clock's, kept in UTC."""
    flagged = np.zeros(len(s), dtype=bool)  # rows listed already (collecting)

    def mark(bad: np.ndarray, error: Callable[[int, int], DataError]) -> None:
        bad = np.asarray(bad, dtype=bool) & ~flagged
        flag(bad, lots, problems, error)
        flagged[bad] = True

    if pd.api.types.is_datetime64_any_dtype(s):
        out = s.dt.tz_convert("UTC") if s.dt.tz is not None else s
        if time_zone is not None and out.dt.tz is None:
            out = _in_zone(out, s, time_zone, column, where, lots)
    elif pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        out = s.astype(float)
        mark(np.isinf(out.to_numpy()), lambda i, n: DataError(
            f"{where(i)}: infinite time in column {column!r}", column=column,
            lot=None if problems is None else str(lots.iloc[i]), problem="bad time",
            found=s.iloc[i], expected="a finite time", **where.fields(i),
        ))  # fmt: skip
    else:
        text = s.astype("string").str.strip()
        missing = (text.isna() | (text == "")).to_numpy()
        mark(missing, lambda i, n: DataError(
            f"{where(i)} (lot {lots.iloc[i]}): no time in column {column!r} ({n} such rows)",
            column=column, lot=str(lots.iloc[i]), problem="no time", found="",
            expected="a time", **where.fields(i),
        ))  # fmt: skip
        as_number = pd.to_numeric(text, errors="coerce")
        if (as_number.notna() | flagged).all() and time_format is None:
            return _check_finite_time(as_number.astype(float), column, where, lots,
                                      problems, flagged)  # fmt: skip
        aware = text.str.contains(_TZ_SUFFIX, regex=True).fillna(False).to_numpy(dtype=bool)
        if aware.any() and not (aware | flagged).all():
            i, j = _first(aware), _first(~aware & ~flagged)
            raise DataError(
                f"mixed time zones in column {column!r}: {where(i)} has a zone "
                f"({text.iloc[i]!r}), {where(j)} has none ({text.iloc[j]!r}); export all "
                "times with an offset (e.g. +00:00) or all without",
                column=column,
                problem="time zones mixed",
                found=text.iloc[j],
                expected="a zone offset on every time, or on none",
                **where.fields(j),
            )
        utc = bool(aware.any())
        if time_format is not None:
            out = pd.to_datetime(text, utc=utc, format=time_format, errors="coerce")
            expected = f"the format {time_format!r} of data.columns.time_format"
        else:
            out = pd.to_datetime(text, utc=utc, format="ISO8601", errors="coerce")
            expected = "ISO 8601 such as 2026-03-02T06:00:00+00:00"
            if out.isna().any():  # not ISO 8601: one format inferred for the whole column
                # rows listed already read as a good one, so that positions stay rows
                good = text[~flagged]
                filled = text if not flagged.any() else text.where(~flagged, good.iloc[0])
                inferred = _text_times(filled, utc, column, where, lots)
                if inferred.isna().sum() < out.isna().sum():
                    out = inferred.where(~flagged)
        mark(out.isna().to_numpy(), lambda i, n: DataError(
            f"{where(i)} (lot {lots.iloc[i]}): cannot parse {text.iloc[i]!r} in column "
            f"{column!r} as a time ({n} such rows); expected {expected}",
            column=column, lot=str(lots.iloc[i]), problem="bad time", found=text.iloc[i],
            expected=expected, **where.fields(i),
        ))  # fmt: skip
        if time_zone is not None and not utc:
            out = _in_zone(out, s, time_zone, column, where, lots)
    if pd.api.types.is_datetime64_any_dtype(out):
        _check_time_range(out, s, column, where, lots, problems, flagged)
        out = out.astype("datetime64[ns, UTC]" if out.dt.tz is not None else "datetime64[ns]")
        mark(out.isna().to_numpy(), lambda i, n: DataError(
            f"{where(i)}: no time in column {column!r}", column=column,
            lot=None if problems is None else str(lots.iloc[i]), problem="no time",
            found="", expected="a time", **where.fields(i),
        ))  # fmt: skip
        return out
    return _check_finite_time(out, column, where, lots, problems, flagged)


#: Times outside these years are refused: a clock error, not a reading (and beyond 2262
#: they do not fit the nanosecond times every later step uses).
TIME_RANGE = ("1900-01-01", "2200-01-01")


def _check_time_range(
    out: pd.Series,
    raw: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    problems: Problems | None = None,
    flagged: np.ndarray | None = None,
) -> None:
    """Times outside :data:`TIME_RANGE` are refused (with ``problems``: listed, and left
    missing in ``out``; ``flagged``: the rows listed already, updated)."""
    lo, hi = (pd.Timestamp(t, tz="UTC" if out.dt.tz is not None else None) for t in TIME_RANGE)
    bad = (out.notna() & ((out < lo) | (out >= hi))).to_numpy()
    if flagged is not None:
        bad = bad & ~flagged
    flag(bad, lots, problems, lambda i, n: DataError(
        f"{where(i)} (lot {lots.iloc[i]}): time {raw.iloc[i]!r} in column {column!r} is "
        f"outside the years {TIME_RANGE[0][:4]}-{int(TIME_RANGE[1][:4]) - 1} ({n} such "
        "rows); check the export's clock",
        column=column, lot=str(lots.iloc[i]), problem="bad time", found=raw.iloc[i],
        expected=f"a time in {TIME_RANGE[0][:4]}-{int(TIME_RANGE[1][:4]) - 1}",
        **where.fields(i),
    ))  # fmt: skip
    if bad.any() and flagged is not None:
        flagged[bad] = True
        out.iloc[np.flatnonzero(bad)] = pd.NaT  # a listed lot, left out


def _check_finite_time(
    out: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    problems: Problems | None = None,
    flagged: np.ndarray | None = None,
) -> pd.Series:
    bad = ~np.isfinite(out.to_numpy(dtype=float))
    if flagged is not None:
        bad = bad & ~flagged
    flag(bad, lots, problems, lambda i, n: DataError(
        f"{where(i)} (lot {lots.iloc[i]}): no finite time in column {column!r}",
        column=column, lot=None if problems is None else str(lots.iloc[i]),
        problem="bad time", found=out.iloc[i], expected="a finite time", **where.fields(i),
    ))  # fmt: skip
    return out


def _to_float(
    s: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    *,
    words: bool | Mapping[str, float] = False,
    expected: str | None = None,
    problems: Problems | None = None,
) -> pd.Series:
    """Numbers -> float64; NaN stays NaN; anything else or inf raises, naming the line (with
    ``problems``: is listed there, the first of each lot, and left missing).

    Real numbers are read whatever the format stored them as (text, int, float, nullable).
    True/false values are numbers only with ``words`` (a pass/fail target: ``True``,
    ``pass``, ``yes`` is 1): in a sensor they are refused from every format, a boolean
    column of a Parquet file or DataFrame as the text ``True`` of a CSV file."""
    kind = getattr(s.dtype, "kind", "O")
    if expected is None:
        expected = "a number" if not words else "a number or pass/fail, yes/no, true/false"
    mapping = _BOOL_WORDS if words is True else words or {}
    problem = "not a number" if not words else "label not understood"
    if kind == "b" and words:
        out = pd.Series(s.astype("Float64").to_numpy(dtype=float, na_value=np.nan), s.index)
    elif kind in "iuf":
        out = s.astype(float)
    elif kind in "bc":  # a boolean or complex column: no reading a model can take
        what = "a true/false value" if kind == "b" else "a complex number"
        bad = s.notna().to_numpy()
        i = _first(bad) if bad.any() else 0
        value = _shown(s.iloc[i])
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {value!r}, {what}, "
            f"expected a number ({int(bad.sum())} such values: the column is stored as "
            f"{s.dtype}); export the reading itself",
            column=column,
            lot=str(lots.iloc[i]),
            problem=problem,
            found=value,
            expected=expected,
            **where.fields(i),
        )
    else:
        text = s.astype("string").str.strip()
        if words:
            text = text.str.lower().replace(dict(mapping)).astype("string")
        out = pd.to_numeric(text, errors="coerce").astype(float)
        bad = (out.isna() & text.notna() & (text.str.lower() != "nan")).to_numpy()

        def not_a_number(i: int, n: int) -> DataError:
            value = _shown(s.iloc[i])
            hint = ", a true/false value" if isinstance(value, bool | np.bool_) else ""
            return DataError(
                f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {value!r}{hint}, "
                f"expected {expected} ({n} such values){_comma_hint(value)}",
                column=column, lot=str(lots.iloc[i]), problem=problem, found=value,
                expected=expected, **where.fields(i),
            )  # fmt: skip

        flag(bad, lots, problems, not_a_number)
    values = out.to_numpy()
    inf = np.isinf(values)
    flag(inf, lots, problems, lambda i, n: DataError(
        f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {out.iloc[i]}, expected "
        f"a finite number or empty for missing ({n} such values)",
        column=column, lot=str(lots.iloc[i]), problem=problem, found=out.iloc[i],
        expected="a finite number", **where.fields(i),
    ))  # fmt: skip
    huge = (np.abs(values) > FLOAT32_MAX).astype(bool) & ~inf
    flag(huge, lots, problems, lambda i, n: DataError(
        f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {_shown(s.iloc[i])!r}, "
        f"beyond the +/-{FLOAT32_MAX:.1e} a model can read ({n} such values); check the "
        "export's units",
        column=column, lot=str(lots.iloc[i]), problem="number too large",
        found=_shown(s.iloc[i]), expected=f"a number within +/-{FLOAT32_MAX:.1e}",
        **where.fields(i),
    ))  # fmt: skip
    if inf.any() or huge.any():  # listed (collecting): left missing, its lot left out
        out = out.where(~(inf | huge))
    return out


def pass_fail(
    s: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    problems: Problems | None = None,
    *,
    good: Sequence[str] = GOOD_WORDS,
    bad: Sequence[str] = BAD_WORDS,
) -> pd.Series:
    """A pass/fail column as 1 (a ``good`` word, or 1) and 0 (a ``bad`` word, or 0), words
    compared trimmed and without regard to case (missing stays NaN). A value not understood
    raises, naming its line and lot, the accepted words and the job-file key ``labels`` that
    takes more; with ``problems`` it is listed there (the first of each lot) and left missing.

    >>> pass_fail(pd.Series(["pass", "FAIL", None]), "ok", Where("DataFrame"),
    ...           pd.Series(["A", "B", "C"])).tolist()
    [1.0, 0.0, nan]
    >>> pass_fail(pd.Series([" I.O. ", "n.i.O.", "1"]), "Ergebnis", Where("DataFrame"),
    ...           pd.Series(["A", "B", "C"]), good=["i.O."], bad=["n.i.O."]).tolist()
    [1.0, 0.0, 1.0]
    """
    words = {w.strip().lower(): 1.0 for w in good} | {w.strip().lower(): 0.0 for w in bad}
    expected = (
        f"a pass/fail word: good {list(good)}, bad {list(bad)} (any case), or 1/0; add the "
        "plant's words to the job file's top-level key labels, such as labels: {good: [i.O.], "
        "bad: [n.i.O.]}"
    )
    out = _to_float(s, column, where, lots, words=words, expected=expected, problems=problems)
    odd = (out.notna() & ~out.isin([0.0, 1.0])).to_numpy()
    flag(odd, lots, problems, lambda i, n: DataError(
        f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {_shown(s.iloc[i])!r}, "
        f"expected {expected} ({n} such values)",
        column=column, lot=str(lots.iloc[i]), problem="label not understood",
        found=_shown(s.iloc[i]), expected=expected, **where.fields(i),
    ))  # fmt: skip
    return out.where(~odd) if odd.any() else out


#: A number written with one decimal comma (``-1,25``, ``,5``, ``3,0e-2``), as European
#: exports write them.
COMMA_NUMBER = r"\s*[+-]?(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?\s*"


def _shown(value: object) -> object:
    """A cell as a person reads it: ``True``, not numpy's ``np.True_``."""
    return value.item() if isinstance(value, np.generic) else value


def _comma_hint(value: object) -> str:
    """A pointer to the job file's ``source.decimal`` when ``value`` is a number written with
    a decimal comma (``'1,25'``), else ``''``."""
    if isinstance(value, str) and re.fullmatch(COMMA_NUMBER, value):
        return "; it looks like a decimal comma: a job file reads it with source.decimal: ','"
    return ""


def _to_codes(s: pd.Series, column: str, where: Where) -> tuple[pd.Series, dict[float, str]]:
    """A category column as its codes (:mod:`mfgtx.data.categories`) and their names."""
    try:
        codes, names = encode_categories(s, column=column, where=f"{where.source}: ")
    except ValueError as e:
        raise DataError(str(e), column=column) from e
    return pd.Series(codes, index=s.index), names


def _numeric_columns(
    df: pd.DataFrame, candidates: list[str], where: Where
) -> tuple[list[str], list[str]]:
    """Split candidate sensor columns into numeric ones and descriptions of the others."""
    numeric, left_out = [], []
    for c in candidates:
        s = df[c]
        if getattr(s.dtype, "kind", "O") in "iuf":  # real numbers (not bool, not complex)
            numeric.append(c)
            continue
        text = s.astype("string").str.strip()
        parsed = pd.to_numeric(text, errors="coerce")
        bad = (parsed.isna() & text.notna()).to_numpy()
        if not bad.any() and text.notna().any():
            numeric.append(c)
        else:
            i = _first(bad) if bad.any() else 0
            value = _shown(s.iloc[i])
            left_out.append(f"{c!r} (e.g. {value!r} at {where(i)}{_comma_hint(value)})")
    return numeric, left_out


# --------------------------------------------------------------------------- layout


def _pivot_long(df: pd.DataFrame, columns: ColumnMap, where: Where) -> pd.DataFrame:
    lot, time, name = columns.lot, columns.time, columns.sensor_name
    no_name = (df[name].isna() | (df[name].astype(str).str.strip() == "")).to_numpy()
    if no_name.any():
        i = _first(no_name)
        row = int(df["_row"].iloc[i])
        raise DataError(
            f"{where(row)}: no sensor name in column {name!r}", column=name, **where.fields(row)
        )
    df[name] = df[name].astype(str).str.strip()
    if columns.sensors is not None:
        found = set(df[name])
        missing = [s for s in columns.sensors if s not in found]
        if missing:
            raise DataError(
                f"{where.source}: sensor(s) {missing} not found in column {name!r}; found "
                f"{sorted(found)}",
                column=name,
            )
        df = df[df[name].isin(columns.sensors)]
    dup = df.duplicated([lot, time, name], keep=False).to_numpy()
    if dup.any():
        rows = df["_row"].to_numpy()[dup][:2]
        i = _first(dup)
        raise DataError(
            f"lot {df[lot].iloc[i]}: sensor {df[name].iloc[i]!r} has two readings at "
            f"{df[time].iloc[i]} ({where(int(rows[0]))} and {where(int(rows[1]))})",
            column=name,
            lot=str(df[lot].iloc[i]),
            **where.fields(int(rows[0])),
        )
    per_row = [c for c in columns.non_sensor_columns if c not in (lot, time)]
    wide = df.pivot(index=[lot, time], columns=name, values=columns.value)
    wide.columns = [str(c) for c in wide.columns]
    grouped = df.groupby([lot, time], sort=False)
    extra = grouped[[*per_row, "_row"]].first() if per_row else grouped[["_row"]].first()
    for c in per_row:  # a per-row value must agree across the readings of one time step
        conflict = grouped[c].nunique(dropna=False) > 1
        if conflict.any():
            key = conflict[conflict].index[0]
            at = np.flatnonzero(((df[lot] == key[0]) & (df[time] == key[1])).to_numpy())
            rows = df["_row"].to_numpy()[at]
            raise DataError(
                f"lot {key[0]} at {key[1]}: column {c!r} has different values across the "
                f"sensor readings of one time step ({', '.join(where(int(r)) for r in rows[:3])}"
                f"{' ...' if len(rows) > 3 else ''})",
                column=c,
                lot=str(key[0]),
                **where.fields(int(rows[0])),
            )
    out = extra.join(wide).reset_index()
    return out.sort_values("_row", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- the reader


def _without_listed(
    df: pd.DataFrame,
    columns: ColumnMap,
    problems: Problems | None,
    no_lot: np.ndarray | None = None,
) -> pd.DataFrame:
    """``df`` without the lots ``problems`` lists (and, with ``no_lot``, the rows without a
    lot id): what the collecting mode leaves out. Rows keep ``_row``, their input row."""
    if problems is None:
        return df
    drop = df[columns.lot].isin(problems.lots).to_numpy()
    if no_lot is not None:
        drop = drop | no_lot
        problems.rows_without_lot += int(no_lot.sum())
    return df[~drop].reset_index(drop=True) if drop.any() else df


def read_times(frame: pd.DataFrame, columns: ColumnMap) -> pd.Series:
    """The time column of ``frame`` read as :func:`read_table` reads it (``time_format``,
    ``time_zone``; without a format a column that reads both day first and month first is
    refused naming both readings), for whoever shows the rows themselves (the dashboard).

    Example:
        >>> df = pd.DataFrame({"lot": ["A", "A"], "t": ["13.03.2026 06:00", "14.03.2026 06:00"]})
        >>> read_times(df, ColumnMap(lot="lot", time="t")).dt.day.tolist()
        [13, 14]

    Raises:
        DataError: a time that cannot be read, naming its row, lot and column.
    """
    where = Where.of(frame)
    if columns.time not in frame.columns:
        raise DataError(
            f"{where.source}: missing time column {columns.time!r}", column=columns.time
        )
    lots = (
        frame[columns.lot].astype(str)
        if columns.lot in frame.columns
        else pd.Series("?", index=frame.index)
    )
    return _parse_times(
        frame[columns.time].reset_index(drop=True),
        columns.time,
        where,
        lots.reset_index(drop=True),
        columns.time_format,
        time_zone=columns.time_zone,
    ).set_axis(frame.index)


def read_table(
    source: str | Path | pd.DataFrame, columns: ColumnMap, *, problems: Problems | None = None
) -> SensorTable:
    """Read and validate a sensor table.

    Args:
        source: a CSV (``.csv``, ``.csv.gz``, ``.tsv``, ``.txt``) or Parquet file, or a
            DataFrame.
        columns: the :class:`~mfgtx.data.ColumnMap` saying which column means what.
        problems: the collecting mode (:class:`Problems`): a problem of one lot (a bad
            value or time, no lot id, two rows at one time, a label known too early, a key
            that changes, no sensor value) is listed there, per column the first of each
            lot, and the lot left out; the table holds the other lots (maybe none).

    Returns:
        A :class:`SensorTable`, wide, sorted by lot and time.

    Raises:
        DataError: missing columns; a row without lot or time; unparseable times, or times
            with and without a zone mixed; non-numeric or infinite sensor or target values;
            two rows of one lot at the same time; a label known before its row was measured;
            a key column that changes within a lot; a lot with no observed sensor value.

    Example:
        >>> df = pd.DataFrame({"lot": ["A", "A", "B"],
        ...                    "timestamp": ["2026-03-02T06:01:00Z", "2026-03-02T06:00:00Z",
        ...                                  "2026-03-02T07:00:00Z"],
        ...                    "temp": [20.5, None, 21.0]})
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     t = read_table(df, ColumnMap(lot="lot", time="timestamp"))
        >>> t.sensors, t.frame["temp"].tolist(), str(caught[0].message)[:36]
        (('temp',), [nan, 20.5, 21.0], 'DataFrame rows were not in time orde')
    """
    df, where = _load(source)
    if not len(df):
        what = "an empty frame" if isinstance(source, pd.DataFrame) else "a header only, or empty"
        raise DataError(f"{where.source}: no rows to read ({what})")
    _require(df, columns, where)
    check_names(list(df.columns), where.source, columns=columns)
    df["_row"] = np.arange(len(df))
    notes: list[str] = []
    categories: dict[str, dict[float, str]] = {}
    p = problems
    written = df[columns.time].copy() if p is not None else None  # as the input wrote them

    lots, no_lot = _parse_lots(df[columns.lot], columns.lot, where, p)
    df[columns.lot] = lots
    fmt, zone = columns.time_format, columns.time_zone
    df[columns.time] = _parse_times(df[columns.time], columns.time, where, lots, fmt, p, zone)
    if columns.label_time is not None:
        df[columns.label_time] = _parse_times(
            df[columns.label_time], columns.label_time, where, lots, fmt, p, zone
        )

    for c in columns.targets:  # before any reshaping, so that positions are input rows
        df[c] = _to_float(df[c], c, where, lots, words=True, problems=p)
    if columns.layout == "long":
        df[columns.value] = _to_float(df[columns.value], columns.value, where, lots, problems=p)
        df = _without_listed(df, columns, p, no_lot)
        df = _pivot_long(df, columns, where)
        mapped = {*columns.non_sensor_columns, "_row"}
        sensors = list(columns.sensors or sorted(c for c in df.columns if c not in mapped))
    else:
        named = {*columns.categories}
        if columns.sensors is not None:
            sensors = list(columns.sensors)
        else:
            mapped = {*columns.non_sensor_columns, *named, "_row"}
            candidates = [c for c in df.columns if c not in mapped]
            sensors, left_out = _numeric_columns(df, candidates, where)
            sensors += list(columns.categories)
            if left_out:
                note = (
                    f"{where.source}: non-numeric column(s) left out of the sensors: "
                    f"{', '.join(left_out)}; list the sensors (data.columns.sensors in a job "
                    "file) to choose them yourself"
                )
                notes.append(note)
                warnings.warn(note, DataWarning, stacklevel=2)
            if not sensors:
                raise DataError(f"{where.source}: no numeric sensor column found")
        for c in sensors:
            if c in named:
                df[c], categories[c] = _to_codes(df[c], c, where)
            else:
                df[c] = _to_float(df[c], c, where, lots, problems=p)
        df = _without_listed(df, columns, p, no_lot)

    lots = df[columns.lot]
    rows = df["_row"].to_numpy()

    def where_pos(i: int) -> str:  # position in df -> input row
        return where(int(rows[i]))

    def place(i: int) -> Place:
        return where.fields(int(rows[i]))

    def time_at(i: int) -> object:  # position in df -> its time as written (collecting)
        return df[columns.time].iloc[i] if written is None else written.iloc[int(rows[i])]

    # rows in order: lots contiguous (in order of first appearance), time increasing
    codes, _ = pd.factorize(lots)
    time_values = df[columns.time].to_numpy()
    out_of_order = (codes[1:] < codes[:-1]) | (
        (codes[1:] == codes[:-1]) & (time_values[1:] < time_values[:-1])
    )
    if p is not None:  # each lot whose time goes back: a note (the rows are sorted)
        back = (codes[1:] == codes[:-1]) & (time_values[1:] < time_values[:-1])
        flag(back, lots.iloc[1:], p, lambda i, n: DataError(
            f"{where_pos(i + 1)} (lot {lots.iloc[i + 1]}): time {time_at(i + 1)!r} in column "
            f"{columns.time!r} comes after {time_at(i)!r} ({n} such rows in the lot); the "
            "rows are sorted by time",
            column=columns.time, lot=str(lots.iloc[i + 1]), problem="time goes back",
            found=time_at(i + 1), expected=f"a time after {time_at(i)}", **place(i + 1),
        ), note=True)  # fmt: skip
    if out_of_order.any():
        order = np.lexsort((time_values, codes))
        i = _first(out_of_order) + 1
        note = (
            f"{where.source} rows were not in time order within lots (first out of order: "
            f"{where_pos(i)}, lot {lots.iloc[i]}); sorted them by lot and time"
        )
        notes.append(note)
        warnings.warn(note, DataWarning, stacklevel=2)
        df = df.iloc[order].reset_index(drop=True)
        lots = df[columns.lot]
        rows = df["_row"].to_numpy()

    same = (lots.to_numpy()[1:] == lots.to_numpy()[:-1]) & (
        df[columns.time].to_numpy()[1:] == df[columns.time].to_numpy()[:-1]
    )
    flag(same, lots.iloc[:-1], p, lambda i, n: DataError(
        f"lot {lots.iloc[i]}: two rows at time {df[columns.time].iloc[i]} "
        f"({where_pos(i)} and {where_pos(i + 1)}); each lot needs one row per time",
        column=columns.time, lot=str(lots.iloc[i]), problem="time repeated",
        found=time_at(i), expected="one row per time in a lot", **place(i + 1),
    ))  # fmt: skip

    if columns.label_time is not None:
        lt, t = df[columns.label_time], df[columns.time]
        if pd.api.types.is_datetime64_any_dtype(lt) != pd.api.types.is_datetime64_any_dtype(t):
            raise DataError(
                f"{where.source}: {columns.label_time!r} and {columns.time!r} must both be times "
                "or both be numbers",
                column=columns.label_time,
            )
        if pd.api.types.is_datetime64_any_dtype(t) and (lt.dt.tz is None) != (t.dt.tz is None):
            raise DataError(
                f"{where.source}: {columns.label_time!r} and {columns.time!r} must both have a "
                "time zone or both have none",
                column=columns.label_time,
            )
        early = (lt < t).to_numpy()
        flag(early, lots, p, lambda i, n: DataError(
            f"{where_pos(i)} (lot {lots.iloc[i]}): label known at {lt.iloc[i]}, before "
            f"the row was measured at {t.iloc[i]}; check column {columns.label_time!r}",
            column=columns.label_time, lot=str(lots.iloc[i]), problem="label known too early",
            found=lt.iloc[i], expected=f"a time at or after {t.iloc[i]}", **place(i),
        ))  # fmt: skip

    for k in columns.keys:
        varying = df.groupby(columns.lot, sort=False)[k].nunique(dropna=False) > 1
        for lot in [str(x) for x in varying[varying].index]:
            at = np.flatnonzero((lots == lot).to_numpy())
            values = df[k].iloc[at]
            first = values.iloc[0]
            same_value = (values == first) | (values.isna() & pd.isna(first))
            i = int(at[_first(~same_value.to_numpy())])
            err = DataError(
                f"lot {lot}: key column {k!r} changes within the lot, from {first!r} to "
                f"{df[k].iloc[i]!r} at {where_pos(i)}; keys must be constant per lot",
                column=k,
                lot=lot,
                problem="key changes in a lot",
                found=df[k].iloc[i],
                expected=f"{first!r}, as on the lot's first row",
                **place(i),
            )
            if p is None:
                raise err
            p.add(err)

    observed = df[sensors].notna().any(axis=1).groupby(lots.to_numpy(), sort=False).any()
    if not observed.all():
        empty = [str(x) for x in observed[~observed].index]
        for lot in empty if p is not None else empty[:1]:
            i = _first((lots == lot).to_numpy())
            said = (
                f"lot(s) {empty[:5]} have no observed sensor value ({len(empty)} lots; lot "
                f"{lot} begins at {where_pos(i)}); remove them"
                if p is None
                else f"lot {lot} has no observed sensor value (it begins at {where_pos(i)}); "
                "remove it"
            )
            err = DataError(
                f"{where.source}: {said} or fix the export",
                lot=lot,
                problem="no sensor value in a lot",
                found="every sensor empty",
                expected="a reading",
                **place(i),
            )
            if p is None:
                raise err
            p.add(err)
    if p is not None and p.lots:
        df = _without_listed(df, columns, p)

    keep = [columns.lot, columns.time, *columns.keys, *sensors, *columns.targets]
    if columns.label_time is not None:
        keep.append(columns.label_time)
    frame = df[[*keep, "_row"]].reset_index(drop=True)
    resolved = ColumnMap(
        lot=columns.lot,
        time=columns.time,
        sensors=tuple(sensors),
        targets=columns.targets,
        label_time=columns.label_time,
        keys=columns.keys,
        layout=columns.layout,
        sensor_name=columns.sensor_name,
        value=columns.value,
        categories=columns.categories,
        time_format=columns.time_format,
        time_zone=columns.time_zone,
    )
    log.info(
        "read %s: %d rows, %d lots, %d sensors",
        where.source,
        len(frame),
        frame[columns.lot].nunique(),
        len(sensors),
    )
    return SensorTable(frame, resolved, where.source, tuple(notes), where, categories)
