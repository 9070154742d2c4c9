"""judged_intervals: all targets together first (model, then the ridge baseline), then each
target alone in its own units; interval_figures reads the first two."""

from __future__ import annotations

import numpy as np

from mfgtx.baselines import EvaluationReport, ReportRow
from mfgtx.kinds._intervals import interval_figures, judged_intervals
from tests.baselines.conftest import hand_windows


def _windows(n: int = 120):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4, 2))
    y = np.stack([x[:, :, 0].mean(1), 100 * x[:, :, 1].mean(1)], axis=1)  # two units
    y = y + rng.normal(size=y.shape) * np.array([0.1, 10.0])
    return hand_windows(x.reshape(n * 4, 2), np.arange(n) * 4, 4, y, targets=("a", "b"))


def test_every_target_alone_after_all_together() -> None:
    w = _windows()
    fit_on, val, test = np.arange(60), np.arange(60, 90), np.arange(90, 120)
    y = w.y[test].astype(float)
    found = judged_intervals(
        name="SensorEncoder", task="regression", windows=w, test_idx=test, y=y,
        low=y - 1.0, high=y + 1.0, nominal=0.8, method="quantiles", calibration_lots=None,
        splits=[(fit_on, val)], scaler=None,
    )  # fmt: skip
    assert [(c.name, c.target) for c in found] == [
        ("SensorEncoder", None), ("Ridge", None), ("SensorEncoder", "a"), ("Ridge", "a"),
        ("SensorEncoder", "b"), ("Ridge", "b"),
    ]  # fmt: skip
    assert found[2].width == found[4].width == 2.0
    assert found[3].width < found[5].width  # the ridge's band of "b" is in b's larger units
    assert found[3].calibration_lots == 30 and found[1].lots == 30
    figures = interval_figures(found)
    assert figures["interval_width"] == 2.0 and figures["baseline_interval_width"] == round(
        found[1].width, 6
    )
    rows = (ReportRow("SensorEncoder", "model", {"rmse": 1.0}),
            ReportRow("Ridge", "baseline", {"rmse": 1.0}))  # fmt: skip
    report = EvaluationReport("regression", 30, rows, "rmse", intervals=found)
    assert EvaluationReport.from_json(report.to_json()) == report
    assert ", b only" in report.to_markdown()


def test_without_splits_the_model_alone() -> None:
    w = _windows()
    test = np.arange(90, 120)
    y = w.y[test].astype(float)
    found = judged_intervals(
        name="m", task="regression", windows=w, test_idx=test, y=y, low=y, high=y,
        nominal=0.8, method="quantiles", calibration_lots=None, splits=None, scaler=None,
    )  # fmt: skip
    assert [c.target for c in found] == [None, "a", "b"]
    assert "baseline_interval_width" not in interval_figures(found)


def test_a_calibrated_model_shows_its_own_quantiles_beside() -> None:
    w = _windows()
    fit_on, val, test = np.arange(60), np.arange(60, 90), np.arange(90, 120)
    y = w.y[test].astype(float)
    for splits in ([(fit_on, val)], None):
        found = judged_intervals(
            name="m", task="regression", windows=w, test_idx=test, y=y, low=y - 2.0,
            high=y + 2.0, nominal=0.9, method="cqr", calibration_lots=30, splits=splits,
            scaler=None, uncalibrated=(y - 0.5, y + 0.5, 0.8),
        )  # fmt: skip
        together = [(c.name, c.method, c.nominal) for c in found if c.target is None]
        baseline = [("Ridge", "conformal", 0.9)] if splits else []
        assert together == [("m", "cqr", 0.9), *baseline, ("m", "quantiles", 0.8)]
        figures = interval_figures(found)
        assert figures["interval_width"] == 4.0 and figures["uncalibrated_interval_width"] == 1.0
        assert ("baseline_interval_width" in figures) is bool(splits)
