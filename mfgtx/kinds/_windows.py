"""Predictors of sensor rows (sensor and forecast kinds): rows -> windows -> output rows.

Shape legend: ``N`` windows.

A frame of sensor rows is validated as a whole first (:func:`~mfgtx.data.read_table` with
the bundle's columns, without labels); when that fails, lot by lot, so that a bad value, a
bad lot, a lot written another way than in training, or a lot shorter than the model needs
becomes one errors-file row with its lot, file and line, and every other lot is scored.
Rows without a lot id are listed, never dropped.
"""

from __future__ import annotations

import copy
import warnings
from abc import abstractmethod
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import (
    TIME_KIND_WORDS,
    ColumnMap,
    DataError,
    SensorTable,
    Windowing,
    Windows,
    read_table,
)
from mfgtx.kinds._base import Predictor, Scored, error_row

__all__ = ["WindowPredictor"]


class WindowPredictor(Predictor):
    """A :class:`~mfgtx.kinds.Predictor` over sensor rows; the kinds add :meth:`rows`."""

    @property
    def columns(self) -> ColumnMap:
        """The columns the model reads, without labels (data to score has none yet)."""
        return replace(self.input_spec.columns, targets=(), label_time=None)

    @property
    def windowing(self) -> Windowing:
        return self.input_spec.windowing

    def with_columns(self, columns: ColumnMap) -> WindowPredictor:
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
        )
        new.input_spec = replace(self.input_spec, columns=columns)
        return new

    def table(self, frame: pd.DataFrame, columns: ColumnMap | None = None) -> SensorTable:
        """``frame`` validated as the model's input (warnings about sorted rows are quiet).

        Raises:
            DataError: a bad value or lot, or times written another way than in training.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            table = read_table(frame, columns or self.columns)
        expected = self.input_spec.time_kind  # None: a bundle of an earlier layout
        if expected is not None and table.time_kind != expected:
            raise DataError(
                f"lot {table.lots[0]} has {TIME_KIND_WORDS[table.time_kind]}, but the model was "
                f"trained on {TIME_KIND_WORDS[expected]}; export its times as in training",
                column=self.columns.time,
                lot=table.lots[0],
            )
        return table

    @abstractmethod
    def cut(self, table: SensorTable, *, stride: int | None = None) -> Windows:
        """The windows the model reads from ``table``."""

    @abstractmethod
    def rows(self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256) -> pd.DataFrame:
        """The output rows of windows ``idx`` (the columns ``mfgtx score`` writes)."""

    def windows(self, frame: pd.DataFrame, *, stride: int | None = None) -> Windows:
        """The windows of ``frame`` as the model reads them (raises on any bad lot)."""
        return self.cut(self.table(frame), stride=stride)

    def windows_by_lot(
        self,
        frame: pd.DataFrame,
        positions: pd.DataFrame | None = None,
        stride: int | None = None,
    ) -> Iterator[tuple[Windows | None, dict[str, object] | None]]:
        """``(windows, None)`` for the good lots of ``frame`` and ``(None, error row)`` for
        each bad one: the whole frame at once when every lot is good, else lot by lot."""
        try:
            yield self.windows(frame, stride=stride), None
            return
        except DataError:
            pass  # a lot of this frame is bad: score its lots one by one
        lot = self.columns.lot
        if lot not in frame.columns:
            raise DataError(f"missing lot column {lot!r}; found {list(frame.columns)}", column=lot)
        ids = frame[lot]
        blank = (ids.isna() | (ids.astype(str).str.strip() == "")).to_numpy()
        if blank.any():
            first = int(np.flatnonzero(blank)[0])
            err = DataError(
                f"DataFrame row {first}: {int(blank.sum())} row(s) have no lot id in column "
                f"{lot!r}; they were not scored",
                column=lot,
                row=first,
            )
            yield None, error_row(None, err, positions)
        for name, part in frame[~blank].groupby(lot, sort=False):
            where = None if positions is None else positions.loc[part.index]
            try:
                yield self.windows(part.reset_index(drop=True), stride=stride), None
            except DataError as e:
                yield None, error_row(name, e, where)

    def score(
        self,
        data: pd.DataFrame,
        *,
        stride: int | None = None,
        last_per_lot: bool = False,
        batch_size: int = 256,
        positions: pd.DataFrame | None = None,
    ) -> Scored:
        """Output rows and errors for the sensor rows ``data``.

        Args:
            data: rows of one or more complete lots, the columns of the bundle's data.
            stride: rows between scored windows (default: the training stride); each lot's
                last window ends at its latest row.
            last_per_lot: only each lot's last window (the prediction as of now).
            batch_size: windows per forward pass.
            positions: the ``file`` and ``line`` of each row of ``data`` (for errors).
        """
        data = data.reset_index(drop=True)
        if positions is not None:
            positions = positions.reset_index(drop=True)
        parts: list[pd.DataFrame] = []
        errors: list[dict[str, object]] = []
        lots = n = 0
        for windows, err in self.windows_by_lot(data, positions, stride):
            if err is not None:
                errors.append(err)
                continue
            assert windows is not None
            idx = windows.last_per_lot() if last_per_lot else np.arange(len(windows))
            rows = self.rows(windows, idx, batch_size=batch_size)
            rows, bad = self._finite(rows)
            errors += bad
            parts.append(rows)
            lots += len(windows.lots) - len(bad)
            n += len(idx)
        rows = pd.concat(parts, ignore_index=True) if parts else self._empty()
        return Scored(rows, errors, lots=lots, windows=n)

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


def batches(idx: np.ndarray, batch_size: int) -> Iterator[np.ndarray]:
    """``idx`` in consecutive slices of at most ``batch_size`` (the last one partial)."""
    for a in range(0, len(idx), batch_size):
        yield idx[a : a + batch_size]


def as_tuple(value: Any) -> tuple[str, ...]:
    return tuple(value or ())
