"""The audit's scaler check: recompute what a scaler holds from the training rows.

Shape legend: ``R`` table rows, ``r`` rows of one set, ``C`` sensors.

A scaler's own record of the rows it was fitted on proves nothing: a record can be copied
from an honest scaler, or be absent. So the check recomputes the statistics the scaler holds,
centre and scale per sensor, from the training rows and compares them:

* :class:`mfgtx.data.SensorScaler`: ``standard`` mean and standard deviation, ``robust``
  median and interquartile range / 1.349;
* any object with ``mean_`` and ``scale_`` (scikit-learn's ``StandardScaler``): mean and
  standard deviation;
* any object with ``center_`` and ``scale_`` (``RobustScaler``): median and the spread between
  the ``quantile_range`` percentiles (default 25-75), divided by that spread of a standard
  normal when ``unit_variance`` is set.

Training rows count once each, or once per training window that reads them (a scaler fitted
on stacked window features); a standard deviation may be the population one (``ddof=0``, as
both libraries hold) or the sample one (``ddof=1``, pandas' default, for hand-made scalers);
a sensor without spread may hold scale 1. A ``SensorScaler``
whose record (``fit_rows``) lists training rows only also passes when its statistics equal
those of the recorded rows (a scaler fitted on part of the training set). Anything else fails,
and the detail says which other rows (all rows, training + test, ...) the statistics match.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows
from mfgtx.split._times import WindowTimes

__all__ = ["ScalerStatistics", "held_statistics", "scaler_check"]


@dataclass(frozen=True)
class ScalerStatistics:
    """What a scaler holds, per sensor of the windows it is checked against.

    Attributes:
        kind: a name for messages, e.g. ``"StandardScaler (mean_, scale_)"``.
        columns: ``(k,)`` positions in ``windows.sensors`` of the scaler's features.
        center: ``(k,)`` its centres, or ``None`` if it keeps none.
        scale: ``(k,)`` its scales, or ``None`` if it keeps none.
        robust: median and percentile spread (``True``) or mean and standard deviation.
        quantiles: the percentiles of the spread (robust only).
        divisor: the spread is divided by this (1.349 for a robust SensorScaler).
        record: ``(m,)`` table rows the scaler says it was fitted on, or ``None``.
    """

    kind: str
    columns: np.ndarray
    center: np.ndarray | None
    scale: np.ndarray | None
    robust: bool
    quantiles: tuple[float, float] = (25.0, 75.0)
    divisor: float = 1.0
    record: np.ndarray | None = None


_SUPPORTED = (
    "a mfgtx.data.SensorScaler, or an object with mean_ and scale_ (mean and standard "
    "deviation, e.g. sklearn.preprocessing.StandardScaler) or center_ and scale_ (median and "
    "interquartile range, e.g. RobustScaler)"
)


def _columns(scaler: Any, names: Any, n_features: int, windows: Windows) -> np.ndarray:
    """Positions in ``windows.sensors`` of the scaler's features (by name where it has them)."""
    sensors = list(windows.sensors)
    if names is not None:
        names = [str(v) for v in names]
        missing = [v for v in names if v not in sensors]
        if missing:
            raise ValueError(
                f"the scaler was fitted on columns {missing} that are not sensors of the "
                f"windows {sensors}: the audit cannot recompute its statistics"
            )
        return np.array([sensors.index(v) for v in names], dtype=np.int64)
    if n_features != len(sensors):
        raise ValueError(
            f"the {type(scaler).__name__} holds {n_features} features but the windows have "
            f"{len(sensors)} sensors {sensors}; the audit checks scalers fitted per sensor on "
            "the table rows (fit it on a DataFrame with the sensor names to match by name)"
        )
    return np.arange(n_features, dtype=np.int64)


def _vector(value: Any) -> np.ndarray | None:
    return None if value is None else np.asarray(value, dtype=np.float64).reshape(-1)


