"""The audit's ``regimes_train_only`` check: a clustering or a per-regime scaler fitted with
validation or test rows fails it, and the scaler is checked on the regime-normalised windows."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mfgtx.data import ColumnMap, RegimePlan, Regimes, SensorScaler, make_windows, read_table
from mfgtx.split import LeakageError, LotTimeSplit, audit
from tests.regimes_fleet import fleet

KMEANS = RegimePlan(columns=("setting_1", "setting_2"), clusters=3)
GRADE = RegimePlan(column="grade")


@pytest.fixture(scope="module")
def split():
    cols = ColumnMap("lot", "t", sensors=("a", "b", "setting_1", "setting_2", "grade"))
    windows = make_windows(read_table(fleet(), cols), 8, stride=4)
    (sets,) = LotTimeSplit(test_size=3, val_size=2).split_sets(windows)
    return windows, sets


def _audit(windows, sets, regimes, scaler=None):
    scaler = scaler or SensorScaler.fit(regimes.apply(windows), sets.train)
    report = audit(windows, sets, scaler=scaler, regimes=regimes, strict=False)
    return {c.name: c for c in report.checks}, report


@pytest.mark.parametrize("plan", [KMEANS, GRADE], ids=["kmeans", "column"])
def test_regimes_fitted_on_training_rows_pass(split, plan) -> None:
    windows, sets = split
    checks, report = _audit(windows, sets, Regimes.fit(windows, sets.train, plan))
    assert report.passed, report.failed
    assert checks["regimes_train_only"].passed and checks["scaler_train_only"].passed
    assert "recomputed" in checks["regimes_train_only"].detail


def _leaky(windows, sets, plan):
    """Fitted on the training and test windows' rows."""
    return Regimes.fit(windows, np.concatenate([sets.train, sets.test]), plan)


def test_a_clustering_fitted_with_test_rows_fails(split) -> None:
    windows, sets = split
    good, leaky = Regimes.fit(windows, sets.train, KMEANS), _leaky(windows, sets, KMEANS)
    # only the centroids leaked (the settings' scaling and sensor statistics are the training ones)
    bad = dataclasses.replace(good, centroids=leaky.centroids)
    checks, report = _audit(windows, sets, bad)
    check = checks["regimes_train_only"]
    assert not check.passed and not report.passed
    assert "the cluster centroids (regime" in check.detail
    with pytest.raises(LeakageError, match="regimes_train_only"):
        audit(windows, sets, regimes=bad)


def test_settings_scaling_fitted_with_test_rows_fails(split) -> None:
    windows, sets = split
    good, leaky = Regimes.fit(windows, sets.train, KMEANS), _leaky(windows, sets, KMEANS)
    bad = dataclasses.replace(good, setting_center=leaky.setting_center)
    check = _audit(windows, sets, bad)[0]["regimes_train_only"]
    assert not check.passed and "the settings' centre (setting_1)" in check.detail


@pytest.mark.parametrize("plan", [KMEANS, GRADE], ids=["kmeans", "column"])
def test_a_per_regime_scaler_fitted_with_test_rows_fails(split, plan) -> None:
    windows, sets = split
    leaky = _leaky(windows, sets, plan)
    check = _audit(windows, sets, leaky)[0]["regimes_train_only"]
    assert not check.passed
    assert "They are those of the training and test rows" in check.detail
    # only the sensor statistics leaked
    good = Regimes.fit(windows, sets.train, plan)
    bad = dataclasses.replace(good, center=leaky.center)
    check = _audit(windows, sets, bad)[0]["regimes_train_only"]
    assert not check.passed and "per-regime sensor centres (regime" in check.detail


def test_a_grade_seen_only_in_test_rows_fails(split) -> None:
    windows, sets = split
    values = windows.values.copy()
    test_rows = windows.rows(sets.test)
    values[test_rows[:3], windows.sensors.index("grade")] = 70.0  # a grade only test lots run
    windows = dataclasses.replace(windows, values=values)
    check = _audit(windows, sets, _leaky(windows, sets, GRADE))[0]["regimes_train_only"]
    assert not check.passed and "the regime values" in check.detail


def test_the_scaler_is_checked_on_the_normalised_windows(split) -> None:
    windows, sets = split
    regimes = Regimes.fit(windows, sets.train, KMEANS)
    everything = SensorScaler.fit(regimes.apply(windows), np.arange(len(windows)))
    checks, _ = _audit(windows, sets, regimes, scaler=everything)
    assert checks["regimes_train_only"].passed and not checks["scaler_train_only"].passed
