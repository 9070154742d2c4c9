"""Reading and validating sensor tables: CSV or Parquet, wide or long, or a DataFrame.

A :class:`SensorTable` is the validated, wide, sorted form every later step works on: one
row per (lot, time), one float column per sensor (NaN where a reading is missing), targets,
an optional label-availability time, carried key columns, and ``_row``, the row's position in
the input (reported as a file line for CSV, so an engineer can find it in a spreadsheet).

Nothing is dropped or filled silently. Bad input raises :class:`~mfgtx.data.DataError`
naming the file, column, lot and line; a fix the reader makes itself (sorting rows) or a
column it leaves out (non-numeric columns when sensors are not listed) comes with a
:class:`~mfgtx.data.DataWarning` and is recorded in :attr:`SensorTable.notes`.
"""

from __future__ import annotations

import difflib
import logging
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mfgtx.data.categories import encode_categories
from mfgtx.data.columns import ColumnMap
from mfgtx.data.errors import DataError, DataWarning

__all__ = ["TIME_KIND_WORDS", "SensorTable", "read_table"]

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
_BOOL_WORDS = {"true": 1.0, "false": 0.0, "pass": 1.0, "fail": 0.0, "yes": 1.0, "no": 0.0}
_CSV_SUFFIXES = (".csv", ".csv.gz", ".txt", ".tsv")
_PARQUET_SUFFIXES = (".parquet", ".pq")


@dataclass(frozen=True)
class _Where:
    """Names an input row the way the user sees it: a file line (CSV) or a row number."""

    source: str
    is_file_line: bool

    def __call__(self, position: int) -> str:
        if self.is_file_line:
            return f"{self.source} line {position + 2}"  # +1 for 1-based, +1 for the header
        return f"{self.source} row {position}"


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
    _is_file_line: bool = False
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
        return _Where(self.source, self._is_file_line)(position)

    def lot_bounds(self) -> dict[str, tuple[int, int]]:
        """``{lot: (first_row, stop_row)}`` in :attr:`frame` (lots are contiguous)."""
        lots = self.frame[self.columns.lot].to_numpy()
        change = np.flatnonzero(lots[1:] != lots[:-1]) + 1
        starts = np.concatenate([[0], change])
        stops = np.concatenate([change, [len(lots)]])
        return {str(lots[a]): (int(a), int(b)) for a, b in zip(starts, stops, strict=True)}


# --------------------------------------------------------------------------- loading


def _load(source: str | Path | pd.DataFrame) -> tuple[pd.DataFrame, _Where]:
    if isinstance(source, pd.DataFrame):
        return source.reset_index(drop=True).copy(), _Where("DataFrame", False)
    path = Path(source)
    name = path.name.lower()
    if not path.exists():
        raise DataError(f"data file not found: {path}")
    if name.endswith(_CSV_SUFFIXES):
        sep = "\t" if name.endswith(".tsv") else ","
        try:  # everything as text: numbers and times are parsed here, with line numbers
            df = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError, EOFError, OSError) as err:
            raise DataError(f"cannot read {path.name} as CSV: {err}") from err
        return df, _Where(path.name, True)
    if name.endswith(_PARQUET_SUFFIXES):
        try:
            df = pd.read_parquet(path, engine="pyarrow")
        except Exception as err:  # pyarrow raises several types for corrupt files
            raise DataError(f"cannot read {path.name} as Parquet: {err}") from err
        return df.reset_index(drop=True), _Where(path.name, False)
    raise DataError(
        f"{path.name}: unknown file type; expected one of "
        f"{', '.join(_CSV_SUFFIXES + _PARQUET_SUFFIXES)}"
    )


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


def _require(df: pd.DataFrame, columns: ColumnMap, where: _Where) -> None:
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

        listed = ", ".join(one(role, name) for role, name in missing)
        raise DataError(
            f"{where.source}: missing column(s) {listed}; found columns {found}",
            column=missing[0][1],
        )


# --------------------------------------------------------------------------- parsing


def _first(mask: np.ndarray | pd.Series) -> int:
    return int(np.flatnonzero(np.asarray(mask))[0])


def _lot_of(df: pd.DataFrame, columns: ColumnMap, i: int) -> str:
    return str(df[columns.lot].iloc[i])


