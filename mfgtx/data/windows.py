"""Fixed-length windows cut from a sensor table, one lot at a time.

Shape legend: ``N`` windows, ``R`` table rows, ``T`` window length (time steps), ``C``
sensors, ``H`` forecast horizon, ``K`` target columns.

A :class:`Windows` does not copy the sensor values per window: it keeps the table's
``(R, C)`` values once and, per window, the first row. :meth:`Windows.features` gathers the
``(N, T, C)`` inputs for the windows asked for. Every window records its lot, the time of
its first and last feature row (``start``, ``end``: ``end`` is the prediction time), and the
time its label became known (``label_time``), which is what the splitters and the audit use.
Where the data gave no such time, ``label_time`` holds the row's own time and
``label_time_filled`` says so, so that the audit does not pass a check it could not make.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd

from mfgtx.data.categories import merge_categories

__all__ = ["Windows"]


class _Transform(Protocol):
    def transform(self, x: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class Windows:
    """Windows over a sensor table (see :func:`mfgtx.data.make_windows`).

    Attributes:
        values: ``(R, C)`` float32 sensor values of the whole table, NaN where missing
            (unscaled).
        row_start: ``(N,)`` first table row of each window; its rows are
            ``row_start .. row_start + length - 1``, all of one lot (``length`` is ``window``
            less the window's ``pad``).
        lot: ``(N,)`` lot id of each window (str).
        start: ``(N,)`` time of the first feature row: ``datetime64[ns]`` (UTC), or float
            when the table's time is a number (cycles).
        end: ``(N,)`` time of the last feature row: the prediction time.
        label_time: ``(N,)`` time the window's label became known.
        y: targets, ``(N, K)`` (``horizon == 0``) or ``(N, H, K)`` (forecasting); ``None``
            when the table has no target.
        sensors: the ``C`` sensor names, in column order.
        targets: the ``K`` target names.
        window: ``T``.
        stride: step between window starts within a lot.
        horizon: ``H`` (0 when the label sits at the window's last row).
        pad: ``(N,)`` leading steps of each window that lie before its lot's first row
            (read as missing), or ``None`` when every window is ``window`` rows of its lot.
            See ``min_rows`` of :func:`mfgtx.data.make_windows`.
        time_kind: the table's time axis (:attr:`~mfgtx.data.SensorTable.time_kind`:
            ``"utc"``, ``"naive"`` or ``"number"``), or ``None`` when not known.
        categories: ``{column: {code: name}}``: the names behind the codes of the
            category columns (:attr:`mfgtx.data.SensorTable.categories`), or ``None``.
        label_time_filled: ``(N,)`` bool, ``True`` where ``label_time`` was filled in with
            the label row's own time because the data gives no time at which the label
            became known (no ``label_time`` column mapped); ``None`` when every label time
            was given. The audit lists ``label_availability`` as not checked when a window
            whose label must be known in time has a filled-in one.
    """

    values: np.ndarray
    row_start: np.ndarray
    lot: np.ndarray
    start: np.ndarray
    end: np.ndarray
    label_time: np.ndarray
    y: np.ndarray | None
    sensors: tuple[str, ...]
    targets: tuple[str, ...]
    window: int
    stride: int
    horizon: int
    pad: np.ndarray | None = None
    time_kind: str | None = None
    categories: Mapping[str, Mapping[float, str]] | None = None
    label_time_filled: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.label_time_filled is not None:
            filled = np.asarray(self.label_time_filled)
            if filled.dtype != bool or filled.shape != self.row_start.shape:
                raise ValueError(
                    f"label_time_filled must be one bool per window ({len(self.row_start)}), "
                    f"found dtype {filled.dtype} and shape {filled.shape}"
                )
            object.__setattr__(self, "label_time_filled", filled if filled.any() else None)
        if self.pad is not None:
            pad = np.asarray(self.pad, dtype=np.int64)
            if pad.shape != self.row_start.shape or (pad < 0).any() or (pad >= self.window).any():
                raise ValueError(
                    f"pad must hold one value in [0, window={self.window}) per window "
                    f"({len(self.row_start)}), found shape {pad.shape}"
                )
            if self.horizon:
                raise ValueError("padded windows are for labels at the last row (horizon=0)")
            object.__setattr__(self, "pad", pad)

    def __len__(self) -> int:
        return int(self.row_start.shape[0])

    @property
    def lengths(self) -> np.ndarray:
        """``(N,)`` table rows each window covers: ``window`` less its ``pad``."""
        if self.pad is None:
            return np.full(len(self), self.window, dtype=np.int64)
        return self.window - self.pad

    def _grid(self, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Table row of every step of the given windows ``(n, T)`` and which steps are real
        rows (``None``: all of them); a padding step points at the window's first real row."""
        steps = np.arange(self.window)[None, :]  # (1, T)
        if self.pad is None:
            return self.row_start[idx][:, None] + steps, None
        pad = self.pad[idx][:, None]  # (n, 1)
        rows = self.row_start[idx][:, None] + np.maximum(steps - pad, 0)  # (n, T)
        return rows, steps >= pad

    @classmethod
    def concat(cls, parts: Sequence[Windows]) -> Windows:
        """One :class:`Windows` from windows cut from disjoint sets of lots (for example a
        large input read a few lots at a time); each part's rows keep their own windows.

        Raises:
            ValueError: no part, a lot in two parts, or parts that differ in sensors,
                targets, window, stride, horizon or time type.

        Example:
            >>> t = np.zeros(2, "datetime64[ns]")
            >>> def part(lot):
            ...     return Windows(values=np.zeros((3, 1), np.float32), row_start=np.array([0, 1]),
            ...                    lot=np.array([lot, lot]), start=t, end=t, label_time=t, y=None,
            ...                    sensors=("x",), targets=(), window=2, stride=1, horizon=0)
            >>> both = Windows.concat([part("A"), part("B")])
            >>> len(both), both.row_start.tolist(), both.values.shape
            (4, [0, 1, 3, 4], (6, 1))
        """
        if not parts:
            raise ValueError("Windows.concat needs at least one part")
        first = parts[0]
        for p in parts[1:]:
            same = (p.sensors, p.targets, p.window, p.stride, p.horizon) == (
                first.sensors, first.targets, first.window, first.stride, first.horizon
            )  # fmt: skip
            kinds = {k for k in (first.time_kind, p.time_kind) if k is not None}
            if len(kinds) > 1:
                raise ValueError(
                    f"Windows.concat: parts differ in their time axis ({sorted(kinds)}): some "
                    "lots have times with a zone, others without, or numbers"
                )
            if not same or p.end.dtype != first.end.dtype or (p.y is None) != (first.y is None):
                raise ValueError(
                    "Windows.concat: parts differ (sensors, targets, window, stride, horizon "
                    f"or time type): {first.sensors} vs {p.sensors}, window {first.window} vs "
                    f"{p.window}, stride {first.stride} vs {p.stride}"
                )
        seen: set[str] = set()
        for p in parts:
            lots = set(p.lots.tolist())
            if lots & seen:
                raise ValueError(f"Windows.concat: lot(s) {sorted(lots & seen)[:5]} in two parts")
            seen |= lots
        offsets = np.cumsum([0] + [len(p.values) for p in parts[:-1]])
        columns = sorted({c for p in parts for c in p.categories or {}})
        categories = {
            c: merge_categories([(p.categories or {}).get(c, {}) for p in parts], column=c)
            for c in columns
        }
        return cls(
            values=np.concatenate([p.values for p in parts]),
            row_start=np.concatenate(
                [p.row_start + o for p, o in zip(parts, offsets, strict=True)]
            ),
            lot=np.concatenate([p.lot for p in parts]),
            start=np.concatenate([p.start for p in parts]),
            end=np.concatenate([p.end for p in parts]),
            label_time=np.concatenate([p.label_time for p in parts]),
            y=None if first.y is None else np.concatenate([p.y for p in parts]),
            sensors=first.sensors,
            targets=first.targets,
            window=first.window,
            stride=first.stride,
            horizon=first.horizon,
            pad=None
            if all(p.pad is None for p in parts)
            else np.concatenate([p.window - p.lengths for p in parts]),
            time_kind=next((p.time_kind for p in parts if p.time_kind is not None), None),
            categories=categories or None,
            label_time_filled=None
            if all(p.label_time_filled is None for p in parts)
            else np.concatenate([p.filled_label_times() for p in parts]),
        )

    def filled_label_times(self) -> np.ndarray:
        """``(N,)`` bool: which windows' ``label_time`` was filled in rather than given
        (all ``False`` when ``label_time_filled`` is ``None``)."""
        if self.label_time_filled is None:
            return np.zeros(len(self), dtype=bool)
        return self.label_time_filled

    @property
    def lots(self) -> np.ndarray:
        """Distinct lot ids, in order of first appearance."""
        _, first = np.unique(self.lot, return_index=True)
        return self.lot[np.sort(first)]

    def time_value(self, t: object) -> np.datetime64 | float:
        """``t`` in the windows' own time units: UTC ``datetime64[ns]``, or a float (cycles)."""
        if not np.issubdtype(self.end.dtype, np.datetime64):
            return float(t)  # type: ignore[arg-type]  # a number here: float() says so if not
        ts = pd.Timestamp(t)
        if ts.tzinfo is not None:
            ts = ts.tz_convert("UTC").tz_localize(None)
        return np.datetime64(ts.to_datetime64(), "ns")

    def known_at(self, t: object) -> np.ndarray:
        """Indices of the windows whose features and label were both known at time ``t``."""
        limit = self.time_value(t)
        return np.flatnonzero((self.end <= limit) & (self.label_time <= limit))

    def last_per_lot(self, indices: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """The last window of each lot among ``indices`` (all windows if ``None``), in lot
        order: the prediction made as each lot ends (windows of a lot are in time order)."""
        idx = np.arange(len(self)) if indices is None else np.asarray(indices, dtype=np.int64)
        lots = self.lot[idx]
        if len(idx) == 0:
            return idx
        last = np.r_[lots[1:] != lots[:-1], True]  # a lot's windows come together
        out = idx[last]
        if len(set(lots[last].tolist())) != len(out):  # interleaved: fall back to a lookup
            out = np.array([idx[np.flatnonzero(lots == lot)[-1]] for lot in pd.unique(lots)])
        return out.astype(np.int64)

    def labelled(self) -> np.ndarray:
        """Indices of the windows with every target value present (not NaN)."""
        if self.y is None:
            return np.empty(0, dtype=np.int64)
        flat = self.y.reshape(len(self), -1)
        return np.flatnonzero(~np.isnan(flat).any(axis=1))

    def rows(self, indices: Sequence[int] | np.ndarray | None = None) -> np.ndarray:
        """Sorted distinct table rows covered by the given windows (all windows if ``None``)."""
        idx = np.arange(len(self)) if indices is None else np.asarray(indices, dtype=np.int64)
        if idx.size == 0:
            return np.empty(0, dtype=np.int64)
        rows, real = self._grid(idx)  # (n, T)
        return np.unique(rows if real is None else rows[real])

    def features(
        self, indices: Sequence[int] | np.ndarray, scaler: _Transform | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Inputs of the given windows: ``x (n, T, C)`` float32 and ``observed (n, T, C)`` bool.

        Missing values are reported in ``observed`` and set to 0 in ``x`` *after* scaling, so a
        missing value reads as the training mean (or median). Nothing is interpolated, so
        nothing crosses a lot boundary; a padded window's steps before its lot began are
        missing too.
        """
        idx = np.asarray(indices, dtype=np.int64)
        rows, real = self._grid(idx)  # (n, T)
        x = self.values[rows]  # (n, T, C)
        if real is not None:
            x = np.where(real[:, :, None], x, np.float32(np.nan))
        if scaler is not None:
            x = scaler.transform(x)
        observed = ~np.isnan(x)
        return np.where(observed, x, 0.0).astype(np.float32), observed
