"""Predictors of sensor rows (sensor and forecast kinds): rows -> windows -> output rows.

Shape legend: ``N`` windows.

A frame of sensor rows is checked as a whole first (a DataFrame, with rows, each column name
once), then validated (:func:`~mfgtx.data.read_table` with the bundle's columns, without
labels); when that fails, lot by lot, so that a bad value, a bad lot, a lot written another
way than in training, or a lot shorter than the model needs becomes one errors-file row with
its lot, file and line, and every other lot is scored. Rows without a lot id are listed,
never dropped.

Each row's place travels with it as it is split into lots: the ``_file`` and ``_line`` of
the rows a reader gave (``positions``), or, for a DataFrame, its position (``row N of the
frame``), so a message names the row as the user finds it however the rows were cut.

A sensor without a single reading in a lot is scored as missing (the models mask missing
readings, as in training): the lot is scored, and :attr:`~mfgtx.kinds.Scored.warnings`
holds a row for it (``mfgtx score`` writes it to the errors file), with a
:class:`~mfgtx.data.DataWarning` for Python users.
"""

from __future__ import annotations

import copy
import warnings
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import Field, replace
from pathlib import Path
from typing import Any, ClassVar, Protocol, TypeVar

import numpy as np
import pandas as pd

from mfgtx.data import (
    TIME_KIND_WORDS,
    ColumnMap,
    DataError,
    DataWarning,
    SensorScaler,
    SensorTable,
    Windowing,
    Windows,
    read_table,
)
from mfgtx.data.io import file_chunks, plant_files
from mfgtx.data.read_options import ReadOptions
from mfgtx.data.table import FILE, LINE, Where, check_names
from mfgtx.kinds._predictor import InputSpec, Predictor, Scored, error_row

__all__ = ["WindowPredictor", "WindowSpec"]


class WindowSpec(InputSpec, Protocol):
    """What a :class:`WindowPredictor` reads of its kind's input specification (the spec a
    bundle over sensor rows saves): a kind's own spec, a frozen dataclass, adds what its
    model needs.

    Attributes:
        task: as every kind's spec (:class:`~mfgtx.kinds.InputSpec`).
        columns: the columns of the training data (with its targets and label time).
        windowing: window length, stride and ``min_rows``.
        time_kind: the time axis it trained on (``utc``, ``naive`` or ``number``); lots
            written another way are refused. ``None``: not recorded (not checked).
        scaler: the per-sensor scaler fitted on the training rows (``None``: a forecast
            bundle that kept none).
    """

    #: a dataclass (:meth:`WindowPredictor.with_columns` replaces its columns)
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    @property
    def columns(self) -> ColumnMap: ...
    @property
    def windowing(self) -> Windowing: ...
    @property
    def time_kind(self) -> str | None: ...
    @property
    def scaler(self) -> SensorScaler | None: ...


#: A window kind's input specification.
WindowSpecT = TypeVar("WindowSpecT", bound=WindowSpec)


