"""A conformalized baseline interval, so a model's band width is judged fairly.

Shape legend: ``n`` windows, ``K`` targets, ``H`` horizon, ``C`` channels.

A band is only as good as it is narrow *at the coverage it holds*: a model whose 80 % band
holds 80 % but is twice as wide as a ridge's conformal band is no better at intervals. The
ridge of the task's baselines (:class:`~mfgtx.baselines.Ridge` on window summaries for
regression, :class:`~mfgtx.baselines.LinearRidge` for forecasts) gets a split-conformal
interval (:func:`mfgtx.calibration.conformal.fit_split`, absolute residuals, the quantile by
lot) from the **same validation lots** the model's own calibration uses: fitted on the
training lots of each split, its residuals scored on that split's validation lots (an
ensemble's splits: every validation lot once, the test forecast the mean of the splits'
ridges, as the ensemble averages its members), and never a test lot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mfgtx.baselines._base import Baseline, check_task, targets_of
from mfgtx.baselines.forecast import LinearRidge, TrainMeanForecast
from mfgtx.baselines.regression import Ridge
from mfgtx.calibration.conformal import fit_split
from mfgtx.calibration.coverage import Coverage, lot_coverage
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["BaselineBand", "conformal_band", "conformal_baseline", "interval_baseline"]


@dataclass(frozen=True)
class BaselineBand:
    """The ridge baseline's conformal band on the test windows.

    Attributes:
        name: the baseline's name (``Ridge``, ``LinearRidge``).
        y: ``(n, ...)`` the test truth.
        low: the band's lower edge, the shape of ``y``.
        high: its upper edge.
        lots: ``(n,)`` the test windows' lots.
        calibration_lots: validation lots the margin rests on.
    """

    name: str
    y: np.ndarray
    low: np.ndarray
    high: np.ndarray
    lots: np.ndarray
    calibration_lots: int


def interval_baseline(task: str, windows: Windows) -> Baseline:
    """The unfitted baseline that gets a conformal interval for ``task``: ``Ridge`` for
    regression, ``LinearRidge`` for forecasts of sensors (``TrainMeanForecast`` when a
    forecast column is not a sensor, so the window holds no past of it)."""
    check_task(task)
    if task == "regression":
        return Ridge()
    if task == "forecast":
        if all(c in windows.sensors for c in windows.targets):
            return LinearRidge()
        return TrainMeanForecast()
    raise ValueError(f"a conformal baseline interval is for regression or forecast, not {task}")


def conformal_band(
    task: str,
    windows: Windows,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    test_idx: np.ndarray,
    *,
    coverage: float,
    scaler: SensorScaler | None = None,
    lower: Sequence[float | None] | None = None,
) -> BaselineBand:
    """The ridge baseline's split-conformal band on ``test_idx``.

    Args:
        task: ``"regression"`` or ``"forecast"``.
        windows: the windows of the split.
        splits: ``(fit_idx, val_idx)`` per split (one for a single model, one per member of
            an ensemble cross-fitted by lot); unlabelled windows are left out.
        test_idx: the test windows (labelled).
        coverage: the nominal coverage, e.g. 0.8 (the model's).
        scaler: the training scaler the baselines read with.
        lower: physical lower bound per target or channel (``None``: unbounded), e.g. 0
            for a remaining life; the band is clipped to it as the model's is.

    Returns:
        the :class:`BaselineBand`.

    Raises:
        ValueError: a validation or test window is also a training window of a split, or a
            split has no labelled validation window.
    """
    if not splits:
        raise ValueError("conformal_band: no (fit, validation) split given")
    labelled = windows.labelled()
    test = np.asarray(test_idx, dtype=np.int64)
    ys, points, lots, tests = [], [], [], []
    name = ""
    for k, (fit_idx, val_idx) in enumerate(splits):
        fit_on = np.intersect1d(np.asarray(fit_idx, dtype=np.int64), labelled)
        val = np.intersect1d(np.asarray(val_idx, dtype=np.int64), labelled)
        for what, idx in (("validation", val), ("test", test)):
            if np.intersect1d(idx, fit_on).size:
                raise ValueError(
                    f"conformal_band: split {k}: a {what} window is also a training window"
                )
        if val.size == 0:
            raise ValueError(f"conformal_band: split {k} has no labelled validation window")
        baseline = interval_baseline(task, windows).fit(windows, fit_on, scaler)
        name = baseline.name
        ys.append(targets_of(windows, val, "validation"))
        points.append(np.asarray(baseline.predict(windows, val), dtype=np.float64))
        lots.append(windows.lot[val])
        tests.append(np.asarray(baseline.predict(windows, test), dtype=np.float64))
    y_val, lot_val = np.concatenate(ys), np.concatenate(lots)
    point_val = np.concatenate(points).reshape(y_val.shape)
    y_test = targets_of(windows, test, "test")
    point = np.mean(tests, axis=0).reshape(y_test.shape)
    bounds = None if lower is None else tuple(lower)
    calibration = fit_split(y_val, point_val, lot_val, coverage, lower=bounds)
    low, high = calibration.apply(point)
    test_lots = windows.lot[test]
    return BaselineBand(name, y_test, low, high, test_lots, calibration.lots)


def conformal_baseline(
    task: str,
    windows: Windows,
    splits: Sequence[tuple[np.ndarray, np.ndarray]],
    test_idx: np.ndarray,
    *,
    coverage: float,
    scaler: SensorScaler | None = None,
    lower: Sequence[float | None] | None = None,
) -> Coverage:
    """The ridge baseline's split-conformal interval (:func:`conformal_band`, the same
    arguments), judged on ``test_idx`` by lot: its
    :class:`~mfgtx.calibration.coverage.Coverage`, named after the baseline."""
    band = conformal_band(
        task, windows, splits, test_idx, coverage=coverage, scaler=scaler, lower=lower
    )
    return lot_coverage(
        band.y, band.low, band.high, band.lots, nominal=coverage, name=band.name,
        method="conformal", calibration_lots=band.calibration_lots,
    )  # fmt: skip
