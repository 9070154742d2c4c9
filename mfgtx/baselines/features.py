"""Window summary features: seven statistics per sensor, from the window's own rows only.

Shape legend: ``n`` windows, ``T`` window length, ``C`` sensors, ``F = 7 * C`` features.

Per sensor, over the observed (non-missing) values of the window, in this order
(:data:`SUMMARY_STATS`): ``last`` (the most recent observed value), ``mean``, ``std``
(population, ``ddof=0``), ``min``, ``max``, ``slope`` (least-squares slope against the time
step ``0..T-1``, i.e. per row, not per second) and ``missing`` (fraction of the ``T`` values
missing). The columns run sensor by sensor: ``s0__last, s0__mean, ..., s0__missing, s1__last``.

Leakage-free by construction: the values come from :meth:`Windows.features`, which reads rows
``row_start .. row_start + T - 1`` of each window and nothing else (not the horizon rows, not
the next window, not another lot), and any statistic needed to fill a gap comes from the
training windows (see :func:`summary_features`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

from mfgtx.baselines._base import as_indices, check_scaler
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["SUMMARY_STATS", "summary_cache", "summary_feature_names", "summary_features"]

SUMMARY_STATS: tuple[str, ...] = ("last", "mean", "std", "min", "max", "slope", "missing")
#: Values of one window chunk in :func:`summary_features` (8 bytes each in float64).
_CHUNK_VALUES = 1 << 23
#: Positions (in :data:`SUMMARY_STATS`) of the statistics a wholly missing sensor fills in.
_FILLED = (0, 1, 3, 4)

#: What :func:`summary_cache` keeps: ``{(id(windows), id(scaler)): (windows, scaler,
#: features (N, F), computed (N,))}``, ``None`` outside it.
_CACHE: ContextVar[dict[tuple[int, int], tuple[Windows, object, np.ndarray, np.ndarray]] | None]
_CACHE = ContextVar("mfgtx_summary_cache", default=None)


@contextmanager
def summary_cache() -> Iterator[None]:
    """Within it, :func:`summary_features` computes each window's statistics once per
    ``(windows, scaler)`` and reuses them, whatever the training set's ``fill``.

    Judging a model fits several baselines on overlapping windows (each on the training
    windows, a ridge per ensemble member on its own lots): without the cache a window of a
    fleet was summarised a dozen times. The features (``N x F`` float64 for the ``N``
    windows asked about) are freed when the block ends; the results are the same as
    without it, bit for bit.
    """
    token = _CACHE.set({})
    try:
        yield
    finally:
        _CACHE.reset(token)


def summary_feature_names(sensors: Sequence[str]) -> tuple[str, ...]:
    """Column names of :func:`summary_features`, ``f"{sensor}__{stat}"``.

    >>> summary_feature_names(["temp"])[:3]
    ('temp__last', 'temp__mean', 'temp__std')
    """
    return tuple(f"{s}__{stat}" for s in sensors for stat in SUMMARY_STATS)


def summary_features(
    windows: Windows,
    idx: Sequence[int] | np.ndarray,
    scaler: SensorScaler | None = None,
    *,
    fill: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Seven summary statistics per sensor of the given windows, ``(n, 7 * C)`` float64.

    NaN-safe: statistics use the observed values only. A sensor with a single observed value
    in a window has ``std`` and ``slope`` 0. A sensor with no observed value in a window gets
    ``fill`` for ``last``, ``mean``, ``min`` and ``max``, 0 for ``std`` and ``slope``, and
    ``missing`` = 1 says so.

    Args:
        windows: the windows.
        idx: which windows.
        scaler: a :class:`~mfgtx.data.SensorScaler` fitted on the training windows; the
            statistics are then in scaled units.
        fill: ``(C,)`` per-sensor value for a sensor with no observed value in a window: the
            training mean (the baselines pass it). Default: 0 with a scaler (its centre, the
            training mean or median), NaN without one.

    Returns:
        ``(n, 7 * C)`` features, columns named by :func:`summary_feature_names`.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(1, "datetime64[ns]")
        >>> w = Windows(values=np.array([[1.0], [np.nan], [3.0], [99.0]], dtype=np.float32),
        ...             row_start=np.array([0]), lot=np.array(["A"]), start=t, end=t,
        ...             label_time=t, y=None, sensors=("s",), targets=(), window=3, stride=1,
        ...             horizon=0)
        >>> summary_feature_names(w.sensors)
        ('s__last', 's__mean', 's__std', 's__min', 's__max', 's__slope', 's__missing')
        >>> summary_features(w, [0]).round(3).tolist()  # row 3 (99.0) is not in the window
        [[3.0, 2.0, 1.0, 1.0, 3.0, 1.0, 0.333]]
    """
    check_scaler(scaler, windows)
    index = as_indices(idx, len(windows), "summary_features: idx")
    n_sensors = len(windows.sensors)
    if fill is None:
        fill_arr = np.full(n_sensors, 0.0 if scaler is not None else np.nan)
    else:
        fill_arr = np.asarray(fill, dtype=np.float64)
        if fill_arr.shape != (n_sensors,):
            raise ValueError(
                f"fill must hold one value per sensor ({n_sensors}: {list(windows.sensors)}), "
                f"found shape {fill_arr.shape}"
            )
    cache = _CACHE.get()
    if cache is None:
        raw = _unfilled(windows, index, scaler)
    else:
        key = (id(windows), id(scaler))
        entry = cache.get(key)
        if entry is None or entry[0] is not windows or entry[1] is not scaler:
            width = n_sensors * len(SUMMARY_STATS)
            entry = (windows, scaler, np.empty((len(windows), width)), np.zeros(len(windows), bool))
            cache[key] = entry
        _, _, store, done = entry
        todo = np.unique(index[~done[index]])
        if todo.size:
            store[todo] = _unfilled(windows, todo, scaler)
            done[todo] = True
        raw = store[index]
    return _fill(raw, n_sensors, fill_arr)


