"""The per-window lot and times that splitting and auditing need, taken from any accepted input.

Shape legend: ``N`` windows, ``L`` distinct lots.

Both :class:`~mfgtx.split.LotTimeSplit` and :func:`~mfgtx.split.audit` accept either a
:class:`mfgtx.data.Windows` or a pandas DataFrame with one row per window and columns ``lot``,
``start``, ``end`` and optionally ``label_time``. :func:`window_times` turns either into a
:class:`WindowTimes` with the times as ``int64`` nanoseconds, after checking them, so the rest
of the subpackage works on plain integer arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data.errors import DataError
from mfgtx.data.windows import Windows

__all__ = ["WindowTimes", "duration_text", "iso", "parse_gap", "window_times"]

_WHAT_TO_PASS = (
    "pass a mfgtx.data.Windows or a pandas DataFrame with one row per window and columns "
    "'lot', 'start', 'end' (datetime64) and optionally 'label_time'"
)


@dataclass(frozen=True, eq=False)
class WindowTimes:
    """Lot and times of ``N`` windows; times are ``int64`` nanoseconds since the epoch.

    Attributes:
        lot: ``(N,)`` lot id of each window, as Python objects (``dtype=object``).
        start: ``(N,)`` time of the first feature row.
        end: ``(N,)`` time of the last feature row (the prediction time).
        label_time: ``(N,)`` time the label became known (``end`` when the input had none).
        has_label_time: whether the input gave label times.
        windows: the :class:`Windows` itself when that was the input, else ``None``.
    """

    lot: np.ndarray
    start: np.ndarray
    end: np.ndarray
    label_time: np.ndarray
    has_label_time: bool
    windows: Windows | None

    def __len__(self) -> int:
        return int(self.start.shape[0])

    def describe(self, i: int) -> str:
        """``window 12 (lot 'L3', 2024-01-01T02:00:00 to 2024-01-01T03:00:00)``."""
        return f"window {i} (lot {self.lot[i]!r}, {iso(self.start[i])} to {iso(self.end[i])})"

    def example(self, i: int, **extra: Any) -> dict[str, Any]:
        """JSON-compatible facts about window ``i``, plus ``extra``."""
        facts: dict[str, Any] = {
            "window": int(i),
            "lot": _plain(self.lot[i]),
            "start": iso(self.start[i]),
            "end": iso(self.end[i]),
        }
        if self.has_label_time:
            facts["label_time"] = iso(self.label_time[i])
        return facts | extra


def iso(ns: int | np.integer) -> str:
    """ISO 8601 text of a time given as nanoseconds since the epoch."""
    return pd.Timestamp(int(ns)).isoformat()


def duration_text(value: pd.Timedelta) -> str:
    """A duration as a person writes it: ``0``, ``30 min``, ``2 h 30 min``, ``3 days``.

    >>> [duration_text(pd.Timedelta(v)) for v in ("0s", "30min", "150min", "3D", "90s")]
    ['0', '30 min', '2 h 30 min', '3 days', '1 min 30 s']
    """
    total = pd.Timedelta(value)
    if total == pd.Timedelta(0):
        return "0"
    parts = []
    c = total.components
    for amount, unit in ((c.days, "day"), (c.hours, "h"), (c.minutes, "min"), (c.seconds, "s")):
        if amount:
            parts.append(f"{amount} {unit}{'s' if unit == 'day' and amount != 1 else ''}")
    rest = total - pd.Timedelta(days=c.days, hours=c.hours, minutes=c.minutes, seconds=c.seconds)
    if rest or not parts:
        parts.append(f"{rest.value / 1e6:g} ms" if rest.value >= 1000 else f"{rest.value} ns")
    return " ".join(parts)


def _plain(value: Any) -> Any:
    """A numpy scalar as the matching Python scalar (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def window_times(x: Any, groups: Any = None) -> WindowTimes:
    """Check ``x`` (and ``groups``) and return its lots and times.

    Raises:
        ValueError: ``x`` has no window times, or ``groups`` differs from the lots.
        DataError: a column is missing, a time column is not datetime (numeric cycle times
            included) or has a missing value, a lot id is missing, or a window ends before it
            starts.
    """
    if isinstance(x, Windows):
        lot = np.asarray(x.lot)
        columns = {"start": x.start, "end": x.end, "label_time": x.label_time}
        source = "Windows"
    elif isinstance(x, pd.DataFrame):
        missing = [c for c in ("start", "end") if c not in x.columns]
        if "lot" not in x.columns and groups is None:
            missing.insert(0, "lot")
        if missing:
            raise DataError(
                f"the window table has no column(s) {missing} (found {list(x.columns)}); "
                f"{_WHAT_TO_PASS}; 'lot' may instead be given as groups",
                column=missing[0],
            )
        lot = x["lot"].to_numpy() if "lot" in x.columns else np.asarray(groups)
        columns = {c: x[c] for c in ("start", "end", "label_time") if c in x.columns}
        source = "DataFrame"
    else:
        raise ValueError(
            f"cannot split {type(x).__name__}: it has no window times; {_WHAT_TO_PASS}. "
            "With scikit-learn and a feature matrix as X, give the window times as groups "
            "(cross_val_score(..., groups=times)), bind them (LotTimeSplit(..., "
            "windows=times)), or pass cv=list(LotTimeSplit(...).split(windows))"
        )

    n = len(columns["start"])
    times = {name: _ns(name, values, source, n) for name, values in columns.items()}
    if lot.ndim != 1 or lot.shape[0] != n:
        raise ValueError(f"{source} has {n} windows but lot has shape {lot.shape}")
    lot = lot.astype(object)  # Python str / int ids: plain in messages and in JSON
    if (bad := np.flatnonzero(pd.isna(lot))).size:
        raise DataError(
            f"{source} window {bad[0]} has no lot id ({bad.size} such windows)", column="lot"
        )
    if (bad := np.flatnonzero(times["end"] < times["start"])).size:
        i = bad[0]
        raise DataError(
            f"{source} window {i} (lot {lot[i]!r}) ends at {iso(times['end'][i])}, before it "
            f"starts at {iso(times['start'][i])} ({bad.size} such windows)",
            lot=str(lot[i]),
        )
    if groups is not None:
        _check_groups(np.asarray(groups), lot, source)
    has_label_time = "label_time" in times
    return WindowTimes(
        lot=lot,
        start=times["start"],
        end=times["end"],
        label_time=times["label_time"] if has_label_time else times["end"],
        has_label_time=has_label_time,
        windows=x if isinstance(x, Windows) else None,
    )


def _ns(name: str, values: Any, source: str, n: int) -> np.ndarray:
    """A datetime column as ``int64`` nanoseconds (UTC for time-zone-aware columns)."""
    series = pd.Series(values) if not isinstance(values, pd.Series) else values
    if pd.api.types.is_numeric_dtype(series.dtype):
        raise DataError(
            f"{source} {name!r} holds numbers ({series.dtype}), not datetime64 times: windows "
            "indexed by cycle or step have no common clock across lots, so they cannot be "
            "split by time. Split such a fleet by lot only, e.g. with "
            "sklearn.model_selection.GroupKFold and groups=windows.lot",
            column=name,
        )
    if not pd.api.types.is_datetime64_any_dtype(series.dtype):
        raise DataError(
            f"{source} column {name!r} must hold datetime64 times, found dtype {series.dtype}; "
            "convert it with pandas.to_datetime",
            column=name,
        )
    if len(series) != n:
        raise ValueError(f"{source} has {n} window starts but {len(series)} values of {name!r}")
    if getattr(series.dt, "tz", None) is not None:
        series = series.dt.tz_convert("UTC").dt.tz_localize(None)
    if (bad := np.flatnonzero(series.isna().to_numpy())).size:
        raise DataError(
            f"{source} column {name!r} is missing at window {bad[0]} ({bad.size} such windows)",
            column=name,
        )
    return series.to_numpy(dtype="datetime64[ns]").astype(np.int64)


def _check_groups(groups: np.ndarray, lot: np.ndarray, source: str) -> None:
    if groups.shape != lot.shape:
        raise ValueError(
            f"groups has shape {groups.shape} but the {source} has {lot.shape[0]} windows; "
            "groups must be the lot of each window"
        )
    groups = groups.astype(object)  # Python scalars, as in messages
    same = groups == lot
    if (bad := np.flatnonzero(~same)).size:
        i = bad[0]
        raise ValueError(
            f"groups must equal the lot of each window, but at window {i} groups is "
            f"{groups[i]!r} and the lot is {lot[i]!r} ({bad.size} mismatching windows); "
            "leave groups out to use the lots"
        )


def parse_gap(gap: Any) -> pd.Timedelta:
    """``gap`` as a non-negative :class:`pandas.Timedelta`.

    Anything :class:`pandas.Timedelta` accepts is taken (``"2h"``, ``datetime.timedelta``,
    ``numpy.timedelta64``), except a bare non-zero number: pandas would read ``5`` as five
    nanoseconds, which is never what a plant engineer means.
    """
    reason = ""
    number = isinstance(gap, int | float | np.number) and not isinstance(gap, np.timedelta64)
    if isinstance(gap, bool) or (number and gap != 0):
        reason = "a bare number has no unit"
    else:
        try:
            value = pd.Timedelta(gap)
        except (TypeError, ValueError) as err:
            reason = f"pandas cannot read it as a duration ({err})"
        else:
            if pd.isna(value):
                reason = "it is not a time (NaT)"
            elif value < pd.Timedelta(0):
                reason = "it is negative"
            else:
                return value
    raise ValueError(
        f"gap must be a duration >= 0 such as '2h', '30min', a datetime.timedelta or a "
        f"numpy.timedelta64, found {gap!r}: {reason}"
    )
