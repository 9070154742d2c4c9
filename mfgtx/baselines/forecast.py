"""Forecast baselines: windows with horizon ``H > 0``, ``y (N, H, K)`` of the forecast columns.

Shape legend: ``n`` windows, ``T`` window length, ``H`` horizon, ``K`` forecast columns.

:class:`Naive` repeats the last observed value of each forecast column, :class:`SeasonalNaive`
repeats the window's last full period, :class:`TrainMeanForecast` predicts the training mean,
:class:`LinearRidge` fits one channel-independent linear map (NLinear style) by ridge regression.
The naive ones read the window's own rows ``row_start .. row_start + T - 1`` and never the
horizon rows; they need every forecast column to be a sensor (a target column has no values
inside the window). A value missing where one is needed falls back to the most recent
observed value in the window, then to the column's training mean. Forecasts are in the units
of ``y`` (unscaled), so a ``scaler`` passed to ``fit`` is checked and, except by
:class:`LinearRidge` (which fits in the scaler's units), otherwise unused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

import numpy as np

from mfgtx.baselines._base import Fitted, check_number, targets_of
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["LinearRidge", "Naive", "SeasonalNaive", "TrainMeanForecast", "forecast_baseline"]


class _Forecaster(Fitted):
    """Every forecast baseline knows the training mean of each forecast column."""

    task: ClassVar[str] = "forecast"

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Remember the mean of ``windows.y[train_idx]`` per forecast column."""
        idx = self._start_fit(windows, train_idx, scaler)
        self.mean_ = targets_of(windows, idx, "training").mean(axis=(0, 1))  # (K,)
        return self

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, H, K)`` forecasts of windows ``idx`` (each baseline its own way)."""
        raise NotImplementedError

    def state(self) -> dict[str, Any]:
        """The fitted baseline as strict JSON (``{"name": ..., "class": ..., ...}``), so a
        bundle can keep it and :func:`forecast_baseline` rebuild it without its training data."""
        if not hasattr(self, "mean_"):
            raise RuntimeError(f"{self.name} is not fitted yet; call fit(windows, train_idx) first")
        return {
            "name": self.name,
            "class": type(self).__name__,
            "params": self._params(),
            "fitted": {k: _json_array(getattr(self, k)) for k in self._fitted},
        }

    _fitted: ClassVar[tuple[str, ...]] = ("mean_",)

    def _params(self) -> dict[str, Any]:
        return {}


class TrainMeanForecast(_Forecaster):
    """Predicts each forecast column's mean over the training windows' horizons, every step.

    Works for any forecast column, sensor or target.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(2, "datetime64[ns]")
        >>> wave = np.array([0, 1, 2] * 6, np.float32)[:, None]  # period 3
        >>> starts = np.array([0, 9])  # windows of 6 rows, then 3 horizon rows
        >>> y = np.stack([wave[s + 6 : s + 9] for s in starts])  # (N, H, K)
        >>> w = Windows(values=wave, row_start=starts, lot=np.array(["A", "B"]), start=t, end=t,
        ...             label_time=t, y=y, sensors=("wave",), targets=("wave",), window=6,
        ...             stride=9, horizon=3)
        >>> TrainMeanForecast().fit(w, [0]).predict(w, [1])[0, :, 0].tolist()
        [1.0, 1.0, 1.0]
    """

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, H, K)`` training mean."""
        index = self._start_predict(windows, idx)
        return np.tile(self.mean_, (len(index), windows.horizon, 1))


