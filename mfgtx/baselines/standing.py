"""A model's standing against its baselines: one level and one plain sentence for every reader.

:func:`standing` is the one rule. The report's verdict (:attr:`EvaluationReport.verdict`),
the summary ``mfgtx train`` and ``mfgtx evaluate`` print, and the dashboard's trust box all
come from it, so they cannot disagree. The levels:

* ``use``: the model beats the best baseline on the primary metric beyond resampling noise
  (the paired bootstrap interval of the difference excludes 0), and a classifier is also
  clearly above always guessing the most common class;
* ``care``: the test lots cannot tell it from the best baseline, or no interval was
  computed and it is ahead, or it beats the baselines but is near chance;
* ``do_not_rely``: the best baseline does better (beyond noise, or with no interval);
* ``unknown``: no comparison is stored (no baseline, no value of the primary metric).

Sentences name predictors in plant words (:func:`model_words`, :func:`baseline_words`),
never by their Python class names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mfgtx.metrics import HIGHER_IS_BETTER, plain_name

if TYPE_CHECKING:
    from mfgtx.baselines.report import EvaluationReport, ReportRow

__all__ = [
    "LEVELS",
    "Standing",
    "baseline_words",
    "metric_words",
    "model_words",
    "standing",
    "standing_of",
    "standings",
]

Level = Literal["use", "care", "do_not_rely", "unknown"]

#: Each level in words, as the start of every verdict line.
LEVELS: Mapping[str, str] = {
    "use": "Use it",
    "care": "Use with care",
    "do_not_rely": "Do not rely on it",
    "unknown": "Not judged",
}

#: How a sentence names the models mfgtx trains (the report's row name -> plant words).
_MODELS = {
    "SensorEncoder": "the Transformer",
    "SensorEncoderEnsemble": "the Transformer ensemble",
    "CausalForecaster": "the forecasting Transformer",
    "ForecasterEnsemble": "the forecasting Transformer ensemble",
    "DefectViT": "the image Transformer",
    "model": "the model",
    "bundle": "the model",
}

#: How a sentence names each baseline (its ``name`` -> plant words); ``{0}`` is the number in
#: a name like ``SeasonalNaive(24)``.
_BASELINES = {
    "TrainMean": "the training average",
    "TrainMeanForecast": "the training average",
    "Ridge": "a linear fit on window summaries",
    "GradientBoosting": "boosted trees on window summaries",
    "MajorityClass": "always guessing the most common class",
    "LogisticRegression": "logistic regression on window summaries",
    "LogisticRegression(balanced)": "logistic regression on window summaries (rare classes "
    "weighted up)",
    "GradientBoostingClassifier": "boosted trees on window summaries",
    "Naive": "repeating the last reading",
    "SeasonalNaive": "repeating the readings {0} steps back",
    "LinearRidge": "a straight-line fit to the last readings",
    "LinearRidge(n)": "a straight-line fit to the last {0} readings",
    "HOG + logistic regression": "logistic regression on edge directions (HOG)",
}

#: The baseline whose accuracy is the majority-class rate (sensor and image classifiers).
MAJORITY = "MajorityClass"


def model_words(name: str) -> str:
    """A model's row name in plant words: ``SensorEncoder`` -> ``the Transformer``; a name
    given by the user is kept as it is.

    >>> model_words("CausalForecaster's ridge map (picked on validation)")
    "the forecasting Transformer's ridge map (picked on validation)"
    """
    for key, words in _MODELS.items():
        if name == key or re.match(rf"{re.escape(key)}(?![A-Za-z0-9_])", name):
            return words + name[len(key) :]
    return name


def baseline_words(name: str) -> str:
    """A baseline's name in plant words: ``Naive`` -> ``repeating the last reading``.

    >>> baseline_words("SeasonalNaive(24)"), baseline_words("my own")
    ('repeating the readings 24 steps back', 'my own')
    """
    if name in _BASELINES:
        return _BASELINES[name]
    m = re.fullmatch(r"(\w+)\((\d+)\)", name)
    if m:
        key = m.group(1) if m.group(1) in _BASELINES else f"{m.group(1)}(n)"
        if key in _BASELINES:
            return _BASELINES[key].format(m.group(2))
    return name


def metric_words(metric: str) -> str:
    """``log_loss`` -> ``probability error (lower is better)``: the plain name of
    :data:`mfgtx.metrics.PLAIN`, the one the report tables and the dashboard show."""
    way = "higher" if HIGHER_IS_BETTER.get(metric, True) else "lower"
    return f"{plain_name(metric)} ({way} is better)"


@dataclass(frozen=True)
class Standing:
    """A model's standing against its baselines.

    Attributes:
        level: ``"use"``, ``"care"``, ``"do_not_rely"`` or ``"unknown"``.
        reason: why, in one plain sentence.
        model: the model's row name in the report (``""`` when nothing was stored).
    """

    level: Level
    reason: str
    model: str = ""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {list(LEVELS)}, found {self.level!r}")

    @property
    def words(self) -> str:
        """The level in words: ``"Use with care"``."""
        return LEVELS[self.level]

    @property
    def headline(self) -> str:
        """``"Use with care. On the 9 test lots ..."``: the level, then the reason."""
        return f"{self.words}. {self.reason}"


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _num(v: float) -> str:
    return f"{v:.3g}"


def _better(a: float, b: float, metric: str) -> bool:
    return a > b if HIGHER_IS_BETTER[metric] else a < b


def _near_chance(report: EvaluationReport, row: ReportRow) -> str | None:
    """Why a classifier is not clearly above chance (a clause), or ``None``.

    Chance is the majority-class baseline (its accuracy is the majority-class rate, its
    balanced accuracy ``1/M``); "clearly above" is more than two binomial standard errors
    over the ``n_test`` test items. Near chance needs every such figure the report has to
    be near it (an imbalanced plant's accuracy alone is near the majority rate by nature)."""
    if report.task != "classification" or MAJORITY not in report.baselines:
        return None
    chance = report.row(MAJORITY).metrics
    near = []
    for metric in ("accuracy", "balanced_accuracy"):
        v, p = row.metrics.get(metric, math.nan), chance.get(metric, math.nan)
        if math.isnan(v) or math.isnan(p):
            continue
        margin = 2.0 * math.sqrt(p * (1.0 - p) / report.n_test)
        if v > p + margin:
            return None
        near.append(f"its {plain_name(metric)} ({_num(v)}) is not clearly above the {_num(p)}")
    if not near:
        return None
    return f"{near[0]} of always guessing the most common class"  # the first says enough


def standing(report: EvaluationReport, model: str | None = None) -> Standing:
    """The standing of ``model`` (default: the report's first model) against its baselines.

    The rule, on the report's primary metric and its bootstrap :class:`Difference` to the
    best baseline: beyond noise ahead -> ``use`` (``care`` when a classifier is near
    chance, see :func:`_near_chance`); the interval includes 0 -> ``care``; beyond noise
    behind -> ``do_not_rely``. Without an interval (one test lot, or none computed), ahead ->
    ``care`` and behind -> ``do_not_rely``. No baseline or no value -> ``unknown``.

    >>> from mfgtx.baselines import EvaluationReport, ReportRow
    >>> rows = (ReportRow("SensorEncoder", "model", {"rmse": 14.1}),
    ...         ReportRow("GradientBoosting", "baseline", {"rmse": 12.3}))
    >>> standing(EvaluationReport("regression", 50, rows, "rmse")).headline
    'Do not rely on it. The best baseline, boosted trees on window summaries, scores better \
than the Transformer on typical error (lower is better), 12.3 against 14.1; prefer the baseline or \
retrain.'
    """
    name = report.models[0] if model is None else model
    if report.row(name).kind != "model":
        raise ValueError(f"{name!r} is a baseline of this report, not a model")
    row = report.row(name)
    metric = report.primary
    who, on = model_words(name), metric_words(metric)
    v = row.metrics[metric]
    if math.isnan(v):
        return Standing("unknown", f"The test set gives no value of {on} for {who}, so it "
                        "cannot be compared with the baselines.", name)  # fmt: skip
    diff = next((d for d in report.differences if d.model == name and d.metric == metric), None)
    best = diff.baseline if diff is not None else report.best_baseline()
    if best is None:
        return Standing("unknown", f"No baseline has a value for {on} to compare {who} with.", name)
    b = report.row(best).metrics[metric]
    base = f"the best baseline, {baseline_words(best)},"
    values = f"{_num(v)} against {_num(b)}"
    if diff is None or math.isnan(diff.low):
        if _better(v, b, metric):
            reason = (f"{_cap(who)} scores better than {base} on {on}, {values}, but with no "
                      "interval computed the lead may be noise.")  # fmt: skip
            return Standing("care", reason, name)
        if v == b:
            reason = f"{_cap(who)} ties {base} on {on}, {values}."
            return Standing("care", reason, name)
        reason = (f"{_cap(base)} scores better than {who} on {on}, {_num(b)} against {_num(v)}; "
                  "prefer the baseline or retrain.")  # fmt: skip
        return Standing("do_not_rely", reason, name)
    over = f"beyond resampling noise over the {diff.n_groups} {diff.unit}"
    if diff.low <= 0 <= diff.high:
        reason = (f"On the {diff.n_groups} {diff.unit} {who} cannot be told apart from {base} "
                  f"on {on}, {values}.")  # fmt: skip
        return Standing("care", reason, name)
    if (diff.low > 0) != HIGHER_IS_BETTER[metric]:
        reason = (f"{_cap(base)} beats {who} on {on} {over}, {_num(b)} against {_num(v)}; "
                  "prefer the baseline or retrain.")  # fmt: skip
        return Standing("do_not_rely", reason, name)
    chance = _near_chance(report, row)
    if chance is not None:
        reason = f"{_cap(who)} beats {base} on {on} {over}, but {chance}."
        return Standing("care", reason, name)
    reason = f"{_cap(who)} beats {base} on {on} {over}, {values}."
    return Standing("use", reason, name)


def standings(report: EvaluationReport) -> tuple[Standing, ...]:
    """:func:`standing` of every model of ``report``, in row order."""
    return tuple(standing(report, m) for m in report.models)


def standing_of(metrics: Mapping[str, Any] | None) -> Standing:
    """:func:`standing` of the first model of a report stored as a dict (a bundle manifest's
    ``metrics``, :meth:`EvaluationReport.to_dict`); ``unknown`` when none is stored or it
    cannot be read. The verdict text stored beside it is never read: it is recomputed."""
    from mfgtx.baselines.report import EvaluationReport  # the report builds on this module

    if not metrics or not metrics.get("rows"):
        return Standing("unknown", "No comparison with baselines is stored, so how far to "
                        "trust this model is unknown.")  # fmt: skip
    try:
        report = EvaluationReport.from_dict(dict(metrics))
    except (KeyError, TypeError, ValueError) as e:
        return Standing("unknown", f"The stored comparison with baselines cannot be read ({e}).")
    if not report.models:
        return Standing("unknown", "The stored comparison has no model row.")
    return standing(report)
