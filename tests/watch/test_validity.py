"""The model's part of the watch: realized error against the bundle's own test figures."""

from __future__ import annotations

import numpy as np
import pandas as pd

from mfgtx.watch import WatchSettings, check_model, reported_figures, watch

FIGURES = {"mae": 10.0, "brier": 0.1}


def _regression(
    errors: np.ndarray, *, width: float = 15.0, per_window: bool = True
) -> pd.DataFrame:
    """Judged scores of an RUL model: truth 100, predictions off by ``errors``."""
    n = len(errors)
    pred = 100.0 + errors
    return pd.DataFrame(
        {
            "lot": [f"M{i:02d}" for i in range(n)],
            "window_end": [f"2026-03-01T{i % 24:02d}:00:00" for i in range(n)],
            "predictions": [
                {
                    "rul_cycles": float(p),
                    "rul_cycles_q10": float(p - width),
                    "rul_cycles_q90": float(p + width),
                }
                for p in pred
            ],
            "interval_low": pred - width,
            "interval_high": pred + width,
            "decision": None,
            "truth": ["100.0"] * n,
            "truth_of_window": per_window,
        }
    )


def _signed(size: float, n: int = 40) -> np.ndarray:
    return np.where(np.arange(n) % 2 == 0, size, -size)  # (n,) misses of ``size`` either way


def test_a_model_whose_realized_error_doubled_is_not_valid() -> None:
    settings = WatchSettings()
    held = check_model(
        _regression(_signed(11.0)),
        FIGURES,
        settings,
        task="regression",
        targets=("rul_cycles",),
        nominal=0.8,
    )
    assert held.valid is True and held.realized == 11.0 and held.test == 10.0
    doubled = check_model(
        _regression(_signed(21.0)),
        FIGURES,
        settings,
        task="regression",
        targets=("rul_cycles",),
        nominal=0.8,
    )
    assert doubled.valid is False
    assert next(r for r, _ in doubled.problems) == "error"
    assert "2.1 times" in doubled.why


def test_an_interval_that_no_longer_holds_the_truth_is_flagged() -> None:
    narrow = check_model(
        _regression(_signed(11.0), width=5.0),
        FIGURES,
        WatchSettings(),
        task="regression",
        targets=("rul_cycles",),
        nominal=0.8,
    )
    assert narrow.coverage == 0.0 and [r for r, _ in narrow.problems] == ["coverage"]


def test_a_classifier_is_judged_on_its_brier_score() -> None:
    n = 30
    truth = np.arange(n) % 2  # (n,) half the lots bad

    def judged(p_bad: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "lot": [f"L{i}" for i in range(n)],
                "window_end": ["t"] * n,
                "predictions": [{"p_bad": float(p)} for p in p_bad],
                "interval_low": None,
                "interval_high": None,
                "decision": np.where(p_bad > 0.5, "bad", "good"),
                "truth": [f"{float(t)}" for t in truth],
                "truth_of_window": False,
            }
        )

    sharp = check_model(
        judged(np.where(truth == 1, 0.8, 0.2)), FIGURES, WatchSettings(), task="classification"
    )
    assert sharp.valid is True and np.isclose(sharp.realized, 0.04) and sharp.accuracy == 1.0
    wrong = check_model(
        judged(np.where(truth == 1, 0.4, 0.6)), FIGURES, WatchSettings(), task="classification"
    )
    assert wrong.valid is False and wrong.accuracy == 0.0


def test_a_lot_truth_judges_the_lots_last_window_only() -> None:
    frame = _regression(np.array([50.0, 0.0] * 10), per_window=False)
    frame["lot"] = np.repeat([f"M{i}" for i in range(10)], 2)  # two windows a lot, last exact
    check = check_model(
        frame, FIGURES, WatchSettings(), task="regression", targets=("rul_cycles",), nominal=None
    )
    assert check.judged == 10 and check.realized == 0.0


def test_too_little_truth_leaves_the_model_unjudged() -> None:
    check = check_model(
        _regression(_signed(30.0, n=5)),
        FIGURES,
        WatchSettings(),
        task="regression",
        targets=("rul_cycles",),
    )
    assert check.valid is None and "only 5" in check.why


def test_the_test_figures_are_the_reports_model_row() -> None:
    manifest = {
        "metrics": {
            "rows": [
                {"kind": "model", "metrics": {"mae": 3.0}},
                {"kind": "baseline", "metrics": {"mae": 9.0}},
            ],
            "extra": {"interval_coverage": 0.79},
        }
    }
    assert reported_figures(manifest) == {"mae": 3.0, "interval_coverage": 0.79}
    assert reported_figures({"metrics": None}) == {}


def test_a_bundle_without_a_profile_says_so_and_still_judges_the_model() -> None:
    """A bundle written before training profiles: inputs unknown in plant words, no crash,
    the model still judged on its truth."""
    manifest = {
        "kind": "sensor",
        "extra": {"job_file": {}},
        "input_spec": {"task": "regression", "targets": ["rul_cycles"]},
        "metrics": {"rows": [{"metrics": {"mae": 10.0}}]},
        "model": {"config": {"quantiles": [0.1, 0.9]}},
    }
    recent = pd.DataFrame({"load_pct": [1.0, 2.0]})
    blind = watch(
        manifest, "b" * 64, subject="rul", recent=recent, judged=None, settings=WatchSettings()
    )
    assert blind.verdict == "unknown" and not blind.inputs_judged and blind.inputs == ()
    assert "predates training distributions" in blind.inputs_note
    assert "retrain" in blind.inputs_note and blind.findings() == ()
    judged = watch(
        manifest,
        "b" * 64,
        subject="rul",
        recent=recent,
        judged=_regression(_signed(25.0), width=30.0),
        settings=WatchSettings(),
    )
    assert judged.verdict == "not_valid"
    assert [f.reason for f in judged.findings()] == ["error", "not_valid"]
    assert judged.findings()[-1].subject == "rul"