def _parse_lots(s: pd.Series, column: str, where: _Where) -> pd.Series:
    missing = s.isna().to_numpy() | (s.astype(str).str.strip() == "").to_numpy()
    if missing.any():
        i = _first(missing)
        raise DataError(
            f"{where(i)}: no lot id in column {column!r} ({int(missing.sum())} such rows); "
            "every reading must belong to a lot",
            column=column,
            row=i,
        )
    return s.astype(str).str.strip()


def _text_times(
    text: pd.Series, utc: bool, column: str, where: _Where, lots: pd.Series
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
                row=i,
            )
        return month_first
    return day_first if day_first.isna().sum() < month_first.isna().sum() else month_first


def _parse_times(
    s: pd.Series, column: str, where: _Where, lots: pd.Series, time_format: str | None = None
) -> pd.Series:
    """Timestamps -> UTC (or naive) datetimes; numbers (cycles) stay numbers."""
    if pd.api.types.is_datetime64_any_dtype(s):
        out = s.dt.tz_convert("UTC") if s.dt.tz is not None else s
    elif pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
        out = s.astype(float)
        if np.isinf(out).any():
            i = _first(np.isinf(out))
            raise DataError(f"{where(i)}: infinite time in column {column!r}", column=column, row=i)
    else:
        text = s.astype("string").str.strip()
        missing = (text.isna() | (text == "")).to_numpy()
        if missing.any():
            i = _first(missing)
            raise DataError(
                f"{where(i)} (lot {lots.iloc[i]}): no time in column {column!r} "
                f"({int(missing.sum())} such rows)",
                column=column,
                lot=str(lots.iloc[i]),
                row=i,
            )
        as_number = pd.to_numeric(text, errors="coerce")
        if as_number.notna().all() and time_format is None:
            return _check_finite_time(as_number.astype(float), column, where, lots)
        aware = text.str.contains(_TZ_SUFFIX, regex=True).to_numpy()
        if aware.any() and not aware.all():
            i, j = _first(aware), _first(~aware)
            raise DataError(
                f"mixed time zones in column {column!r}: {where(i)} has a zone "
                f"({text.iloc[i]!r}), {where(j)} has none ({text.iloc[j]!r}); export all "
                "times with an offset (e.g. +00:00) or all without",
                column=column,
                row=j,
            )
        utc = bool(aware.all())
        if time_format is not None:
            out = pd.to_datetime(text, utc=utc, format=time_format, errors="coerce")
            expected = f"the format {time_format!r} of data.columns.time_format"
        else:
            out = pd.to_datetime(text, utc=utc, format="ISO8601", errors="coerce")
            expected = "ISO 8601 such as 2026-03-02T06:00:00+00:00"
            if out.isna().any():  # not ISO 8601: one format inferred for the whole column
                inferred = _text_times(text, utc, column, where, lots)
                if inferred.isna().sum() < out.isna().sum():
                    out = inferred
        bad = out.isna().to_numpy()
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{where(i)} (lot {lots.iloc[i]}): cannot parse {text.iloc[i]!r} in column "
                f"{column!r} as a time ({int(bad.sum())} such rows); expected {expected}",
                column=column,
                lot=str(lots.iloc[i]),
                row=i,
            )
    if pd.api.types.is_datetime64_any_dtype(out):
        _check_time_range(out, s, column, where, lots)
        out = out.astype("datetime64[ns, UTC]" if out.dt.tz is not None else "datetime64[ns]")
        if out.isna().any():
            i = _first(out.isna())
            raise DataError(f"{where(i)}: no time in column {column!r}", column=column, row=i)
        return out
    return _check_finite_time(out, column, where, lots)


#: Times outside these years are refused: a clock error, not a reading (and beyond 2262
#: they do not fit the nanosecond times every later step uses).
TIME_RANGE = ("1900-01-01", "2200-01-01")


def _check_time_range(
    out: pd.Series, raw: pd.Series, column: str, where: _Where, lots: pd.Series
) -> None:
    lo, hi = (pd.Timestamp(t, tz="UTC" if out.dt.tz is not None else None) for t in TIME_RANGE)
    bad = (out.notna() & ((out < lo) | (out >= hi))).to_numpy()
    if bad.any():
        i = _first(bad)
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): time {raw.iloc[i]!r} in column {column!r} is "
            f"outside the years {TIME_RANGE[0][:4]}-{int(TIME_RANGE[1][:4]) - 1} "
            f"({int(bad.sum())} such rows); check the export's clock",
            column=column,
            lot=str(lots.iloc[i]),
            row=i,
        )