def _unfilled(windows: Windows, index: np.ndarray, scaler: SensorScaler | None) -> np.ndarray:
    """The features of the windows ``index``, a wholly missing sensor's left as NaN."""
    # a few thousand windows at a time: each (n, T, C) float64 temporary stays near 64 MB,
    # where a whole fleet of long history windows at once needs gigabytes
    chunk = max(1, _CHUNK_VALUES // max(1, windows.window * len(windows.sensors)))
    if len(index) == 0:
        return np.empty((0, len(windows.sensors) * len(SUMMARY_STATS)))
    parts = [_summary(windows, index[a : a + chunk], scaler)
             for a in range(0, len(index), chunk)]  # fmt: skip
    return np.concatenate(parts)


def _fill(raw: np.ndarray, n_sensors: int, fill_arr: np.ndarray) -> np.ndarray:
    """``raw`` (owned: changed in place) with ``fill_arr`` where a sensor had no observed value
    in its window (``missing`` is 1 exactly there: no observed value of ``T``)."""
    stats = raw.reshape(len(raw), n_sensors, len(SUMMARY_STATS))
    none = stats[:, :, -1] == 1.0  # (n, C)
    if none.any():
        fill = np.broadcast_to(fill_arr, none.shape)[none]
        for k in _FILLED:
            stats[:, :, k][none] = fill
    return raw


def _summary(windows: Windows, index: np.ndarray, scaler: SensorScaler | None) -> np.ndarray:
    """The features of the windows ``index`` (validated), at once; NaN where :func:`_fill`
    fills."""
    n_sensors = len(windows.sensors)
    x32, obs = windows.features(index, scaler)  # (n, T, C), missing already 0 in x
    x = x32.astype(np.float64)
    length = windows.window
    count = obs.sum(axis=1)  # (n, C)
    none = count == 0
    denom = np.maximum(count, 1)
    mean = x.sum(axis=1) / denom  # (n, C); missing entries are 0 in x
    dev = np.where(obs, x - mean[:, None, :], 0.0)  # (n, T, C)
    std = np.sqrt((dev**2).sum(axis=1) / denom)
    low = np.where(obs, x, np.inf).min(axis=1)
    high = np.where(obs, x, -np.inf).max(axis=1)
    last_pos = length - 1 - np.argmax(obs[:, ::-1, :], axis=1)  # (n, C) last observed step
    last = np.take_along_axis(x, last_pos[:, None, :], axis=1)[:, 0, :]
    steps = np.arange(length, dtype=np.float64)[None, :, None]  # (1, T, 1)
    t_mean = np.where(obs, steps, 0.0).sum(axis=1) / denom  # (n, C)
    t_dev = np.where(obs, steps - t_mean[:, None, :], 0.0)  # (n, T, C)
    t_var = (t_dev**2).sum(axis=1)
    slope = np.divide((t_dev * dev).sum(axis=1), t_var, out=np.zeros_like(t_var), where=t_var > 0)
    missing = 1.0 - count / length
    for stat in (last, mean, low, high):  # std and slope are already 0 there
        stat[none] = np.nan
    stats = np.stack([last, mean, std, low, high, slope, missing], axis=2)  # (n, C, 7)
    return stats.reshape(len(index), n_sensors * len(SUMMARY_STATS))  # (n, F) sensor-major


def training_fill(
    windows: Windows, train_idx: np.ndarray, scaler: SensorScaler | None
) -> np.ndarray:
    """``(C,)`` mean of each sensor over the training windows' rows (scaled if ``scaler``).

    A sensor never observed in those rows gets 0.
    """
    rows = windows.rows(train_idx)
    values = windows.values[rows].astype(np.float64)  # (r, C)
    if scaler is not None:
        values = scaler.transform(values).astype(np.float64)
    observed = ~np.isnan(values)
    total = np.where(observed, values, 0.0).sum(axis=0)
    count = observed.sum(axis=0)
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0)


class SummaryInputs:
    """Summary features with the scaler and the fill value of one training set."""

    def __init__(self, windows: Windows, train_idx: np.ndarray, scaler: SensorScaler | None):
        self.scaler = scaler
        self.fill = training_fill(windows, train_idx, scaler)

    def __call__(self, windows: Windows, idx: np.ndarray) -> np.ndarray:
        return summary_features(windows, idx, self.scaler, fill=self.fill)
