"""mfgtx.metrics against scikit-learn and hand-computed values; errors on bad input."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from mfgtx import metrics as M


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


@pytest.mark.parametrize("shape", [(50,), (50, 3)])
def test_regression_metrics_match_sklearn(rng: np.random.Generator, shape: tuple[int, ...]) -> None:
    t = rng.normal(size=shape)
    p = t + rng.normal(scale=0.5, size=shape)
    assert M.mae(t, p) == pytest.approx(skm.mean_absolute_error(t, p))
    assert M.mse(t, p) == pytest.approx(skm.mean_squared_error(t, p))
    assert M.rmse(t, p) == pytest.approx(math.sqrt(skm.mean_squared_error(t, p)))
    assert M.r2(t, p) == pytest.approx(skm.r2_score(t, p))
    assert M.regression_metrics(t, p) == pytest.approx(
        {"mae": M.mae(t, p), "rmse": M.rmse(t, p), "r2": M.r2(t, p)}
    )


def test_nasa_score_by_hand_and_asymmetric() -> None:
    # d = pred - true = -13 (early), 0, +10 (late): (e - 1) + 0 + (e - 1)
    assert M.nasa_score([20.0, 5.0, 0.0], [7.0, 5.0, 10.0]) == pytest.approx(2 * (math.e - 1))
    early = M.nasa_score([50.0], [40.0])
    late = M.nasa_score([50.0], [60.0])
    assert late > early > 0  # predicting more life than is left costs more
    assert "nasa_score" in M.regression_metrics([1.0, 2.0], [1.0, 3.0], rul=True)
    assert "nasa_score" not in M.regression_metrics([1.0, 2.0], [1.0, 3.0])


def test_forecast_metrics_over_steps_and_columns() -> None:
    t = np.zeros((2, 3, 2))
    p = np.zeros((2, 3, 2))
    p[0, 2, 1] = 6.0  # one error of 6 among 12 entries
    assert M.forecast_metrics(t, p) == {"mse": 3.0, "mae": 0.5}
    with pytest.raises(ValueError, match=r"expected \(N, H, K\) arrays, found shape \(2, 3\)"):
        M.forecast_metrics(np.zeros((2, 3)), np.zeros((2, 3)))


def test_binary_classification_metrics_match_sklearn(rng: np.random.Generator) -> None:
    y = (rng.random(200) < 0.2).astype(int)
    p1 = np.clip(0.35 * y + 0.65 * rng.random(200), 0.01, 0.99)  # informative, noisy
    proba = np.stack([1 - p1, p1], axis=1)
    pred = (p1 > 0.5).astype(int)
    for p in (p1, proba):  # (N,) P(class 1) and (N, 2) mean the same
        assert M.accuracy(y, p) == pytest.approx(skm.accuracy_score(y, pred))
        assert M.balanced_accuracy(y, p) == pytest.approx(skm.balanced_accuracy_score(y, pred))
        assert M.f1(y, p) == pytest.approx(skm.f1_score(y, pred))
        assert M.roc_auc(y, p) == pytest.approx(skm.roc_auc_score(y, p1))
        assert M.log_loss(y, p) == pytest.approx(skm.log_loss(y, proba))
        assert M.brier(y, p) == pytest.approx(skm.brier_score_loss(y, p1))
    assert set(M.classification_metrics(y, p1)) == {
        "accuracy", "balanced_accuracy", "f1", "roc_auc", "log_loss", "brier", "ece"
    }  # fmt: skip


def test_multiclass_metrics_match_sklearn(rng: np.random.Generator) -> None:
    y = rng.integers(0, 3, size=150)
    logits = rng.normal(size=(150, 3)) + 1.5 * np.eye(3)[y]
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    pred = proba.argmax(axis=1)
    assert M.accuracy(y, proba) == pytest.approx(skm.accuracy_score(y, pred))
    assert M.balanced_accuracy(y, proba) == pytest.approx(skm.balanced_accuracy_score(y, pred))
    assert M.f1(y, proba) == pytest.approx(skm.f1_score(y, pred, average="macro"))
    assert M.log_loss(y, proba) == pytest.approx(skm.log_loss(y, proba))
    onehot = np.eye(3)[y]
    assert M.brier(y, proba) == pytest.approx(np.mean(((proba - onehot) ** 2).sum(axis=1)))
    metrics = M.classification_metrics(y, proba)
    assert "roc_auc" not in metrics
    with pytest.raises(ValueError, match="roc_auc is for binary problems; .* 3 classes"):
        M.roc_auc(y, proba)


def test_expected_calibration_error_constructed_case() -> None:
    # 10 samples 90 % confident, 6 right (gap 0.3); 10 samples 60 % confident, 6 right (gap 0)
    y = np.array([1] * 6 + [0] * 4 + [1] * 6 + [0] * 4)
    p1 = np.array([0.9] * 10 + [0.6] * 10)
    assert M.expected_calibration_error(y, p1) == pytest.approx(0.5 * 0.3)
    # perfectly calibrated: 80 % confident and 80 % right
    assert M.expected_calibration_error([1, 1, 1, 1, 0], [0.8] * 5) == pytest.approx(0.0)
    # bins are 1/15 wide: confidences 0.70 and 0.72 share the bin [0.667, 0.733),
    # so their mean confidence 0.71 meets their accuracy 0.5: gap 0.21
    assert M.expected_calibration_error([1, 0], [0.70, 0.72]) == pytest.approx(0.21)
    assert M.expected_calibration_error([1, 0], [0.70, 0.72], n_bins=50) == pytest.approx(
        0.5 * 0.3 + 0.5 * 0.72
    )


def test_expected_calibration_error_matches_a_loop(rng: np.random.Generator) -> None:
    y = rng.integers(0, 2, size=300)
    p1 = rng.random(300)
    conf = np.maximum(p1, 1 - p1)
    right = (p1 > 0.5).astype(int) == y
    ece = 0.0
    for k in range(15):
        lo, hi = k / 15, (k + 1) / 15
        inside = (conf >= lo) & ((conf < hi) if k < 14 else (conf <= hi))
        if inside.any():
            ece += inside.mean() * abs(right[inside].mean() - conf[inside].mean())
    assert M.expected_calibration_error(y, p1) == pytest.approx(ece)


def test_roc_auc_with_one_class_is_nan_with_a_reason() -> None:
    with pytest.warns(M.MetricWarning, match="roc_auc is undefined: the samples hold only class 0"):
        assert math.isnan(M.roc_auc([0, 0, 0], [0.1, 0.2, 0.3]))
    reasons: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # collected, not warned
        out = M.classification_metrics([1, 1], [0.7, 0.9], reasons=reasons)
    assert math.isnan(out["roc_auc"]) and reasons == [
        "roc_auc is undefined: the samples hold only class 1"
    ]
    with pytest.warns(M.MetricWarning, match=r"y_true is constant \(2.0\) in column 0"):
        assert math.isnan(M.r2([2.0, 2.0], [2.0, 3.0]))


def test_higher_is_better_covers_every_metric_with_the_right_direction() -> None:
    names = (
        set(M.regression_metrics([1.0, 2.0], [1.0, 2.5], rul=True))
        | set(M.classification_metrics([0, 1], [0.2, 0.6]))
        | set(M.forecast_metrics(np.zeros((1, 1, 1)), np.zeros((1, 1, 1))))
        | set(M.detection_metrics([0, 1], [0.2, 0.6], 0.5))
    )
    assert names == set(M.HIGHER_IS_BETTER)
    good, bad = [0.1, 0.9, 0.8], [0.6, 0.4, 0.45]  # P(class 1) for y = 0, 1, 1
    worse = M.classification_metrics([0, 1, 1], bad)
    for name, value in M.classification_metrics([0, 1, 1], good).items():
        assert (value > worse[name]) == M.HIGHER_IS_BETTER[name], name
    worse = M.detection_metrics([0, 1, 1], bad, 0.5)
    for name, value in M.detection_metrics([0, 1, 1], good, 0.5).items():
        assert (value > worse[name]) == M.HIGHER_IS_BETTER[name], name
    for name, value in M.regression_metrics([1.0, 2.0], [1.1, 2.0], rul=True).items():
        other = M.regression_metrics([1.0, 2.0], [3.0, 0.0], rul=True)[name]
        assert (value > other) == M.HIGHER_IS_BETTER[name], name


@pytest.mark.parametrize("fn", [M.mae, M.mse, M.rmse, M.r2, M.nasa_score])
def test_regression_shape_mismatch_and_nan_raise(fn) -> None:
    with pytest.raises(ValueError, match=r"y_true has shape \(3,\) but y_pred has shape \(3, 1\)"):
        fn([1.0, 2.0, 3.0], [[1.0], [2.0], [3.0]])
    with pytest.raises(
        ValueError, match=r"y_pred has 1 NaN or infinite value\(s\), first at index \(1,\)"
    ):
        fn([1.0, 2.0, 3.0], [1.0, np.nan, 3.0])
    with pytest.raises(ValueError, match="y_true has 1 NaN"):
        fn([1.0, np.inf, 3.0], [1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    ("y", "p", "message"),
    [
        (
            [0, 1],
            [0.2, 0.3, 0.4],
            r"y_true has shape \(2,\) but the probabilities have shape \(3,\)",
        ),
        ([0, 1], [[0.5, 0.6], [0.5, 0.5]], "probabilities of sample 0 sum to 1.1, not 1"),
        ([0, 2], [[0.5, 0.5], [0.5, 0.5]], r"y_true\[1\] = 2 is not a class label 0..1"),
        ([0, 0.5], [0.5, 0.5], r"y_true\[1\] = 0.5 is not a class label"),
        ([0, 1], [0.5, np.nan], r"proba has 1 NaN or infinite value\(s\), first at index \(1,\)"),
        ([0, 1], [0.5, 1.2], r"probabilities of sample 1 outside \[0, 1\]"),
    ],
)
def test_classification_input_errors(y, p, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        M.classification_metrics(y, p)


def test_paired_bootstrap_tells_a_better_model_from_a_tie(rng: np.random.Generator) -> None:
    t = rng.normal(size=200)
    good, bad = t + rng.normal(scale=1.0, size=200), t + rng.normal(scale=3.0, size=200)
    d = M.paired_bootstrap(t, good, bad)
    assert d.difference == pytest.approx(M.rmse(t, good) - M.rmse(t, bad))
    assert d.low < d.difference < d.high < 0  # clearly better: the interval excludes 0
    same = M.paired_bootstrap(t, good, good)
    assert (same.difference, same.low, same.high) == (0.0, 0.0, 0.0)
    twin = t + rng.normal(scale=1.0, size=200)  # as good as `good`, other noise
    tie = M.paired_bootstrap(t, good, twin)
    assert tie.low < 0 < tie.high
    assert M.paired_bootstrap(t, good, twin, seed=1) != tie  # the seed sets the draws
    assert M.paired_bootstrap(t, good, twin) == tie


def test_paired_bootstrap_draws_the_same_rows_for_both(rng: np.random.Generator) -> None:
    # b is a shifted by a constant: resampling rows jointly keeps the difference nearly
    # fixed, while independent draws for a and b would spread it over about +-1
    t = np.zeros(100)
    a = rng.normal(scale=5.0, size=100)
    d = M.paired_bootstrap(t, a, a + 0.1, M.mae, n_resamples=500)
    assert d.high - d.low < 0.15 and d.level == 0.95


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"n_resamples": 10}, "n_resamples"), ({"level": 1.0}, "level")],
)
def test_paired_bootstrap_refuses_bad_settings(kwargs: dict, match: str) -> None:
    t = np.arange(5.0)
    with pytest.raises(ValueError, match=match):
        M.paired_bootstrap(t, t, t, **kwargs)
    with pytest.raises(ValueError, match="shape"):
        M.paired_bootstrap(t, t, t[:4])


def test_paired_bootstrap_by_group_draws_whole_lots(rng: np.random.Generator) -> None:
    t = rng.normal(size=40)
    a, b = t + rng.normal(size=40), t + rng.normal(scale=1.5, size=40)
    plain = M.paired_bootstrap(t, a, b, n_resamples=500)
    # one row per group is the plain bootstrap, draw for draw
    assert M.paired_bootstrap(t, a, b, groups=np.arange(40), n_resamples=500) == plain
    # every row copied 10 times, as overlapping windows of one lot would be: drawing the
    # lots gives the interval of the 40 originals; drawing the 400 rows would be too narrow
    rep = np.repeat(np.arange(40), 10)
    lots = np.array([f"lot-{k}" for k in rep])
    grouped = M.paired_bootstrap(t[rep], a[rep], b[rep], groups=lots, n_resamples=500)
    assert grouped.difference == pytest.approx(plain.difference)
    naive = M.paired_bootstrap(t[rep], a[rep], b[rep], n_resamples=500)
    assert naive.high - naive.low < 0.5 * (grouped.high - grouped.low)
    with pytest.raises(ValueError, match="one group per row"):
        M.paired_bootstrap(t, a, b, groups=np.arange(39))
    with pytest.raises(ValueError, match="at least 2 groups, found 1"):
        M.paired_bootstrap(t, a, b, groups=np.zeros(40))


def test_paired_bootstrap_takes_labels_against_probabilities(rng: np.random.Generator) -> None:
    y = rng.integers(0, 2, 300)
    sharp = np.where(y[:, None] == np.arange(2), 0.8, 0.2)  # (300, 2), right most of the time
    flat = np.full((300, 2), 0.5)
    d = M.paired_bootstrap(y, sharp, flat, M.log_loss, n_resamples=200)
    assert d.high < 0  # the sharp, right probabilities have the lower log loss
    with pytest.raises(ValueError, match="one row per row of y_true"):
        M.paired_bootstrap(y, sharp, flat[:, :1])


def test_confusion_matrix_counts_actual_by_predicted() -> None:
    confusion_matrix = M.confusion_matrix
    y = np.array([0, 0, 0, 1, 1, 2])
    proba = np.array(
        [[0.8, 0.1, 0.1], [0.2, 0.7, 0.1], [0.6, 0.2, 0.2], [0.1, 0.8, 0.1], [0.1, 0.2, 0.7],
         [0.1, 0.1, 0.8]]
    )  # fmt: skip
    assert confusion_matrix(y, proba).tolist() == [[2, 1, 0], [0, 1, 1], [0, 0, 1]]
    p1 = np.array([0.2, 0.55, 0.9, 0.4])
    y2 = np.array([0, 0, 1, 1])
    m = confusion_matrix(y2, p1, threshold=0.5)
    assert m.tolist() == [[1, 1], [1, 1]] and m.sum() == 4
    low = confusion_matrix(y2, p1, threshold=0.3)
    assert low.tolist() == [[1, 1], [0, 2]]
    detected = M.detection_metrics(y2, p1, 0.3)  # the same decision as the detection metrics
    assert detected["recall"] == low[1, 1] / low[1].sum()
    assert detected["false_alarm_rate"] == low[0, 1] / low[0].sum()
    with pytest.raises(ValueError, match="threshold"):
        confusion_matrix(y2, p1, threshold=1.5)