def held_statistics(scaler: Any, windows: Windows) -> ScalerStatistics:
    """Read what ``scaler`` holds; raise ``ValueError`` for an unknown or unfitted one."""
    name = type(scaler).__name__
    if isinstance(scaler, SensorScaler):
        record = scaler.fitted_rows() if scaler.fit_rows else None
        return ScalerStatistics(
            kind=f"sensor scaling ({scaler.method})",
            columns=_columns(scaler, scaler.sensors, len(scaler.sensors), windows),
            center=_vector(scaler.center),
            scale=_vector(scaler.scale),
            robust=scaler.method == "robust",
            divisor=1.349 if scaler.method == "robust" else 1.0,
            record=record,
        )
    names = getattr(scaler, "feature_names_in_", None)
    if hasattr(scaler, "mean_") and hasattr(scaler, "scale_"):
        center, scale = _vector(scaler.mean_), _vector(scaler.scale_)
        robust, kind = False, f"{name} (mean_, scale_)"
    elif hasattr(scaler, "center_") and hasattr(scaler, "scale_"):
        center, scale = _vector(scaler.center_), _vector(scaler.scale_)
        robust, kind = True, f"{name} (center_, scale_)"
    elif hasattr(scaler, "fit") and any(
        hasattr(scaler, a) for a in ("with_mean", "with_centering")
    ):
        raise ValueError(f"the {name} is not fitted: fit it on the training rows first")
    else:
        raise ValueError(f"cannot audit a scaler of type {name}: expected {_SUPPORTED}")
    held = center if center is not None else scale
    if held is None:
        raise ValueError(f"the {name} holds neither a centre nor a scale: nothing to check")
    n = len(held)
    quantiles = tuple(float(q) for q in getattr(scaler, "quantile_range", (25.0, 75.0)))
    divisor = 1.0
    if robust and getattr(scaler, "unit_variance", False):
        normal = NormalDist()
        divisor = normal.inv_cdf(quantiles[1] / 100) - normal.inv_cdf(quantiles[0] / 100)
    return ScalerStatistics(
        kind=kind,
        columns=_columns(scaler, names, n, windows),
        center=center,
        scale=scale,
        robust=robust,
        quantiles=(quantiles[0], quantiles[1]),
        divisor=divisor,
    )


# --- statistics of a set of rows --------------------------------------------------------------


def _weighted_percentiles(x: np.ndarray, w: np.ndarray, qs: tuple[float, ...]) -> list[float]:
    """``numpy.percentile(np.repeat(x, w), qs)`` (linear method) without repeating."""
    order = np.argsort(x, kind="stable")
    x, cum = x[order], np.cumsum(w[order])  # cum[i]: repeated copies up to item i
    n = int(cum[-1])
    out = []
    for q in qs:
        pos = q / 100.0 * (n - 1)
        lo, hi = int(np.floor(pos)), int(np.ceil(pos))
        a = x[np.searchsorted(cum, lo, side="right")]
        b = x[np.searchsorted(cum, hi, side="right")]
        out.append(float(a + (b - a) * (pos - lo)))
    return out


