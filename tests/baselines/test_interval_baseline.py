"""The ridge baseline's conformal interval: calibrated on the validation lots only, judged by
lot on the test lots, at the model's nominal coverage."""

from __future__ import annotations

import numpy as np
import pytest

from mfgtx.baselines import intervals
from mfgtx.baselines.intervals import conformal_baseline

from .conftest import learnable_windows, periodic_table_windows


def _thirds(n: int):
    idx = np.arange(n)
    return idx[: n // 2], idx[n // 2 : 3 * n // 4], idx[3 * n // 4 :]


def test_calibrated_on_the_validation_lots_only(monkeypatch) -> None:
    w = learnable_windows(200)
    fit_on, val, test = _thirds(len(w))
    seen = {}
    real = intervals.fit_split

    def spy(y, point, lots, coverage, **kw):
        seen["lots"], seen["coverage"] = set(np.asarray(lots).tolist()), coverage
        return real(y, point, lots, coverage, **kw)

    monkeypatch.setattr(intervals, "fit_split", spy)
    c = conformal_baseline("regression", w, [(fit_on, val)], test, coverage=0.8)
    assert seen["lots"] == set(w.lot[val].tolist()) and seen["coverage"] == 0.8
    assert c.name == "Ridge" and c.method == "conformal" and c.nominal == 0.8
    assert c.calibration_lots == len(val) and c.lots == len(test)
    assert c.low <= 0.8 <= c.high  # 50 exchangeable lots: the band holds what it says


def test_an_ensembles_splits_each_give_their_validation_lots(monkeypatch) -> None:
    w = learnable_windows(200)
    idx = np.arange(150)
    folds = [(np.setdiff1d(idx, part), part) for part in np.array_split(idx, 3)]
    seen = {}
    real = intervals.fit_split

    def spy(y, point, lots, coverage, **kw):
        seen["lots"] = np.asarray(lots)
        return real(y, point, lots, coverage, **kw)

    monkeypatch.setattr(intervals, "fit_split", spy)
    c = conformal_baseline("regression", w, folds, np.arange(150, 200), coverage=0.8)
    assert sorted(seen["lots"].tolist()) == sorted(w.lot[idx].tolist())  # each lot once
    assert c.calibration_lots == 150


def test_refuses_a_test_or_validation_window_it_was_fitted_on() -> None:
    w = learnable_windows(100)
    fit_on, val, test = _thirds(len(w))
    with pytest.raises(ValueError, match="test window is also a training window"):
        conformal_baseline("regression", w, [(fit_on, val)], fit_on[:5], coverage=0.8)
    with pytest.raises(ValueError, match="validation window is also a training window"):
        conformal_baseline("regression", w, [(fit_on, fit_on[:10])], test, coverage=0.8)


def test_forecast_interval_per_step_and_channel_with_a_floor() -> None:
    w = periodic_table_windows(n_lots=12)
    lots = w.lot.astype(str)
    names = sorted(set(lots))
    fit_on = np.flatnonzero(np.isin(lots, names[:6]))
    val = np.flatnonzero(np.isin(lots, names[6:10]))
    test = np.flatnonzero(np.isin(lots, names[10:]))
    free = conformal_baseline("forecast", w, [(fit_on, val)], test, coverage=0.8)
    assert free.name == "LinearRidge" and free.lots == 2 and free.calibration_lots == 4
    c = conformal_baseline("forecast", w, [(fit_on, val)], test, coverage=0.8, lower=(1e9,))
    assert c.width == 0.0 and c.coverage == 0.0  # the floor, above every value, clips both edges