class _InWindow(_Forecaster):
    """Shared by the naive forecasts: the forecast columns' values inside each window."""

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Check the forecast columns are sensors; remember their training means (fallback)."""
        not_sensors = [c for c in windows.targets if c not in windows.sensors]
        if not_sensors:
            raise ValueError(
                f"{self.name} repeats values of the forecast columns from inside the window, but "
                f"{not_sensors} {'is' if len(not_sensors) == 1 else 'are'} not a sensor "
                f"(sensors: {list(windows.sensors)}); use TrainMeanForecast for these"
            )
        return super().fit(windows, train_idx, scaler)

    def _window_values(self, windows: Windows, index: np.ndarray) -> np.ndarray:
        """``(n, T, K)`` unscaled values of the forecast columns in the windows' own rows."""
        missing = [c for c in windows.targets if c not in windows.sensors]
        if missing:
            raise ValueError(f"{self.name}: forecast columns {missing} are not sensors")
        cols = [windows.sensors.index(c) for c in windows.targets]
        rows = windows.row_start[index][:, None] + np.arange(windows.window)[None, :]  # (n, T)
        return windows.values[rows][:, :, cols].astype(np.float64)  # (n, T, K)

    def _last_observed(self, values: np.ndarray) -> np.ndarray:
        """``(n, K)`` most recent observed value per window and column, else the train mean."""
        observed = ~np.isnan(values)
        length = values.shape[1]
        last = length - 1 - np.argmax(observed[:, ::-1, :], axis=1)  # (n, K)
        out = np.take_along_axis(values, last[:, None, :], axis=1)[:, 0, :]
        none = ~observed.any(axis=1)
        out[none] = np.broadcast_to(self.mean_, out.shape)[none]
        return out