def _statistics(
    held: ScalerStatistics,
    windows: Windows,
    rows: np.ndarray,
    weights: np.ndarray | None,
    ddof: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Centre, spread and magnitude (largest absolute value) per scaler column of ``rows``,
    each ``(k,)``; NaN where a sensor has no observed value there (or, with ``ddof=1``, a
    single one)."""
    values = windows.values[rows][:, held.columns].astype(np.float64)  # (r, k)
    k = held.columns.size
    center, spread, size = np.full(k, np.nan), np.full(k, np.nan), np.full(k, np.nan)
    for j in range(k):
        ok = ~np.isnan(values[:, j])
        x = values[ok, j]
        if x.size == 0:
            continue
        w = np.ones(x.size) if weights is None else weights[ok].astype(np.float64)
        size[j] = np.abs(x).max()
        if held.robust:
            lo, med, hi = _weighted_percentiles(x, w, (held.quantiles[0], 50.0, held.quantiles[1]))
            center[j], spread[j] = med, (hi - lo) / held.divisor
        else:
            center[j] = np.average(x, weights=w)
            n = w.sum() - ddof
            if n > 0:
                spread[j] = np.sqrt(np.sum(w * (x - center[j]) ** 2) / n)
    return center, spread, size


@dataclass(frozen=True)
class _Fit:
    matches: bool
    worst: int  # column with the largest relative difference
    difference: float  # that difference, in units of the recomputed spread
    center: np.ndarray
    spread: np.ndarray


def _compare(held: ScalerStatistics, stats: tuple[np.ndarray, np.ndarray, np.ndarray]) -> _Fit:
    """Whether the held centre and scale are those of ``stats``, to the rounding of float32
    data (about 8 units in the last place of the largest value)."""
    center, spread, size = stats
    unit = np.where(np.isfinite(spread) & (spread > 0), spread, 1.0)  # differences in scales
    tol = 1e-6 * np.nan_to_num(size, nan=0.0) + 1e-7 * unit
    ok = np.ones(center.size, dtype=bool)
    apart = np.zeros(center.size)  # the largest difference per sensor, in scales
    if held.center is not None:
        d = np.abs(held.center - center)
        ok &= np.where(np.isnan(center), np.isnan(held.center), d <= tol)
        apart = np.maximum(apart, np.nan_to_num(d / unit, nan=np.inf))
    if held.scale is not None:  # a sensor without spread may hold scale 1 (both libraries do)
        constant = np.nan_to_num(spread, nan=0.0) <= 1e-6 * np.maximum(1.0, np.abs(center))
        d = np.abs(held.scale - spread)
        fits = (d <= tol) | (constant & (held.scale == 1.0))
        ok &= np.where(np.isnan(spread), np.isnan(held.scale), fits)
        apart = np.maximum(apart, np.nan_to_num(d / unit, nan=np.inf))
    worst = int(np.argmax(np.where(ok, -1.0, apart))) if not ok.all() else int(np.argmax(apart))
    return _Fit(bool(ok.all()), worst, float(apart[worst]), center, spread)


def _window_weights(windows: Windows, idx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows read by the windows ``idx`` and how many of them read each row."""
    starts = windows.row_start[idx]
    diff = np.zeros(windows.values.shape[0] + 1, dtype=np.int64)
    np.add.at(diff, starts, 1)
    np.add.at(diff, starts + windows.lengths[idx], -1)
    counts = np.cumsum(diff[:-1])  # (R,)
    rows = np.flatnonzero(counts)
    return rows, counts[rows]


def _fmt(v: float) -> str:
    return f"{v:.6g}"


def scaler_check(
    scaler: Any, times: WindowTimes, sets: dict[str, np.ndarray]
) -> tuple[bool, str, tuple[dict[str, Any], ...]]:
    """Run the scaler check; returns ``(passed, detail, examples)``.

    Args:
        scaler: see the module docstring.
        times: the audited windows' times; ``times.windows`` must be the
            :class:`~mfgtx.data.Windows` (it has the rows).
        sets: every set's window positions, ``train`` first.

    Raises:
        ValueError: an unknown or unfitted scaler, or one whose features are not the sensors.
    """
    windows = times.windows
    assert windows is not None  # the audit checked it
    held = held_statistics(scaler, windows)
    train_idx = sets["train"]
    train_rows = windows.rows(train_idx)
    what = f"the {held.kind}"
    if held.record is not None:
        extra = np.setdiff1d(held.record, train_rows)
        if extra.size:
            parts, examples = _readers(times, extra, sets)
            detail = (
                f"{what} records fitting on {held.record.size} rows, {extra.size} of them not "
                "training rows: " + "; ".join(parts) + ". Refit it on the training rows only"
            )
            return False, detail, examples

    unique = _compare(held, _statistics(held, windows, train_rows, None))
    read_rows, counts = _window_weights(windows, train_idx)
    readings = (
        (f"the {train_rows.size} training rows", train_rows, None),
        (
            f"the training rows as the {train_idx.size} training windows read them (each row "
            "once per window)",
            read_rows,
            counts,
        ),
    )
    # a hand-made scaler may hold the sample standard deviation (pandas' default, ddof=1)
    for ddof in (0,) if held.robust else (0, 1):
        for label, rows, weights in readings:
            if ddof == 0 and weights is None:
                fit = unique
            else:
                fit = _compare(held, _statistics(held, windows, rows, weights, ddof))
            if fit.matches:
                kind = " (sample standard deviation, ddof=1)" if ddof else ""
                return True, f"{what} holds the statistics{kind} of {label}, recomputed", ()
    if held.record is not None and held.record.size:
        own = _compare(held, _statistics(held, windows, held.record, None))
        if own.matches:
            return (
                True,
                (
                    f"{what} holds the statistics of the {held.record.size} rows it records "
                    f"(fit_rows), all of them training rows, recomputed from them"
                ),
                (),
            )

    j = unique.worst
    sensor = windows.sensors[int(held.columns[j])]
    held_c = "-" if held.center is None else _fmt(held.center[j])
    held_s = "-" if held.scale is None else _fmt(held.scale[j])
    examples = (
        {
            "sensor": sensor,
            "scaler_center": None if held.center is None else float(held.center[j]),
            "scaler_scale": None if held.scale is None else float(held.scale[j]),
            "train_center": float(unique.center[j]),
            "train_scale": float(unique.spread[j]),
        },
    )
    found = _explain(held, windows, sets)
    record = (
        ""
        if held.record is None
        else f"; its record (fit_rows) names {held.record.size} training rows, whose "
        "statistics differ from it too: the record is not how it was fitted"
    )
    detail = (
        f"{what} does not hold the statistics of the {train_rows.size} training rows: sensor "
        f"{sensor!r} has centre {held_c} and scale {held_s} where the training rows give "
        f"{_fmt(unique.center[j])} and {_fmt(unique.spread[j])} ({_fmt(unique.difference)} "
        f"of a scale apart){record}. {found} Refit it on the training rows only"
    )
    return False, detail, examples


def _explain(held: ScalerStatistics, windows: Windows, sets: dict[str, np.ndarray]) -> str:
    """Which other rows the scaler's statistics are those of, among the usual leaks."""
    candidates = [
        (f"train and {' and '.join(combo)} windows", [sets["train"], *(sets[n] for n in combo)])
        for combo in (("val",), ("test",), ("val", "test"))
        if all(n in sets and sets[n].size for n in combo)
    ]
    candidates.append(("every window", [np.arange(len(windows))]))
    for label, parts in candidates:
        rows = windows.rows(np.concatenate(parts))
        if _compare(held, _statistics(held, windows, rows, None)).matches:
            return f"They are those of the rows of the {label}: it saw rows outside training."
    every = np.arange(windows.values.shape[0])
    if _compare(held, _statistics(held, windows, every, None)).matches:
        return "They are those of every row of the table: it saw every set."
    return (
        "They match neither the training rows, counted once or per window, nor the training "
        "plus validation or test rows, nor every row: it was fitted on other data or on part "
        "of the training rows without recording which (SensorScaler.fit records them)."
    )


def _readers(
    times: WindowTimes, extra: np.ndarray, sets: dict[str, np.ndarray]
) -> tuple[list[str], tuple[dict[str, Any], ...]]:
    """Which sets' windows read the non-training rows ``extra`` (sorted), for messages."""
    windows = times.windows
    assert windows is not None
    parts: list[str] = []
    examples: list[dict[str, Any]] = []
    covered = np.zeros(extra.size, dtype=bool)
    for name, idx in sets.items():
        if name == "train" or not idx.size:
            continue
        starts = windows.row_start[idx]
        ends = starts + windows.lengths[idx]
        hits = np.searchsorted(extra, ends) - np.searchsorted(extra, starts)
        users = idx[hits > 0]
        if users.size:
            rows = np.isin(extra, windows.rows(users))
            covered |= rows
            lots = list(pd.unique(times.lot[users]))
            shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in lots[:5])
            more = f" and {len(lots) - 5} more" if len(lots) > 5 else ""
            parts.append(f"{rows.sum()} covered by {name} windows of lots {shown}{more}")
            examples += [times.example(i, set=name) for i in users[:2]]
    if (~covered).any():
        parts.append(
            f"{int((~covered).sum())} covered by no window (e.g. row {extra[~covered][0]})"
        )
    return parts, tuple(examples[:5])
