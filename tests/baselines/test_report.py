"""compare / EvaluationReport: same test windows for all, computed verdicts, JSON round trip."""

from __future__ import annotations

import dataclasses
import json
import math
import re

import numpy as np
import pytest

from mfgtx.baselines import (
    EvaluationReport,
    GradientBoosting,
    Naive,
    ReportRow,
    TrainMean,
    compare,
    fit_baselines,
)
from mfgtx.baselines.standing import baseline_words, model_words
from mfgtx.metrics import rmse


@pytest.fixture(scope="module")
def fitted(regression_windows, split_halves):
    w = regression_windows
    train, test = split_halves(w)
    return w, train, test, fit_baselines(w, train, "regression")


def test_every_predictor_is_scored_on_the_same_test_windows(fitted) -> None:
    w, _, test, baselines = fitted
    pred = w.y[test] + 0.01
    report = compare("regression", w, test, pred, baselines)
    assert report.n_test == len(test) and report.n_train == 180
    assert [r.name for r in report.rows] == ["model", "TrainMean", "Ridge", "GradientBoosting"]
    assert report.models == ("model",) and len(report.baselines) == 3
    for r, b in zip(report.rows[1:], baselines, strict=True):  # recomputed by hand
        assert r.metrics["rmse"] == pytest.approx(rmse(w.y[test], b.predict(w, test)))
    assert report.rows[0].metrics["rmse"] == pytest.approx(0.01, rel=1e-3)


def test_verdict_when_the_model_wins(fitted) -> None:
    w, _, test, baselines = fitted
    report = compare("regression", w, test, w.y[test][:, 0] + 0.01, baselines)  # (n,) is fine
    best_baseline = min(report.rows[1:], key=lambda r: r.metrics["rmse"])
    assert report.verdict == (
        f"Use it. The model beats the best baseline, {baseline_words(best_baseline.name)}, on "
        f"typical error (lower is better) beyond resampling noise over the {len(test)} test lots, 0.01 "
        f"against {best_baseline.metrics['rmse']:.3g}."
    )
    assert report.best("rmse") == "model" and report.best() == "model"


def test_verdict_when_the_model_loses(fitted) -> None:
    w, _, test, baselines = fitted
    gb = next(r for r in baselines if r.name == "GradientBoosting")
    gb_rmse = rmse(w.y[test], gb.predict(w, test))
    rng = np.random.default_rng(0)
    noisy = w.y[test] + rng.normal(scale=1.5 * gb_rmse, size=w.y[test].shape)  # worse than GB
    report = compare("regression", w, test, noisy, baselines, model_name="PatchTST")
    winner = report.best("rmse")
    assert winner != "PatchTST"
    m = re.fullmatch(
        r"Do not rely on it\. The best baseline, (.+), beats PatchTST on typical error \(lower is better\) "
        r"beyond resampling noise over the \d+ test lots, ([\d.]+) against ([\d.]+); prefer the "
        r"baseline or retrain\.",
        report.verdict,
    )
    assert m is not None, report.verdict
    assert m.group(1) == baseline_words(winner) and winner not in report.verdict
    assert float(m.group(2)) == pytest.approx(report.row(winner).metrics["rmse"], rel=1e-2)
    assert float(m.group(3)) == pytest.approx(report.row("PatchTST").metrics["rmse"], rel=1e-2)


def test_a_tie_is_not_a_win(fitted) -> None:
    w, _, test, baselines = fitted
    train_mean = baselines[0].predict(w, test)
    report = compare("regression", w, test, train_mean, baselines[:1])
    assert report.verdict.startswith(
        f"Use with care. On the {len(test)} test lots the model cannot be told apart from the "
        "best baseline, the training average, on typical error"
    )
    alone = compare("regression", w, test, train_mean, baselines[:1], n_resamples=None)
    assert alone.verdict.startswith("Use with care. The model ties the best baseline")


def test_json_round_trip_keeps_nan_as_null_and_the_same_verdict(
    classification_windows, split_halves
) -> None:
    w = classification_windows
    train, test = split_halves(w)
    negatives = test[w.y[test, 0] == 0]  # one class only: roc_auc is undefined for everyone
    rng = np.random.default_rng(1)
    report = compare(
        "classification", w, negatives, rng.uniform(0.0, 0.4, size=len(negatives)), train_idx=train
    )
    assert math.isnan(report.row("model").metrics["roc_auc"])
    assert "model: roc_auc is undefined: the samples hold only class 0" in report.notes
    text = report.to_json()
    state = json.loads(text)  # strict JSON (allow_nan=False when writing)
    assert state["rows"][0]["metrics"]["roc_auc"] is None
    assert state["verdict"] == report.verdict
    back = EvaluationReport.from_json(text)
    assert back.to_dict() == report.to_dict()
    assert back.verdict == report.verdict and back.best("log_loss") == report.best("log_loss")
    assert math.isnan(back.row("MajorityClass").metrics["roc_auc"])


