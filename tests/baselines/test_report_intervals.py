"""The report carries each interval's coverage on the test lots, and reads older reports."""

from __future__ import annotations

import numpy as np

from mfgtx.baselines import EvaluationReport, ReportRow
from mfgtx.calibration.coverage import lot_coverage


def _report() -> EvaluationReport:
    y = np.array([[0.0], [2.0], [0.5], [9.0]])
    lots = np.array(["a", "b", "c", "d"])
    model = lot_coverage(y, y * 0 - 1, y * 0 + 1, lots, nominal=0.8, name="SensorEncoder",
                         method="cqr", calibration_lots=5)  # fmt: skip
    ridge = lot_coverage(y, y * 0 - 3, y * 0 + 3, lots, nominal=0.8, name="Ridge",
                         method="conformal", calibration_lots=5)  # fmt: skip
    rows = (
        ReportRow("SensorEncoder", "model", {"rmse": 1.0}),
        ReportRow("Ridge", "baseline", {"rmse": 2.0}),
    )
    return EvaluationReport("regression", 4, rows, "rmse", intervals=(model, ridge))


def test_intervals_round_trip_and_print_beside_the_baseline() -> None:
    report = _report()
    assert EvaluationReport.from_json(report.to_json()) == report
    text = report.to_markdown()
    assert "Intervals on the test lots" in text
    lines = [x for x in text.splitlines() if "calibrated on 5 validation lots" in x]
    assert len(lines) == 2 and "(baseline)" in lines[1] and "50.0%" in lines[0]
    assert "75.0%" in lines[1] and "| 6 |" in lines[1]  # ridge: 3 of 4 lots, width 6


def test_a_report_saved_before_intervals_loads() -> None:
    state = _report().to_dict()
    del state["intervals"]
    old = EvaluationReport.from_dict(state)
    assert old.intervals == () and "Intervals" not in old.to_markdown()