class Naive(_InWindow):
    """Repeats the last observed value of each forecast column for every horizon step.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(2, "datetime64[ns]")
        >>> vals = np.array([[1.0], [2.0], [np.nan], [9.0], [9.0]], np.float32)
        >>> w = Windows(values=vals, row_start=np.array([0, 1]), lot=np.array(["A", "A"]),
        ...             start=t, end=t, label_time=t, y=np.array([[[np.nan], [9.0]],
        ...             [[9.0], [9.0]]], np.float32), sensors=("s",), targets=("s",),
        ...             window=2, stride=1, horizon=2)
        >>> Naive().fit(w, [1]).predict(w, [1])[0, :, 0].tolist()  # row 2 is NaN -> row 1
        [2.0, 2.0]
    """

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, H, K)`` last observed in-window value, repeated."""
        index = self._start_predict(windows, idx)
        last = self._last_observed(self._window_values(windows, index))  # (n, K)
        return np.repeat(last[:, None, :], windows.horizon, axis=1)  # (n, H, K)


class SeasonalNaive(_InWindow):
    """Repeats the window's last full period: step ``h`` gets the value one period earlier.

    Horizon step ``h`` (0-based) takes the value at window position
    ``T - period + (h mod period)``; if that is missing, the same phase one, two, ... periods
    earlier in the window; then the most recent observed value; then the training mean.

    Args:
        period: season length in rows, at most the window length ``T``.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(2, "datetime64[ns]")
        >>> wave = np.array([0, 1, 2] * 6, np.float32)[:, None]  # period 3
        >>> starts = np.array([0, 9])  # windows of 6 rows, then 3 horizon rows
        >>> y = np.stack([wave[s + 6 : s + 9] for s in starts])  # (N, H, K)
        >>> w = Windows(values=wave, row_start=starts, lot=np.array(["A", "B"]), start=t, end=t,
        ...             label_time=t, y=y, sensors=("wave",), targets=("wave",), window=6,
        ...             stride=9, horizon=3)
        >>> SeasonalNaive(3).fit(w, [0]).predict(w, [1])[0, :, 0].tolist()
        [0.0, 1.0, 2.0]
    """

    def __init__(self, period: int) -> None:
        check_number("period", period, integer=True)
        self.period = period

    @property
    def name(self) -> str:
        return f"SeasonalNaive({self.period})"

    def _params(self) -> dict[str, Any]:
        return {"period": self.period}

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Check ``period <= T`` and the forecast columns; remember the training means."""
        if self.period > windows.window:
            raise ValueError(
                f"SeasonalNaive period {self.period} is longer than the window "
                f"({windows.window} rows); a window must hold one full period"
            )
        return super().fit(windows, train_idx, scaler)

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, H, K)`` last full period of the window, repeated."""
        index = self._start_predict(windows, idx)
        if self.period > windows.window:
            raise ValueError(f"period {self.period} > window {windows.window}")
        values = self._window_values(windows, index)  # (n, T, K)
        fallback = self._last_observed(values)  # (n, K)
        length = windows.window
        steps = []
        for h in range(windows.horizon):
            pos = length - self.period + h % self.period
            step = values[:, pos, :].copy()  # (n, K)
            for earlier in range(pos - self.period, -1, -self.period):
                gap = np.isnan(step)
                if not gap.any():
                    break
                step[gap] = values[:, earlier, :][gap]
            gap = np.isnan(step)
            step[gap] = fallback[gap]
            steps.append(step)
        return np.stack(steps, axis=1)  # (n, H, K)


class LinearRidge(_InWindow):
    """Channel-independent linear map from the lookback to the horizon (NLinear style).

    Every forecast column of every window is one sample: the last ``lookback`` values minus
    the last one are mapped by one shared linear map (plus intercept), fitted by ridge
    regression in closed form, to the horizon minus that same last value (Zeng et al.,
    "Are Transformers effective for time series forecasting?", AAAI 2023). With a ``scaler``
    the map is fitted in its units (per-column standardisation) and forecasts are mapped back.
    A missing value in the lookback is read as the most recent observed value of the window
    (then the training mean); training windows with a missing target step are left out.

    Args:
        lookback: steps of the window read, at most its length ``T`` (default: all of it).
        alpha: ridge penalty on the squared weights, ``> 0``.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(8, "datetime64[ns]")
        >>> ramp = np.arange(20, dtype=np.float32)[:, None]  # a straight line
        >>> starts = np.arange(8)  # windows of 4 rows, then 2 horizon rows
        >>> y = np.stack([ramp[s + 4 : s + 6] for s in starts])
        >>> w = Windows(values=ramp, row_start=starts, lot=np.array(["A"] * 8), start=t, end=t,
        ...             label_time=t, y=y, sensors=("x",), targets=("x",), window=4, stride=1,
        ...             horizon=2)
        >>> LinearRidge(alpha=1e-6).fit(w, range(6)).predict(w, [7])[0, :, 0].round(3).tolist()
        [11.0, 12.0]
    """

    def __init__(self, lookback: int | None = None, alpha: float = 1.0) -> None:
        if lookback is not None:
            check_number("lookback", lookback, integer=True)
        check_number("alpha", alpha)
        self.lookback = lookback
        self.alpha = float(alpha)

    @property
    def name(self) -> str:
        return "LinearRidge" if self.lookback is None else f"LinearRidge({self.lookback})"

    _fitted = ("mean_", "lookback_", "center_", "scale_", "weight_", "bias_")

    def _params(self) -> dict[str, Any]:
        return {"lookback": self.lookback, "alpha": self.alpha}

    def _units(self, windows: Windows, scaler: SensorScaler | None) -> tuple[np.ndarray, ...]:
        """Centre and scale ``(K,)`` of the forecast columns (0 and 1 without a scaler)."""
        k = len(windows.targets)
        if scaler is None:
            return np.zeros(k), np.ones(k)
        cols = [windows.sensors.index(c) for c in windows.targets]
        return np.asarray(scaler.center)[cols], np.asarray(scaler.scale)[cols]

    def _inputs(self, windows: Windows, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(n, K, lookback)`` lookback minus its last value, and that last value ``(n, K)``."""
        values = self._window_values(windows, index)[:, -self.lookback_ :, :]  # (n, T', K)
        last = self._last_observed(values)  # (n, K)
        values = np.where(np.isnan(values), last[:, None, :], values)
        values = (values - self.center_) / self.scale_
        last = (last - self.center_) / self.scale_
        return (values - last[:, None, :]).transpose(0, 2, 1), last

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Fit the shared map on the training windows (in chunks: memory stays small)."""
        super().fit(windows, train_idx, scaler)
        if self.lookback is not None and self.lookback > windows.window:
            raise ValueError(
                f"LinearRidge lookback {self.lookback} is longer than the window "
                f"({windows.window} rows)"
            )
        self.lookback_ = self.lookback or windows.window
        self.center_, self.scale_ = self._units(windows, scaler)
        m = self.lookback_
        xtx, xty = np.zeros((m + 1, m + 1)), np.zeros((m + 1, windows.horizon))
        used = 0
        for a in range(0, len(self.train_idx_), 1024):
            idx = self.train_idx_[a : a + 1024]
            x, last = self._inputs(windows, idx)  # (n, K, m), (n, K)
            y = (targets_of(windows, idx, "training") - self.center_) / self.scale_  # (n, H, K)
            y = (y - last[:, None, :]).transpose(0, 2, 1).reshape(-1, windows.horizon)
            x = x.reshape(-1, m)
            keep = ~np.isnan(y).any(axis=1)
            x1 = np.concatenate([x[keep], np.ones((int(keep.sum()), 1))], axis=1)  # (r, m+1)
            xtx += x1.T @ x1
            xty += x1.T @ y[keep]
            used += int(keep.sum())
        if used == 0:
            raise ValueError(f"{self.name}: every training window has a missing target step")
        penalty = np.eye(m + 1) * self.alpha
        penalty[m, m] = 0.0  # the intercept is not shrunk
        coef = np.linalg.solve(xtx + penalty, xty)  # (m+1, H)
        self.weight_, self.bias_ = coef[:m], coef[m]
        return self

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, H, K)`` forecasts in the units of ``y``."""
        index = self._start_predict(windows, idx)
        if self.lookback_ > windows.window:
            raise ValueError(f"lookback {self.lookback_} > window {windows.window}")
        x, last = self._inputs(windows, index)  # (n, K, m)
        out = x @ self.weight_ + self.bias_ + last[:, :, None]  # (n, K, H)
        return out.transpose(0, 2, 1) * self.scale_ + self.center_  # (n, H, K)


