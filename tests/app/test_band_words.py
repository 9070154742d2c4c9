"""The Forecast and Quality & RUL pages say which band they draw: the bundle's conformal
interval and its validation lots, or an older bundle's uncalibrated quantiles."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np

from mfgtx.baselines import EvaluationReport, ReportRow
from mfgtx.calibration.conformal import IntervalCalibration
from mfgtx.calibration.coverage import lot_coverage

APP = Path(__file__).resolve().parents[2] / "app"


def _predictor(calibrated: bool, *, with_report: bool = True) -> SimpleNamespace:
    y = np.array([[0.0], [2.0], [0.5], [9.0]])
    held = lot_coverage(y, y * 0 - 1, y * 0 + 1, np.array(["a", "b", "c", "d"]), nominal=0.8,
                        method="cqr" if calibrated else "quantiles",
                        calibration_lots=6 if calibrated else None)  # fmt: skip
    rows = (ReportRow("m", "model", {"mse": 1.0}),)
    report = EvaluationReport("forecast", 4, rows, "mse", intervals=(held,))
    return SimpleNamespace(
        model=SimpleNamespace(config=SimpleNamespace(quantiles=(0.1, 0.5, 0.9))),
        intervals=IntervalCalibration("cqr", 0.8, (1.0,), (1,), 6) if calibrated else None,
        report=report if with_report else None,
        bundle=SimpleNamespace(manifest={"metrics": {"extra": {"interval_coverage": 0.68}}}),
    )


def test_forecast_page_names_the_calibration_or_its_absence(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(APP))
    monkeypatch.syspath_prepend(str(APP / "views"))
    from forecast import band_words

    words = band_words(_predictor(True))
    assert words.startswith("80 % conformalized quantile interval (calibrated on 6 validation")
    assert "on the bundle's 4 test lots it held 50%" in words
    old = band_words(_predictor(False, with_report=False))
    assert old.startswith("80 % band of uncalibrated quantiles")
    assert "on the bundle's test lots 68% did" in old  # an older bundle's figure


def test_quality_page_names_the_calibration(monkeypatch) -> None:
    monkeypatch.syspath_prepend(str(APP))
    monkeypatch.syspath_prepend(str(APP / "views"))
    from quality import interval_words

    assert "calibrated on 6 validation lots" in interval_words(_predictor(True), 10, 90)
    assert "uncalibrated quantiles" in interval_words(_predictor(False), 10, 90)