def _check_finite_time(out: pd.Series, column: str, where: _Where, lots: pd.Series) -> pd.Series:
    bad = ~np.isfinite(out.to_numpy(dtype=float))
    if bad.any():
        i = _first(bad)
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): no finite time in column {column!r}",
            column=column,
            row=i,
        )
    return out


def _to_float(
    s: pd.Series, column: str, where: _Where, lots: pd.Series, *, words: bool = False
) -> pd.Series:
    """Numbers -> float64; NaN stays NaN; anything else or inf raises, naming the line."""
    if pd.api.types.is_bool_dtype(s):
        return s.astype(float)
    if pd.api.types.is_numeric_dtype(s):
        out = s.astype(float)
    else:
        text = s.astype("string").str.strip()
        if words:
            text = text.str.lower().replace(_BOOL_WORDS).astype("string")
        out = pd.to_numeric(text, errors="coerce").astype(float)
        bad = (out.isna() & text.notna() & (text.str.lower() != "nan")).to_numpy()
        if bad.any():
            i = _first(bad)
            raise DataError(
                f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {s.iloc[i]!r}, "
                f"expected a number ({int(bad.sum())} such values){_comma_hint(s.iloc[i])}",
                column=column,
                lot=str(lots.iloc[i]),
                row=i,
            )
    inf = np.isinf(out.to_numpy())
    if inf.any():
        i = _first(inf)
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {out.iloc[i]}, expected "
            f"a finite number or empty for missing ({int(inf.sum())} such values)",
            column=column,
            lot=str(lots.iloc[i]),
            row=i,
        )
    huge = (np.abs(out.to_numpy()) > FLOAT32_MAX).astype(bool)
    if huge.any():
        i = _first(huge)
        raise DataError(
            f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {s.iloc[i]!r}, beyond "
            f"the +/-{FLOAT32_MAX:.1e} a model can read ({int(huge.sum())} such values); "
            "check the export's units",
            column=column,
            lot=str(lots.iloc[i]),
            row=i,
        )
    return out


#: A number written with one decimal comma (``-1,25``, ``,5``, ``3,0e-2``), as European
#: exports write them.
COMMA_NUMBER = r"\s*[+-]?(?:\d+,\d*|,\d+)(?:[eE][+-]?\d+)?\s*"


def _comma_hint(value: object) -> str:
    """A pointer to the job file's ``source.decimal`` when ``value`` is a number written with
    a decimal comma (``'1,25'``), else ``''``."""
    if isinstance(value, str) and re.fullmatch(COMMA_NUMBER, value):
        return "; it looks like a decimal comma: a job file reads it with source.decimal: ','"
    return ""


def _to_codes(s: pd.Series, column: str, where: _Where) -> tuple[pd.Series, dict[float, str]]:
    """A category column as its codes (:mod:`mfgtx.data.categories`) and their names."""
    try:
        codes, names = encode_categories(s, column=column, where=f"{where.source}: ")
    except ValueError as e:
        raise DataError(str(e), column=column) from e
    return pd.Series(codes, index=s.index), names


def _numeric_columns(
    df: pd.DataFrame, candidates: list[str], where: _Where
) -> tuple[list[str], list[str]]:
    """Split candidate sensor columns into numeric ones and descriptions of the others."""
    numeric, left_out = [], []
    for c in candidates:
        s = df[c]
        if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s):
            numeric.append(c)
            continue
        text = s.astype("string").str.strip()
        parsed = pd.to_numeric(text, errors="coerce")
        bad = (parsed.isna() & text.notna()).to_numpy()
        if not bad.any() and text.notna().any():
            numeric.append(c)
        else:
            i = _first(bad) if bad.any() else 0
            left_out.append(f"{c!r} (e.g. {s.iloc[i]!r} at {where(i)}{_comma_hint(s.iloc[i])})")
    return numeric, left_out


# --------------------------------------------------------------------------- layout


