"""The default set of baselines per task, and fitting them all on one training set."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from mfgtx.baselines._base import Baseline, check_number, check_task, check_windows
from mfgtx.baselines.classification import (
    GradientBoostingClassifier,
    LogisticRegression,
    MajorityClass,
)
from mfgtx.baselines.forecast import LinearRidge, Naive, SeasonalNaive, TrainMeanForecast
from mfgtx.baselines.regression import GradientBoosting, Ridge, TrainMean
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["default_baselines", "fit_baselines"]


def default_baselines(task: str, *, period: int | None = None) -> tuple[Baseline, ...]:
    """Unfitted default baselines for ``task``.

    ``"regression"``: TrainMean, Ridge, GradientBoosting. ``"classification"``: MajorityClass,
    LogisticRegression, GradientBoostingClassifier (unweighted, so their probabilities stay
    calibrated; add ``LogisticRegression(class_weight="balanced")`` yourself for rare
    failures). ``"forecast"``: Naive, SeasonalNaive(period) when a ``period`` is given,
    LinearRidge (a channel-independent linear map of the window, NLinear-style: a forecaster
    that does not beat it is not worth its cost), TrainMeanForecast.

    >>> [b.name for b in default_baselines("forecast", period=24)]
    ['Naive', 'SeasonalNaive(24)', 'LinearRidge', 'TrainMeanForecast']
    """
    check_task(task)
    if period is not None:
        if task != "forecast":
            raise ValueError(f"period is for forecast baselines, found task={task!r}")
        check_number("period", period, integer=True)
    if task == "regression":
        return (TrainMean(), Ridge(), GradientBoosting())
    if task == "classification":
        return (MajorityClass(), LogisticRegression(), GradientBoostingClassifier())
    seasonal = (SeasonalNaive(period),) if period is not None else ()
    return (Naive(), *seasonal, LinearRidge(), TrainMeanForecast())


def fit_baselines(
    windows: Windows,
    train_idx: Sequence[int] | np.ndarray,
    task: str,
    scaler: SensorScaler | None = None,
    period: int | None = None,
) -> tuple[Baseline, ...]:
    """:func:`default_baselines` fitted on ``windows[train_idx]``, ready for :func:`compare`.

    Forecasts of columns that are not sensors leave out the in-window baselines (Naive,
    SeasonalNaive, LinearRidge: the window holds no past of those columns) with a warning.
    """
    check_task(task)
    check_windows(windows, task, "fit_baselines")
    chosen = default_baselines(task, period=period)
    if task == "forecast":
        not_sensors = [c for c in windows.targets if c not in windows.sensors]
        if not_sensors:
            warnings.warn(
                f"forecast columns {not_sensors} are not sensors, so Naive, SeasonalNaive and "
                "LinearRidge are left out; only TrainMeanForecast is fitted",
                UserWarning,
                stacklevel=2,
            )
            chosen = tuple(b for b in chosen if isinstance(b, TrainMeanForecast))
    return tuple(b.fit(windows, train_idx, scaler) for b in chosen)