class WindowPredictor(Predictor[WindowSpecT]):
    """A :class:`~mfgtx.kinds.Predictor` over sensor rows; the kinds add :meth:`cut`,
    :meth:`rows` and :meth:`explain`. Its ``input_spec`` meets :class:`WindowSpec`."""

    @property
    def columns(self) -> ColumnMap:
        """The columns the model reads, without labels (data to score has none yet)."""
        return replace(self.input_spec.columns, targets=(), label_time=None)

    @property
    def windowing(self) -> Windowing:
        return self.input_spec.windowing

    @property
    def read_options(self) -> ReadOptions:
        """How this predictor reads a file (:meth:`score` of a path, the dashboard's
        uploads, ``mfgtx score`` of a source that names none): the read options its bundle
        saved, with the time format and zone of its columns (what the rows are parsed with)."""
        c = self.input_spec.columns
        saved = getattr(self.input_spec, "read", None) or ReadOptions()
        return replace(saved, time_format=c.time_format, time_zone=c.time_zone)

    def read_file(self, path: str | Path) -> pd.DataFrame:
        """The rows of a CSV or Parquet file (or a folder of them, in name order) read with
        :attr:`read_options` by the jobs' bounded reader (:func:`mfgtx.data.io.file_chunks`),
        each with its ``_file`` and ``_line``.

        Raises:
            DataError: the file cannot be read, naming it and, where known, its line.
        """
        csv = self.read_options.csv
        parts = [c for f in plant_files(path) for c in file_chunks(f, csv=csv) if len(c)]
        if not parts:
            raise DataError(f"{path}: no rows to score (a header only, or empty)", file=str(path))
        return pd.concat(parts, ignore_index=True)

    def with_columns(self, columns: ColumnMap) -> WindowPredictor[WindowSpecT]:
        """This predictor reading an export whose columns are named otherwise (a new
        plant's): the same sensors, in the same order, under ``columns``' names.

        Raises:
            ValueError: ``columns`` names other sensors than the model reads.
        """
        expected = tuple(self.columns.sensors or ())
        if tuple(columns.sensors or expected) != expected:
            raise ValueError(
                f"data.columns.sensors: the bundle was trained on {list(expected)}, the job "
                f"names {list(columns.sensors or ())}"
            )
        new = copy.copy(self)
        columns = replace(
            columns,
            sensors=expected,
            targets=(),
            label_time=None,
            categories=self.columns.categories,  # a grade is read as in training
            # times written as in training unless the job says how
            time_format=columns.time_format or self.columns.time_format,
            time_zone=columns.time_zone or self.columns.time_zone,
        )
        new.input_spec = replace(self.input_spec, columns=columns)
        return new

    def table(self, frame: pd.DataFrame, columns: ColumnMap | None = None) -> SensorTable:
        """``frame`` validated as the model's input (warnings about sorted rows are quiet).
        Rows carrying ``_file`` and ``_line`` (as the job readers give them) are named by
        them in messages.

        Raises:
            DataError: no rows, a column name given twice, a bad value or lot, or times
                written another way than in training.
        """
        self._check_frame(frame)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = read_table(frame, columns or self.columns)
        expected = self.input_spec.time_kind  # None: a bundle of an earlier layout
        if expected is not None and table.time_kind != expected:
            lot = table.lots[0]
            first = int(table.frame["_row"].iloc[0])
            raise DataError(
                f"lot {lot} has {TIME_KIND_WORDS[table.time_kind]} (from {table.where(first)}), "
                f"but the model was trained on {TIME_KIND_WORDS[expected]}; export its times "
                "as in training",
                column=self.columns.time,
                lot=lot,
                **(table.places or Where(table.source)).fields(first),
            )
        return table

    def _check_frame(self, frame: Any) -> None:
        """What every entry point asks of its input: a DataFrame with rows, each column
        name once (and no ``X`` beside a pandas-renamed ``X.1`` the model reads)."""
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(
                f"{type(self).__name__} scores a DataFrame of sensor rows, found "
                f"{type(frame).__name__}"
            )

        def source() -> str:  # the files the rows came from, for a message
            return Where.of(frame).source if FILE in frame.columns else "DataFrame"

        names = [c for c in frame.columns if c not in (FILE, LINE)]
        if not len(frame):
            shown = [str(c) for c in names[:8]]
            has = f"it has the columns {shown} but" if names else "it has no columns and"
            raise DataError(f"{source()}: no rows to score ({has} no rows)")
        try:
            check_names(names, "DataFrame", columns=self.columns)
        except DataError:
            check_names(names, source(), columns=self.columns)  # the same, naming the file
            raise

    def _frame(self, data: Any, positions: pd.DataFrame | None) -> pd.DataFrame:
        """``data`` checked (:meth:`_check_frame`), with each row's place: ``positions``'
        ``file`` and ``line``, the ``_file`` and ``_line`` it carries, or its position."""
        self._check_frame(data)
        frame = data.reset_index(drop=True)
        if positions is not None:
            if len(positions) != len(frame):
                raise ValueError(
                    f"positions: {len(positions)} rows for {len(frame)} rows of data; give the "
                    "file and line of every row"
                )
            place = positions.reset_index(drop=True)
            return frame.assign(**{FILE: place["file"].to_numpy(), LINE: place["line"].to_numpy()})
        if LINE in frame.columns:
            return frame
        return frame.assign(**{LINE: np.arange(len(frame))})

    @abstractmethod
    def cut(self, table: SensorTable, *, stride: int | None = None) -> Windows:
        """The windows the model reads from ``table``."""

    @abstractmethod
    def rows(self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256) -> pd.DataFrame:
        """The output rows of windows ``idx`` (the columns ``mfgtx score`` writes)."""

    def windows(self, frame: pd.DataFrame, *, stride: int | None = None) -> Windows:
        """The windows of ``frame`` as the model reads them (raises on any bad lot)."""
        return self.cut(self.table(frame), stride=stride)

    def _window_to_explain(
        self, data: pd.DataFrame | Windows, window: int
    ) -> tuple[Windows, np.ndarray]:
        """The windows of ``data`` (rows of one lot, cut at every row, or windows) and the
        index ``(1,)`` of window ``window`` (``-1``: the last) among them, for :meth:`explain`.

        Raises:
            DataError: no rows, a bad lot, or no window ``window`` in the data.
        """
        windows = data if isinstance(data, Windows) else self.windows(data, stride=1)
        n = len(windows)
        if not -n <= window < n:
            which = f"numbered 0 to {n - 1} (or -1 for the last)" if n else "none at all"
            raise DataError(f"no window {window} to explain: the data gives {n} window(s), {which}")
        return windows, np.arange(n)[window : window + 1 if window != -1 else None]

    def windows_by_lot(
        self,
        frame: pd.DataFrame,
        positions: pd.DataFrame | None = None,
        stride: int | None = None,
    ) -> Iterator[tuple[Windows | None, dict[str, object] | None]]:
        """``(windows, None)`` for the good lots of ``frame`` and ``(None, error row)`` for
        each bad one: the whole frame at once when every lot is good, else lot by lot.

        Raises:
            DataError: the frame as a whole cannot be read (no rows, no lot column, a
                column name given twice).
        """
        for windows, _, err in self._by_lot(self._frame(frame, positions), stride):
            yield windows, err

    def _by_lot(
        self, frame: pd.DataFrame, stride: int | None
    ) -> Iterator[tuple[Windows | None, SensorTable | None, dict[str, object] | None]]:
        """:meth:`windows_by_lot` with the table of each good part, for a frame that carries
        its rows' places (:meth:`_frame`)."""
        whole = self._cut(frame, stride)
        if not isinstance(whole, dict):
            yield whole[0], whole[1], None
            return
        lot = self.columns.lot
        if lot not in frame.columns:
            names = [str(c) for c in frame.columns if c not in (FILE, LINE)]
            raise DataError(f"missing lot column {lot!r}; found {names}", column=lot)
        ids = frame[lot]
        blank = (ids.isna() | (ids.astype(str).str.strip() == "")).to_numpy()
        if blank.any():
            where, first = Where.of(frame), int(np.flatnonzero(blank)[0])
            err = DataError(
                f"{where(first)}: {int(blank.sum())} row(s) have no lot id in column "
                f"{lot!r}; they were not scored",
                column=lot,
                **where.fields(first),
            )
            yield None, None, error_row(None, err)
        for _, part in frame[~blank].groupby(lot, sort=False):
            got = self._cut(part, stride)
            if isinstance(got, dict):
                yield None, None, got
            else:
                yield got[0], got[1], None

    def _cut(
        self, frame: pd.DataFrame, stride: int | None
    ) -> tuple[Windows, SensorTable] | dict[str, object]:
        """The windows and table of ``frame``, or the errors-file row of why not (its lot,
        and its file when the error names none and the rows come from one)."""
        try:
            table = self.table(frame)
            return self.cut(table, stride=stride), table
        except DataError as e:
            ids = frame[self.columns.lot] if self.columns.lot in frame.columns else None
            lots = [] if ids is None else pd.unique(ids.dropna().astype(str))
            row = error_row(e.lot or (lots[0] if len(lots) == 1 else None), e)
            if row["file"] is None and FILE in frame.columns:
                files = pd.unique(frame[FILE].dropna())
                row["file"] = str(files[0]) if len(files) == 1 else None
            return row

    def score(
        self,
        data: pd.DataFrame | str | Path,
        *,
        stride: int | None = None,
        last_per_lot: bool = False,
        batch_size: int = 256,
        positions: pd.DataFrame | None = None,
    ) -> Scored:
        """Output rows and errors for the sensor rows ``data``.

        Args:
            data: rows of one or more complete lots, the columns of the bundle's data; or
                the path of a CSV or Parquet file (or folder) read as :meth:`read_file`
                reads it, with the bundle's read options, as ``mfgtx score`` reads it.
            stride: rows between scored windows (default: the training stride); each lot's
                last window ends at its latest row.
            last_per_lot: only each lot's last window (the prediction as of now).
            batch_size: windows per forward pass.
            positions: the ``file`` and ``line`` of each row of ``data`` (for errors).

        Raises:
            DataError: ``data`` as a whole cannot be read: no rows to score, no lot column,
                a column name given twice.

        Warns:
            DataWarning: a sensor has no reading at all in a lot; the lot is scored with it
                missing, as the model reads a missing reading (:attr:`Scored.warnings`).
        """
        if isinstance(data, str | Path):
            if positions is not None:
                raise ValueError("positions: a file's rows carry their own file and line")
            data = self.read_file(data)
        frame = self._frame(data, positions)
        parts: list[pd.DataFrame] = []
        errors: list[dict[str, object]] = []
        notices: list[dict[str, object]] = []
        lots = n = 0
        for windows, table, err in self._by_lot(frame, stride):
            if err is not None:
                errors.append(err)
                continue
            assert windows is not None and table is not None
            idx = windows.last_per_lot() if last_per_lot else np.arange(len(windows))
            rows = _with_keys(self.rows(windows, idx, batch_size=batch_size), table)
            rows, bad = self._finite(rows)
            errors += bad
            parts.append(rows)
            lots += len(windows.lots) - len(bad)
            n += len(idx)
            unscored = {str(e["lot"]) for e in bad}
            notices += [w for w in _unread(table) if w["lot"] not in unscored]
        _warn_unread(notices)
        rows = pd.concat(parts, ignore_index=True) if parts else self._empty()
        return Scored(rows, errors, lots=lots, windows=n, warnings=notices)

    def _empty(self) -> pd.DataFrame:
        return pd.DataFrame(columns=list(self.keys))

    def _finite(self, rows: pd.DataFrame) -> tuple[pd.DataFrame, list[dict[str, object]]]:
        """Rows whose predictions are not finite numbers become errors of their lot."""
        values = rows.select_dtypes("number").drop(columns=["step"], errors="ignore")
        bad = ~np.isfinite(values.to_numpy(dtype=float)).all(axis=1)
        if not bad.any():
            return rows, []
        lots = pd.unique(rows.loc[bad, "lot"])
        errors = [
            error_row(
                lot,
                DataError(f"lot {lot}: the model gave no finite prediction; check its readings"),
            )
            for lot in lots
        ]
        return rows[~rows["lot"].isin(lots)].reset_index(drop=True), errors


