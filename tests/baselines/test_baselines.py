"""Regression and classification baselines: fitted on the training windows only, and useful."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mfgtx.baselines import (
    GradientBoosting,
    GradientBoostingClassifier,
    LogisticRegression,
    MajorityClass,
    Ridge,
    TrainMean,
    default_baselines,
    fit_baselines,
)
from mfgtx.data import SensorScaler
from mfgtx.metrics import classification_metrics, rmse


def _output(baseline, w, idx) -> np.ndarray:
    if hasattr(baseline, "predict_proba"):
        return baseline.predict_proba(w, idx)
    return baseline.predict(w, idx)


def test_train_mean_is_the_mean_of_the_training_windows_only(make_hand_windows) -> None:
    y = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [100.0, 1000.0]])
    w = make_hand_windows(np.zeros((8, 1)), [0, 2, 4, 6], 2, y)
    pred = TrainMean().fit(w, [0, 1, 2]).predict(w, [3, 0])
    assert pred.shape == (2, 2)
    np.testing.assert_allclose(pred, [[2.0, 20.0], [2.0, 20.0]])
    assert not np.allclose(pred[0], y.mean(axis=0))  # all windows would give 26.5


@pytest.mark.parametrize("task", ["regression", "classification"])
def test_no_baseline_reads_targets_outside_the_training_windows(
    task: str, make_learnable_windows, split_halves
) -> None:
    w = make_learnable_windows(200, classify=task == "classification", seed=2)
    train, test = split_halves(w)
    y2 = w.y.copy()
    y2[test] = 1 - y2[test] if task == "classification" else 1e6  # shuffle the test labels
    w2 = dataclasses.replace(w, y=y2)
    for a, b in zip(fit_baselines(w, train, task), fit_baselines(w2, train, task), strict=True):
        np.testing.assert_array_equal(_output(a, w, test), _output(b, w, test), err_msg=a.name)
    # and the training labels do matter (the comparison above can fail)
    y3 = w.y.copy()
    y3[train[:20]] = 1 - y3[train[:20]] if task == "classification" else y3[train[:20]] + 50
    moved = fit_baselines(dataclasses.replace(w, y=y3), train, task)
    first = fit_baselines(w, train, task)
    for a, b in zip(first, moved, strict=True):
        assert not np.array_equal(_output(a, w, test), _output(b, w, test)), a.name


def test_learned_regressors_beat_the_train_mean(regression_windows, split_halves) -> None:
    w = regression_windows
    train, test = split_halves(w)
    truth = w.y[test]
    scores = {
        b.name: rmse(truth, b.predict(w, test)) for b in fit_baselines(w, train, "regression")
    }
    assert scores["GradientBoosting"] < 0.7 * scores["TrainMean"]
    assert scores["Ridge"] < 0.7 * scores["TrainMean"]


def test_ridge_is_unchanged_by_a_train_only_scaler(regression_windows, split_halves) -> None:
    # every summary statistic is an affine function of the sensor, and Ridge standardises
    w = regression_windows
    train, test = split_halves(w)
    scaler = SensorScaler.fit(w, train)
    plain = Ridge().fit(w, train).predict(w, test)
    scaled = Ridge().fit(w, train, scaler=scaler).predict(w, test)
    np.testing.assert_allclose(plain, scaled, rtol=1e-4, atol=1e-4)


def test_gradient_boosting_is_deterministic_and_one_model_per_target(
    make_learnable_windows, split_halves
) -> None:
    w = make_learnable_windows(120, seed=3)
    w = dataclasses.replace(w, y=np.concatenate([w.y, -2 * w.y], axis=1), targets=("a", "b"))
    train, test = split_halves(w)
    p1 = GradientBoosting(max_iter=30).fit(w, train).predict(w, test)
    p2 = GradientBoosting(max_iter=30).fit(w, train).predict(w, test)
    assert p1.shape == (len(test), 2)
    np.testing.assert_array_equal(p1, p2)


def test_majority_class_outputs_the_training_frequencies(
    classification_windows, split_halves
) -> None:
    w = classification_windows
    train, test = split_halves(w)
    m = MajorityClass().fit(w, train)
    freq = np.bincount(w.y[train, 0].astype(int), minlength=2) / len(train)
    np.testing.assert_allclose(m.predict_proba(w, test), np.tile(freq, (len(test), 1)))
    assert (m.predict(w, test) == 0).all()  # defects are the rare class
    assert freq[1] < 0.3


def test_logistic_regression_beats_majority_class_on_rare_defects(
    classification_windows, split_halves
) -> None:
    w = classification_windows
    train, test = split_halves(w)
    truth = w.y[test, 0].astype(int)
    scores = {
        b.name: classification_metrics(truth, b.predict_proba(w, test))
        for b in (
            MajorityClass().fit(w, train),
            LogisticRegression().fit(w, train),
            LogisticRegression(class_weight="balanced").fit(w, train),
            GradientBoostingClassifier().fit(w, train),
        )
    }
    major = scores["MajorityClass"]
    assert major["balanced_accuracy"] == 0.5 and major["f1"] == 0.0
    for name in ("LogisticRegression", "LogisticRegression(balanced)"):
        assert scores[name]["balanced_accuracy"] > 0.75, name
        assert scores[name]["roc_auc"] > 0.9, name
    assert scores["LogisticRegression"]["log_loss"] < major["log_loss"]
    assert scores["GradientBoostingClassifier"]["roc_auc"] > 0.8


def test_classifiers_give_a_column_for_every_class(make_hand_windows) -> None:
    rng = np.random.default_rng(4)
    y = np.array([0, 1] * 20 + [2, 2], dtype=float)[:, None]  # class 2 only in the test windows
    w = make_hand_windows(rng.normal(size=(84, 1)), np.arange(42) * 2, 2, y)
    train, test = np.arange(40), np.arange(40, 42)
    for b in (MajorityClass(n_classes=3), LogisticRegression(n_classes=3)):
        proba = b.fit(w, train).predict_proba(w, test)
        assert proba.shape == (2, 3) and (proba[:, 2] == 0).all(), b.name
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert MajorityClass().fit(w, train).predict_proba(w, test).shape == (2, 2)


def test_errors_name_what_to_fix(make_hand_windows) -> None:
    y = np.array([[0.0], [1.0], [np.nan], [0.5]])
    w = make_hand_windows(np.zeros((8, 1)), [0, 2, 4, 6], 2, y)
    with pytest.raises(RuntimeError, match="TrainMean is not fitted yet"):
        TrainMean().predict(w, [0])
    with pytest.raises(
        ValueError,
        match=r"1 of the training windows have a missing target, first window 2 \(lot L2\)",
    ):
        TrainMean().fit(w, [0, 1, 2])
    with pytest.raises(
        ValueError, match=r"target 'y' of window 3 \(lot L3\) is 0.5; class labels must be integers"
    ):
        MajorityClass().fit(w, [0, 1, 3])
    with pytest.raises(ValueError, match="every training window has class 0; a classifier needs"):
        LogisticRegression().fit(w, [0])
    forecast = make_hand_windows(np.zeros((8, 1)), [0, 2], 2, np.zeros((2, 2, 1)), horizon=2)
    with pytest.raises(ValueError, match="needs windows with horizon 0, found horizon 2"):
        Ridge().fit(forecast, [0])
    with pytest.raises(ValueError, match=r"train_idx holds 9, outside the 4 windows"):
        TrainMean().fit(w, [0, 9])
    with pytest.raises(ValueError, match="alpha must be a number > 0, found -1"):
        Ridge(alpha=-1)
    with pytest.raises(ValueError, match="class_weight must be None or 'balanced', found 'auto'"):
        LogisticRegression(class_weight="auto")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="task must be one of"):
        default_baselines("ranking")
    with pytest.raises(ValueError, match="period is for forecast baselines"):
        default_baselines("regression", period=3)
