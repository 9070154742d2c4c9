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
    assert report is not None and len(report.intervals) == 2
    model, ridge = report.intervals
    assert model.name == "SensorEncoder" and ridge.name == "Ridge"
    assert model.method == ("quantiles" if method == "off" else "cqr")
    assert ridge.method == "conformal" and ridge.nominal == model.nominal == 0.8
    windows, _ = read_windows(config, SENSOR)
    sets = split(config, windows).sets
    test_lots = set(windows.lot[np.asarray(sets.test)].astype(str))
    val_lots = set(windows.lot[np.asarray(sets.val)].astype(str))
    assert model.lots == ridge.lots == len(test_lots)  # counted by lot, not by window
    assert ridge.calibration_lots == len(val_lots)  # the validation lots, never a test lot
    assert outcome.metrics["interval_test_lots"] == len(test_lots)
    assert "Intervals on the test lots" in outcome.report_markdown
    summary, judged = evaluate(config)
    assert FIGURES <= set(summary["metrics"]) and len(judged.intervals) == 2