def test_markdown_lists_every_predictor_bolds_the_best_and_states_the_verdict(fitted) -> None:
    w, _, test, baselines = fitted
    report = compare("regression", w, test, w.y[test] + 5.0, baselines, rul=True)
    md = report.to_markdown()
    for name in ("model", "TrainMean", "Ridge", "GradientBoosting"):  # named in words
        words = model_words(name) if name == "model" else baseline_words(name)
        assert re.search(rf"^\| {re.escape(words)}( \(baseline\))? \|", md, re.M), name
    assert "late-warning penalty ↓" in md and "share explained ↑" in md  # plain names
    assert "- probability error" not in md and "- typical error: the size" in md
    best = report.best("rmse")
    best_words = model_words(best) if best == "model" else baseline_words(best)
    best_line = next(line for line in md.splitlines() if line.startswith(f"| {best_words} "))
    assert f"**{report.row(best).metrics['rmse']:.4g}**" in best_line
    assert md.count("**") == 2 * len(report.metrics)  # one best per metric here
    assert f"Verdict: {report.verdict}" in md


def test_several_models_get_a_verdict_each(fitted) -> None:
    w, _, test, baselines = fitted
    report = compare(
        "regression", w, test, {"good": w.y[test], "bad": w.y[test] + 100.0}, baselines
    )
    assert len(report.verdicts()) == 2
    assert report.verdicts()[0].startswith("Use it. Good beats the best baseline, ")
    assert re.match(
        r"Do not rely on it\. The best baseline, .+, beats bad on typical error .+ [\d.]+ against 100; ",
        report.verdicts()[1],
    )
    assert report.verdict == " ".join(report.verdicts())


@pytest.mark.slow
def test_forecast_and_classification_comparisons(
    make_periodic_windows, classification_windows, split_halves
) -> None:
    w = make_periodic_windows()
    train, test = np.flatnonzero(w.lot == "L0"), np.flatnonzero(w.lot != "L0")
    report = compare("forecast", w, test, w.y[test][:, :, 0] + 1.0, train_idx=train, period=4)
    assert report.primary == "mse" and report.best() == "SeasonalNaive(4)"
    # a period-4 signal: the linear map of the window fits it too (the model is off by 1)
    assert report.row("LinearRidge").metrics["mse"] < 0.01
    assert report.verdict.startswith(
        "Do not rely on it. The best baseline, repeating the readings 4 steps back, beats the "
        "model on squared error (lower is better) beyond resampling noise"
    ), report.verdict
    c = classification_windows
    ctrain, ctest = split_halves(c)
    perfect = np.eye(2)[c.y[ctest, 0].astype(int)] * 0.98 + 0.01
    report = compare("classification", c, ctest, perfect, train_idx=ctrain, primary="roc_auc")
    assert report.row("model").metrics["roc_auc"] == 1.0
    assert report.verdict.startswith("Use it. The model beats the best baseline, "), report.verdict
    assert "on ranking (higher is better) beyond resampling noise" in report.verdict
    for threshold_metric in ("recall", "false_alarm_rate"):  # known, but need a threshold
        with pytest.raises(
            ValueError, match=f"primary must be one of .* found '{threshold_metric}'"
        ):
            compare("classification", c, ctest, perfect, train_idx=ctrain, primary=threshold_metric)