def _pivot_long(df: pd.DataFrame, columns: ColumnMap, where: _Where) -> pd.DataFrame:
    lot, time, name = columns.lot, columns.time, columns.sensor_name
    no_name = (df[name].isna() | (df[name].astype(str).str.strip() == "")).to_numpy()
    if no_name.any():
        i = _first(no_name)
        row = int(df["_row"].iloc[i])
        raise DataError(f"{where(row)}: no sensor name in column {name!r}", column=name, row=row)
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
            row=int(rows[0]),
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
            raise DataError(
                f"lot {key[0]} at {key[1]}: column {c!r} has different values across the "
                "sensor readings of one time step",
                column=c,
                lot=str(key[0]),
            )
    out = extra.join(wide).reset_index()
    return out.sort_values("_row", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------- the reader


def read_table(source: str | Path | pd.DataFrame, columns: ColumnMap) -> SensorTable:
    """Read and validate a sensor table.

    Args:
        source: a CSV (``.csv``, ``.csv.gz``, ``.tsv``, ``.txt``) or Parquet file, or a
            DataFrame.
        columns: the :class:`~mfgtx.data.ColumnMap` saying which column means what.

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
    _require(df, columns, where)
    df["_row"] = np.arange(len(df))
    notes: list[str] = []
    categories: dict[str, dict[float, str]] = {}

    lots = _parse_lots(df[columns.lot], columns.lot, where)
    df[columns.lot] = lots
    fmt = columns.time_format
    df[columns.time] = _parse_times(df[columns.time], columns.time, where, lots, fmt)
    if columns.label_time is not None:
        df[columns.label_time] = _parse_times(
            df[columns.label_time], columns.label_time, where, lots, fmt
        )

    for c in columns.targets:  # before any reshaping, so that positions are input rows
        df[c] = _to_float(df[c], c, where, lots, words=True)
    if columns.layout == "long":
        df[columns.value] = _to_float(df[columns.value], columns.value, where, lots)
        df = _pivot_long(df, columns, where)
        mapped = {*columns.non_sensor_columns, "_row"}
        sensors = list(columns.sensors or sorted(c for c in df.columns if c not in mapped))
    else:
        named = {*columns.categories}
        if columns.sensors is not None:
            sensors = list(columns.sensors)
        else:
            mapped = (*columns.non_sensor_columns, *named, "_row")
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
                df[c] = _to_float(df[c], c, where, lots)

    lots = df[columns.lot]
    rows = df["_row"].to_numpy()

    def where_pos(i: int) -> str:  # position in df -> input row
        return where(int(rows[i]))

    # rows in order: lots contiguous (in order of first appearance), time increasing
    codes, _ = pd.factorize(lots)
    time_values = df[columns.time].to_numpy()
    out_of_order = (codes[1:] < codes[:-1]) | (
        (codes[1:] == codes[:-1]) & (time_values[1:] < time_values[:-1])
    )
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
    if same.any():
        i = _first(same)
        raise DataError(
            f"lot {lots.iloc[i]}: two rows at time {df[columns.time].iloc[i]} "
            f"({where_pos(i)} and {where_pos(i + 1)}); each lot needs one row per time",
            column=columns.time,
            lot=str(lots.iloc[i]),
            row=int(rows[i + 1]),
        )

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
        if early.any():
            i = _first(early)
            raise DataError(
                f"{where_pos(i)} (lot {lots.iloc[i]}): label known at {lt.iloc[i]}, before "
                f"the row was measured at {t.iloc[i]}; check column {columns.label_time!r}",
                column=columns.label_time,
                lot=str(lots.iloc[i]),
                row=int(rows[i]),
            )

    for k in columns.keys:
        varying = df.groupby(columns.lot, sort=False)[k].nunique(dropna=False) > 1
        if varying.any():
            lot = str(varying[varying].index[0])
            raise DataError(
                f"lot {lot}: key column {k!r} changes within the lot; keys must be constant "
                "per lot",
                column=k,
                lot=lot,
            )

    observed = df[sensors].notna().any(axis=1).groupby(lots.to_numpy(), sort=False).any()
    if not observed.all():
        empty = [str(x) for x in observed[~observed].index]
        raise DataError(
            f"{where.source}: lot(s) {empty[:5]} have no observed sensor value "
            f"({len(empty)} lots); remove them or fix the export",
            lot=empty[0],
        )

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
    )
    log.info(
        "read %s: %d rows, %d lots, %d sensors",
        where.source,
        len(frame),
        frame[columns.lot].nunique(),
        len(sensors),
    )
    return SensorTable(frame, resolved, where.source, tuple(notes), where.is_file_line, categories)
