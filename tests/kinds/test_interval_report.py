"""Train and evaluate report an interval model's coverage on the test lots beside the ridge
baseline's conformal interval from the same validation lots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import mfgtx
from mfgtx.jobfile.config import load_config
from mfgtx.jobfile.prepare import read_windows, split
from mfgtx.jobs.evaluate import evaluate
from mfgtx.jobs.train import train
from mfgtx.kinds import SENSOR

# slow: trains a (tiny) model; -m 'not slow' leaves it out
pytestmark = pytest.mark.slow

JOB = Path(__file__).resolve().parents[2] / "pipelines" / "configs" / "sample_rul.yaml"
FIGURES = {
    "interval_nominal", "interval_coverage", "interval_coverage_low", "interval_coverage_high",
    "interval_width", "interval_test_lots", "baseline_interval_coverage",
    "baseline_interval_width",
}  # fmt: skip
UNCALIBRATED = {"uncalibrated_interval_coverage", "uncalibrated_interval_width"}


def _config(tmp_path: Path, method: str):
    bundle = tmp_path / method
    return load_config(JOB, [
        f"bundle={bundle}", f"train.checkpoint_dir={bundle}.ckpt", "train.epochs=1",
        f"calibration.intervals={method}",
    ])  # fmt: skip


@pytest.mark.parametrize("method", ["cqr", "off"])
def test_train_and_evaluate_report_the_intervals(tmp_path, monkeypatch, method) -> None:
    monkeypatch.chdir(JOB.parents[2])
    config = _config(tmp_path, method)
    outcome = train("sensor", config)
    assert FIGURES <= set(outcome.metrics)
    report = mfgtx.load(outcome.bundle).report
    calibrated = method != "off"
    assert report is not None and len(report.intervals) == 2 + calibrated
    model, ridge = report.intervals[:2]
    assert model.name == "SensorEncoder" and ridge.name == "Ridge"
    assert model.method == ("cqr" if calibrated else "quantiles")
    assert ridge.method == "conformal" and ridge.nominal == model.nominal == 0.8
    # a calibrated model also shows its own quantiles on the same test lots
    assert (UNCALIBRATED <= set(outcome.metrics)) is calibrated
    if calibrated:
        raw = report.intervals[2]
        assert (raw.name, raw.method, raw.nominal) == ("SensorEncoder", "quantiles", 0.8)
        assert raw.lots == model.lots and raw.calibration_lots is None
        assert outcome.metrics["uncalibrated_interval_coverage"] == round(raw.coverage, 4)
        assert outcome.metrics["uncalibrated_interval_width"] == round(raw.width, 6)
        margin = np.asarray(mfgtx.load(outcome.bundle).intervals.margin)
        # cqr widens by the margin (clipped at 0 cycles): the band's width moves with it
        assert (raw.width < model.width) is bool(margin.mean() > 0)
    windows, _ = read_windows(config, SENSOR)
    sets = split(config, windows).sets
    test_lots = set(windows.lot[np.asarray(sets.test)].astype(str))
    val_lots = set(windows.lot[np.asarray(sets.val)].astype(str))
    assert model.lots == ridge.lots == len(test_lots)  # counted by lot, not by window
    assert ridge.calibration_lots == len(val_lots)  # the validation lots, never a test lot
    assert outcome.metrics["interval_test_lots"] == len(test_lots)
    assert "Intervals on the test lots" in outcome.report_markdown
    summary, judged = evaluate(config)
    assert FIGURES <= set(summary["metrics"]) and len(judged.intervals) == 2 + calibrated