def test_nothing_is_dropped_and_the_split_is_checked(fitted, make_periodic_windows) -> None:
    w, train, test, baselines = fitted
    with pytest.raises(
        ValueError,
        match=f"predictions of 'model' have {len(test) - 1} rows but test_idx has {len(test)} windows",
    ):
        compare("regression", w, test, w.y[test][:-1], baselines)
    with pytest.raises(
        ValueError,
        match=r"predictions of 'model' have shape \(120, 2\), the test targets \(120, 1\)",
    ):
        compare("regression", w, test, np.zeros((len(test), 2)), baselines)
    with pytest.raises(ValueError, match="test_idx repeats window 181"):
        compare("regression", w, np.r_[test, 181], np.zeros(len(test) + 1), baselines)
    leaky = TrainMean().fit(w, np.r_[train, test[:3]])
    with pytest.raises(
        ValueError, match=r"baseline TrainMean was fitted on 3 test window\(s\), first window 180"
    ):
        compare("regression", w, test, w.y[test], [leaky])
    other = GradientBoosting(max_iter=5).fit(w, train[:50])
    with pytest.raises(ValueError, match="were fitted on different training windows"):
        compare("regression", w, test, w.y[test], [baselines[0], other])
    with pytest.raises(ValueError, match="predictor names must be unique"):
        compare("regression", w, test, w.y[test], baselines, model_name="Ridge")
    with pytest.raises(ValueError, match="baseline TrainMean is not fitted"):
        compare("regression", w, test, w.y[test], [TrainMean()])
    with pytest.raises(ValueError, match="pass fitted baselines, or train_idx"):
        compare("regression", w, test, w.y[test])
    unlabelled = w.y.copy()
    unlabelled[test[5]] = np.nan
    w2 = dataclasses.replace(w, y=unlabelled)
    with pytest.raises(
        ValueError, match="1 of the test windows have a missing target, first window 185"
    ):
        compare("regression", w2, test, w.y[test], baselines)
    bad = w.y[test].copy()
    bad[7] = np.nan
    with pytest.raises(
        ValueError, match=r"cannot score 'model': regression_metrics: y_pred has 1 NaN"
    ):
        compare("regression", w, test, bad, baselines)
    with pytest.raises(
        ValueError,
        match="the baselines were fitted on 180 training windows, not on the 100 of train_idx",
    ):
        compare("regression", w, test, w.y[test], baselines, train_idx=train[:100])
    fw = make_periodic_windows()
    naive = Naive().fit(fw, [0, 1])
    with pytest.raises(ValueError, match="is a forecast baseline, not regression"):
        compare("regression", w, test, w.y[test], [naive])


def test_report_validates_itself() -> None:
    row = ReportRow("model", "model", {"rmse": 1.0})
    with pytest.raises(
        ValueError, match=r"primary metric 'mae' is not one of the metrics \['rmse'\]"
    ):
        EvaluationReport("regression", 3, (row,), primary="mae")
    with pytest.raises(ValueError, match="every row must have the same metrics"):
        EvaluationReport("regression", 3, (row, ReportRow("b", "baseline", {"mae": 1.0})), "rmse")
    with pytest.raises(ValueError, match=r"unknown metrics \['accuracy_at_k'\]"):
        ReportRow("x", "model", {"accuracy_at_k": 1.0})
    report = EvaluationReport("regression", 3, (row,), primary="rmse")
    assert report.verdict == (
        "Not judged. No baseline has a value for typical error (lower is better) to compare the model with."
    )
    with pytest.raises(KeyError, match="no metric 'r2'"):
        report.best("r2")


def test_classification_probabilities_need_a_column_per_class(
    classification_windows, split_halves
) -> None:
    w = classification_windows
    train, test = split_halves(w)
    three = np.full((len(test), 3), 1 / 3)
    with pytest.raises(ValueError, match=r"model probabilities have \[2, 3\] columns"):
        compare(
            "classification", w, test, {"a": three, "b": np.full(len(test), 0.5)}, train_idx=train
        )
    report = compare("classification", w, test, three, train_idx=train)  # baselines padded
    assert report.row("MajorityClass").metrics["accuracy"] > 0.5
    assert "roc_auc" not in report.metrics  # three columns: multi-class metrics


# --- how sure: the model minus the best baseline, with a paired bootstrap interval ------------


def test_difference_to_the_best_baseline_with_its_interval(fitted) -> None:
    w, _, test, baselines = fitted
    rng = np.random.default_rng(3)
    base = compare("regression", w, test, w.y[test], baselines)
    best = min((r for r in base.rows if r.kind == "baseline"), key=lambda r: r.metrics["rmse"])
    gb = next(b for b in baselines if b.name == best.name)  # the best baseline
    twin = gb.predict(w, test) + rng.normal(scale=0.05, size=(len(test), 1))  # about as good
    report = compare("regression", w, test, twin, baselines)
    (d,) = report.differences
    assert (d.model, d.baseline, d.metric, d.n_groups) == ("model", gb.name, "rmse", len(test))
    assert d.difference == pytest.approx(
        report.row("model").metrics["rmse"] - report.row(gb.name).metrics["rmse"]
    )
    assert d.low < 0 < d.high and "cannot tell the two apart" in report.how_sure
    worse = compare("regression", w, test, w.y[test] + 5.0, baselines)  # off by 5 everywhere
    (d,) = worse.differences
    assert d.low > 0 and "the model is worse beyond resampling noise" in worse.to_markdown()
    better = compare("regression", w, test, w.y[test], baselines)
    assert better.differences[0].high < 0 and "better beyond" in better.how_sure
    assert compare("regression", w, test, w.y[test], baselines, n_resamples=None).differences == ()


