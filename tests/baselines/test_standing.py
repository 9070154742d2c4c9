"""standing: one rule gives each model's level and reason, and every reader words it the same."""

from __future__ import annotations

import math
import re

import pytest

from mfgtx.baselines import (
    Difference,
    EvaluationReport,
    HogLogistic,
    LinearRidge,
    LogisticRegression,
    MajorityImageClass,
    ReportRow,
    SeasonalNaive,
    default_baselines,
)
from mfgtx.baselines import standing as rule
from mfgtx.baselines.standing import (
    LEVELS,
    Standing,
    baseline_words,
    model_words,
    standing,
    standing_of,
)

CLASS_NAME = re.compile(r"\b[A-Z][a-z]+[A-Z]\w*")  # CamelCase: SensorEncoder, TrainMean


def regression(
    model: float, baseline: float, low: float | None, high: float | None
) -> EvaluationReport:
    """The Transformer's RMSE against the training average's and Ridge's (worse), with the
    interval of their difference when ``low`` is given."""
    rows = (
        ReportRow("SensorEncoder", "model", {"rmse": model}),
        ReportRow("TrainMean", "baseline", {"rmse": baseline + 5.0}),
        ReportRow("Ridge", "baseline", {"rmse": baseline}),
    )
    diffs = ()
    if low is not None:
        diffs = (Difference("SensorEncoder", "Ridge", "rmse", model - baseline, low, high or 0.0,
                            0.95, n_groups=9),)  # fmt: skip
    return EvaluationReport("regression", 40, rows, "rmse", differences=diffs)


def classification(acc: float, majority: float, n_test: int = 60) -> EvaluationReport:
    """A classifier ahead of every baseline on log loss beyond noise, with accuracy ``acc``
    against the majority-class rate ``majority``."""
    rows = (
        ReportRow(
            "DefectViT", "model", {"accuracy": acc, "balanced_accuracy": 0.52, "log_loss": 0.60}
        ),
        ReportRow(
            "MajorityClass",
            "baseline",
            {"accuracy": majority, "balanced_accuracy": 0.5, "log_loss": 0.69},
        ),
        ReportRow(
            "HOG + logistic regression",
            "baseline",
            {"accuracy": 0.5, "balanced_accuracy": 0.5, "log_loss": 0.68},
        ),
    )
    d = Difference("DefectViT", "HOG + logistic regression", "log_loss", -0.08, -0.12, -0.03,
                   0.95, n_groups=6, unit="test lots")  # fmt: skip
    return EvaluationReport("classification", n_test, rows, "log_loss", unit="images",
                            differences=(d,))  # fmt: skip


@pytest.mark.parametrize(
    ("report", "level", "words"),
    [
        (regression(10.0, 12.0, -3.0, -1.0), "use", "beats the best baseline"),
        (regression(11.9, 12.0, -0.5, 0.4), "care", "cannot be told apart"),
        (regression(11.0, 12.0, None, None), "care", "the lead may be noise"),
        (regression(12.0, 12.0, None, None), "care", "ties the best baseline"),
        (regression(14.0, 12.0, 1.0, 3.0), "do_not_rely", "beats the Transformer"),
        (regression(14.0, 12.0, None, None), "do_not_rely", "scores better than the Transformer"),
        (regression(math.nan, 12.0, None, None), "unknown", "no value of typical error"),
        (regression(10.0, 12.0, math.nan, math.nan), "care", "the lead may be noise"),
    ],
)
def test_each_level_from_crafted_reports(report, level, words) -> None:
    s = standing(report)
    assert s.level == level, s
    assert words in s.reason, s.reason
    assert s.headline == f"{LEVELS[level]}. {s.reason}"
    assert s.reason.endswith(".") and s.reason.count(". ") == 0, "one sentence"
    assert not CLASS_NAME.search(s.reason), s.reason  # plant words, no class names
    assert report.verdict == s.headline  # the report's verdict is this standing


def test_no_baseline_is_unknown() -> None:
    rows = (ReportRow("model", "model", {"rmse": 1.0}),)
    assert standing(EvaluationReport("regression", 3, rows, "rmse")).level == "unknown"


def test_a_model_that_beats_weak_baselines_near_chance_is_not_use() -> None:
    near = standing(classification(acc=0.60, majority=0.55))
    assert near.level == "care", near
    assert "share right (0.6) is not clearly above the 0.55 of always guessing" in near.reason
    clear = standing(classification(acc=0.90, majority=0.55))
    assert clear.level == "use", clear
    # 0.6 against 0.55 is clear on 6000 test images, not on 60
    assert standing(classification(acc=0.60, majority=0.55, n_test=6000)).level == "use"


def test_standing_of_a_stored_report_ignores_its_stored_verdict_text() -> None:
    report = regression(14.0, 12.0, 1.0, 3.0)
    state = report.to_dict()
    assert state["verdict"] == report.verdict
    state["verdict"] = "SensorEncoder beats every baseline on rmse"  # an older mfgtx's text
    assert standing_of(state) == standing(report)
    assert standing_of(None).level == standing_of({}).level == "unknown"
    broken = standing_of({"rows": [{"name": "x"}]})
    assert broken.level == "unknown" and "cannot be read" in broken.reason


def test_every_reader_uses_the_one_function(monkeypatch: pytest.MonkeyPatch) -> None:
    """Swap the rule: the report's verdict, its JSON, its Markdown and a stored report's
    standing all change with it."""
    report = regression(10.0, 12.0, -3.0, -1.0)
    forced = Standing("do_not_rely", "Forced by the test.", "SensorEncoder")
    monkeypatch.setattr(rule, "standing", lambda r, m=None: forced)
    assert report.verdict == "Do not rely on it. Forced by the test."
    assert report.to_dict()["verdict"] == report.verdict and report.standing() is forced
    assert f"Verdict: {report.verdict}" in report.to_markdown()
    assert standing_of(report.to_dict()) is forced


def test_every_baseline_and_model_has_plant_words() -> None:
    names = {b.name for task in ("regression", "classification") for b in default_baselines(task)}
    names |= {b.name for b in default_baselines("forecast", period=24)}
    names |= {HogLogistic().name, MajorityImageClass.name, LinearRidge(12).name}
    names |= {LogisticRegression(class_weight="balanced").name, SeasonalNaive(7).name}
    for name in names:
        words = baseline_words(name)
        assert words != name and not CLASS_NAME.search(words), (name, words)
    assert baseline_words("SeasonalNaive(7)") == "repeating the readings 7 steps back"
    from mfgtx.kinds import KINDS

    models = {n.removeprefix("mfgtx.") for k in KINDS.values() for n in k.model_names}
    for name in models:
        words = model_words(name)
        assert words.startswith("the ") and not CLASS_NAME.search(words), (name, words)
    assert model_words("my press model") == "my press model"  # a name the user gave


def test_how_sure_speaks_plant_words_too() -> None:
    text = regression(11.9, 12.0, -0.5, 0.4).how_sure
    assert text.startswith(
        "Typical error (lower is better) of the Transformer minus that of a linear fit"
    )
    assert "cannot tell the two apart" in text and not CLASS_NAME.search(text)