_CLASSES: dict[str, type[_Forecaster]] = {
    c.__name__: c for c in (Naive, SeasonalNaive, LinearRidge, TrainMeanForecast)
}


def _json_array(value: Any) -> Any:
    """A fitted attribute as JSON: arrays as nested lists of floats."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float64).tolist()
    return value.item() if isinstance(value, np.generic) else value


def forecast_baseline(state: Mapping[str, Any]) -> _Forecaster:
    """The fitted forecast baseline that :meth:`state` wrote, ready to ``predict``.

    Raises:
        ValueError: ``state`` is not a forecast baseline's state (names what is wrong).

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(8, "datetime64[ns]")
        >>> ramp = np.arange(20, dtype=np.float32)[:, None]
        >>> starts = np.arange(8)
        >>> y = np.stack([ramp[s + 4 : s + 6] for s in starts])
        >>> w = Windows(values=ramp, row_start=starts, lot=np.array(["A"] * 8), start=t, end=t,
        ...             label_time=t, y=y, sensors=("x",), targets=("x",), window=4, stride=1,
        ...             horizon=2)
        >>> fitted = LinearRidge(alpha=1e-6).fit(w, range(6))
        >>> again = forecast_baseline(fitted.state())
        >>> bool(np.allclose(again.predict(w, [7]), fitted.predict(w, [7])))
        True
    """
    try:
        cls = _CLASSES[state["class"]]
        baseline = cls(**dict(state.get("params") or {}))
        fitted = dict(state["fitted"])
        for key in cls._fitted:
            value = fitted[key]
            array = isinstance(value, list)
            setattr(baseline, key, np.asarray(value, np.float64) if array else value)
    except (KeyError, TypeError) as e:
        raise ValueError(f"not a forecast baseline's state: missing or wrong {e}") from e
    baseline.train_idx_ = np.zeros(0, np.int64)  # fitted elsewhere: no training windows here
    baseline.n_windows_ = 0
    return baseline