def _with_keys(rows: pd.DataFrame, table: SensorTable) -> pd.DataFrame:
    """``rows`` with the lot's key columns (``data.columns.keys``: the line, the machine
    type...) after ``lot``, as the data gives them: whoever reads the scores (the history,
    the plant view, a plant's own report) finds each lot's line beside it."""
    keys = [k for k in table.columns.keys if k in table.frame.columns and k not in rows.columns]
    if not keys or rows.empty:
        return rows
    per_lot = table.frame.groupby(table.columns.lot, sort=False)[keys].first()
    for at, k in enumerate(keys, start=1):
        rows.insert(at, k, rows["lot"].map(per_lot[k]).to_numpy())
    return rows


def batches(idx: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """``idx`` in consecutive slices of at most ``batch_size`` (the last one partial)."""
    for a in range(0, len(idx), batch_size):
        yield idx[a : a + batch_size]


def _unread(table: SensorTable) -> list[dict[str, object]]:
    """A warning row (``lot``, ``file``, ``line``, ``column``, ``reason``) per sensor without
    a single reading in a lot of ``table``; ``line`` is the lot's first."""
    out: list[dict[str, object]] = []
    unread = table.unread_sensors()
    if not unread:
        return out
    where = table.places or Where(table.source)
    bounds = table.lot_bounds()
    rows = table.frame["_row"].to_numpy()
    for lot, sensors in unread.items():
        a, b = bounds[lot]
        first, last = int(rows[a:b].min()), int(rows[a:b].max())
        place = where.fields(first)
        for sensor in sensors:
            out.append(
                {
                    "lot": lot,
                    "file": place["file"],
                    "line": place["line"],
                    "column": sensor,
                    "reason": f"no reading of {sensor} in this lot; scored with it missing "
                    f"({where.span(first, last)})",
                }
            )
    return out


def _warn_unread(notices: list[dict[str, object]]) -> None:
    """One :class:`~mfgtx.data.DataWarning` per sensor of ``notices`` (:func:`_unread`)."""
    by_sensor: dict[str, list[str]] = {}
    for w in notices:
        by_sensor.setdefault(str(w["column"]), []).append(str(w["lot"]))
    for sensor, lots in by_sensor.items():
        named = ", ".join(lots[:5]) + (f" and {len(lots) - 5} more" if len(lots) > 5 else "")
        warnings.warn(
            f"no reading of {sensor} in {len(lots)} lot(s) ({named}); scored with it missing "
            "(each is listed in Scored.warnings)",
            DataWarning,
            stacklevel=3,
        )