def test_the_interval_draws_whole_lots() -> None:
    """40 windows from 4 lots: the interval is over 4 lots, not 40 windows."""
    from tests.baselines.conftest import hand_windows

    rng = np.random.default_rng(0)
    y = rng.normal(size=(40, 1))
    lots = [f"L{i // 10}" for i in range(40)]
    w = hand_windows(rng.normal(size=(40, 1)), range(40), 1, y, lots=lots)
    train, test = np.arange(0, 40, 2), np.arange(1, 40, 2)  # every lot on both sides: a toy
    report = compare("regression", w, test, y[test] + 0.1, train_idx=train, n_resamples=200)
    assert report.differences[0].n_groups == 4 and "over the 4 test lots" in report.how_sure
    one_lot = compare("regression", w, test[:5], y[test[:5]], train_idx=train, n_resamples=200)
    assert one_lot.differences == ()
    assert "one test lot: no interval for the difference to the baselines" in one_lot.notes


def test_differences_round_trip_and_are_checked(fitted) -> None:
    from mfgtx.baselines import Difference

    w, _, test, baselines = fitted
    report = compare("regression", w, test, w.y[test] + 0.5, baselines)
    back = EvaluationReport.from_json(report.to_json())
    assert back == report and back.differences == report.differences
    state = report.to_dict()
    del state["differences"]  # a report saved before intervals existed still loads
    assert EvaluationReport.from_dict(state).differences == ()
    stray = Difference("nobody", "Ridge", "rmse", 0.1, -0.1, 0.3, 0.95, 5)
    with pytest.raises(ValueError, match="between a model and a baseline of this report"):
        dataclasses.replace(report, differences=(stray,))
    with pytest.raises(ValueError, match="unknown metric"):
        Difference("model", "Ridge", "wrong", 0.1, -0.1, 0.3, 0.95, 5)
    # what was drawn is named, and a difference saved before units were named reads as lots
    images = Difference("model", "HOG", "f1", 0.1, -0.1, 0.3, 0.95, 40, unit="distinct test images")
    assert "over the 40 distinct test images" in images.sentence()
    assert "these distinct test images cannot tell" in images.sentence()
    old = images.to_dict()
    del old["unit"]
    assert Difference.from_dict(old).unit == "test lots"
    assert Difference.from_dict(images.to_dict()) == images


def test_classification_reports_an_interval_on_log_loss(classification_windows, split_halves):
    w = classification_windows
    train, test = split_halves(w)
    baselines = fit_baselines(w, train, "classification")
    y = w.y[test][:, 0].astype(int)
    sure = np.where(y[:, None] == np.arange(2), 0.99, 0.01)  # right and confident
    report = compare("classification", w, test, sure, baselines)
    (d,) = report.differences
    assert d.metric == "log_loss" and d.high < 0 and "better beyond" in d.sentence()


@pytest.mark.parametrize("metric", ["mse", "rmse", "mae"])
def test_the_fast_interval_of_mean_errors_equals_resampling_the_forecasts(metric) -> None:
    """mse, rmse and mae are resampled from per-row mean errors: the very same draws."""
    from mfgtx import metrics as M
    from mfgtx.baselines.compare import _bootstrap_inputs

    rng = np.random.default_rng(0)
    truth = rng.normal(size=(60, 5, 2))
    a, b = truth + rng.normal(size=truth.shape), truth + rng.normal(size=truth.shape) * 1.1
    lots = np.repeat(np.arange(12), 5)
    full = M.paired_bootstrap(truth, a, b, getattr(M, metric), groups=lots, n_resamples=300)
    t, ra, rb, fn = _bootstrap_inputs(metric, truth, a, b)
    assert ra.shape == (60,)
    fast = M.paired_bootstrap(t, ra, rb, fn, groups=lots, n_resamples=300)
    np.testing.assert_allclose(fast, full, rtol=1e-9)
