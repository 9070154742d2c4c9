"""What a comparison found: :class:`ReportRow` per predictor and the :class:`EvaluationReport`.

The verdict is computed from the rows every time it is asked for (never read back), by the
one rule of :func:`mfgtx.baselines.standing.standing`, so a report read back from JSON (or a
bundle written by an older mfgtx) gives the verdict of today's rule. A :class:`Difference`
per model says how sure its lead over the best baseline is.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

from mfgtx.baselines import standing as rule
from mfgtx.baselines._base import check_task
from mfgtx.baselines.standing import Standing, baseline_words, metric_words, model_words
from mfgtx.baselines.sweep_table import SweepTable
from mfgtx.calibration.coverage import Coverage
from mfgtx.metrics import HIGHER_IS_BETTER, plain_meanings, plain_name

__all__ = ["Difference", "EvaluationReport", "ReportRow"]

Kind = Literal["model", "baseline"]
_TASK_TITLE = {
    "regression": "Regression",
    "classification": "Classification",
    "forecast": "Forecast",
}


def _metric_title(metric: str) -> str:
    """``log_loss`` -> ``Log loss (lower is better)``."""
    words = metric_words(metric)
    return words[:1].upper() + words[1:]


def _none_if_nan(v: float) -> float | None:
    return None if math.isnan(v) else v


@dataclass(frozen=True)
class ReportRow:
    """Scores of one predictor on the test windows.

    Attributes:
        name: ``"model"`` (or the name given) or the baseline's name.
        kind: ``"model"`` or ``"baseline"``.
        metrics: metric name -> value; ``nan`` where undefined (see the report's notes).
    """

    name: str
    kind: Kind
    metrics: dict[str, float]

    def __post_init__(self) -> None:
        if self.kind not in ("model", "baseline"):
            raise ValueError(f"kind must be 'model' or 'baseline', found {self.kind!r}")
        unknown = sorted(set(self.metrics) - set(HIGHER_IS_BETTER))
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; known: {sorted(HIGHER_IS_BETTER)}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form; ``nan`` becomes ``None``."""
        return {
            "name": self.name,
            "kind": self.kind,
            "metrics": {k: _none_if_nan(v) for k, v in self.metrics.items()},
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ReportRow:
        """Rebuild from :meth:`to_dict` (``None`` becomes ``nan``)."""
        metrics = {
            str(k): (float("nan") if v is None else float(v)) for k, v in state["metrics"].items()
        }
        return cls(name=str(state["name"]), kind=state["kind"], metrics=metrics)


@dataclass(frozen=True)
class Difference:
    """A model minus the best baseline on one metric, with a paired bootstrap interval.

    The test lots are drawn with replacement (all windows of a drawn lot together, since
    overlapping windows of one lot are not independent evidence), the same draw for both
    predictors; see :func:`mfgtx.metrics.paired_bootstrap`. Images without lots are drawn
    one by one, byte-identical files together.

    Attributes:
        model: the model's name.
        baseline: the baseline best on ``metric``.
        metric: the metric compared.
        difference: ``model - baseline`` on every test window.
        low: lower end of the interval (``nan`` if no draw could be scored).
        high: upper end of the interval.
        level: the interval's level, e.g. 0.95.
        n_groups: test lots (or other units) drawn from.
        unit: what was drawn, plural: ``"test lots"``, or ``"distinct test images"``.
    """

    model: str
    baseline: str
    metric: str
    difference: float
    low: float
    high: float
    level: float
    n_groups: int
    unit: str = "test lots"

    def __post_init__(self) -> None:
        if self.metric not in HIGHER_IS_BETTER:
            raise ValueError(f"unknown metric {self.metric!r}; known: {sorted(HIGHER_IS_BETTER)}")

    def sentence(self) -> str:
        """How sure, in one sentence."""
        who, base = model_words(self.model), baseline_words(self.baseline)
        head = (
            f"{_metric_title(self.metric)} of {who} minus that of {base}: {self.difference:+.4g}, "
            f"{self.level:.0%} paired bootstrap interval over the {self.n_groups} {self.unit}"
        )
        if math.isnan(self.low):
            return f"{head}: undefined (no draw could be scored)."
        span = f"[{self.low:+.4g}, {self.high:+.4g}]"
        if self.low <= 0 <= self.high:
            return f"{head} {span}: it includes 0, so these {self.unit} cannot tell the two apart."
        ahead = (self.low > 0) == HIGHER_IS_BETTER[self.metric]
        side = "better" if ahead else "worse"
        return f"{head} {span}: {who} is {side} beyond resampling noise."

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form; ``nan`` becomes ``None``."""
        out = asdict(self)
        for k in ("difference", "low", "high"):
            out[k] = _none_if_nan(out[k])
        return out

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Difference:
        """Rebuild from :meth:`to_dict` (``None`` becomes ``nan``)."""
        num = {
            k: float("nan") if state[k] is None else float(state[k])
            for k in ("difference", "low", "high")
        }
        return cls(
            model=str(state["model"]),
            baseline=str(state["baseline"]),
            metric=str(state["metric"]),
            level=float(state["level"]),
            n_groups=int(state["n_groups"]),
            unit=str(state.get("unit", "test lots")),  # reports saved before units were named
            **num,
        )


def _better(a: float, b: float, metric: str) -> bool:
    """``a`` strictly better than ``b`` on ``metric`` (both finite)."""
    return a > b if HIGHER_IS_BETTER[metric] else a < b


def _best_of(rows: list[ReportRow] | tuple[ReportRow, ...], metric: str) -> ReportRow | None:
    """The row with the best finite ``metric`` (the first on ties); ``None`` if there is none."""
    best: ReportRow | None = None
    for r in rows:
        v = r.metrics[metric]
        if not math.isnan(v) and (best is None or _better(v, best.metrics[metric], metric)):
            best = r
    return best


@dataclass(frozen=True)
class EvaluationReport:
    """A model (or several) and the baselines scored on exactly the same test windows.

    Build it with :func:`~mfgtx.baselines.compare`.

    Attributes:
        task: ``"regression"``, ``"classification"`` or ``"forecast"``.
        n_test: test windows, each scored once by every predictor.
        rows: one :class:`ReportRow` per predictor, models first; all with the same metrics.
        primary: the metric of the verdict.
        n_train: training windows the baselines were fitted on (``None`` if unknown).
        notes: why some metric is ``nan``, per predictor.
        unit: what was scored, in words (``"windows"``, ``"images"``).
        differences: per model, a :class:`Difference` to the best baseline on the primary
            metric (empty when not computed, e.g. with a single test lot).
        intervals: per interval predictor (the model's band, a baseline's conformal
            interval), nominal vs realized coverage on the test lots with its binomial
            interval and the mean width (:class:`~mfgtx.calibration.coverage.Coverage`;
            empty for a model without a band).
        sweep: the trials of ``train.sweep`` and the one this report judges
            (:class:`~mfgtx.baselines.sweep_table.SweepTable`), or ``None`` without a sweep.

    Example:
        >>> rows = (ReportRow("model", "model", {"rmse": 14.1, "r2": 0.52}),
        ...         ReportRow("GradientBoosting", "baseline", {"rmse": 12.3, "r2": 0.63}),
        ...         ReportRow("TrainMean", "baseline", {"rmse": 20.4, "r2": 0.0}))
        >>> report = EvaluationReport("regression", n_test=50, rows=rows, primary="rmse")
        >>> report.verdict  # no interval here (no differences): the point values decide
        'Do not rely on it. The best baseline, boosted trees on window summaries, scores better \
than the model on typical error (lower is better), 12.3 against 14.1; prefer the baseline \
or retrain.'
        >>> report.best("r2")
        'GradientBoosting'
        >>> EvaluationReport.from_json(report.to_json()) == report
        True
    """

    task: str
    n_test: int
    rows: tuple[ReportRow, ...]
    primary: str
    n_train: int | None = None
    notes: tuple[str, ...] = ()
    unit: str = "windows"
    differences: tuple[Difference, ...] = ()
    intervals: tuple[Coverage, ...] = ()
    sweep: SweepTable | None = None

    def __post_init__(self) -> None:
        check_task(self.task)
        if not isinstance(self.n_test, int) or self.n_test < 1:
            raise ValueError(f"n_test must be a positive integer, found {self.n_test!r}")
        if not self.rows:
            raise ValueError("a report needs at least one row")
        names = [r.name for r in self.rows]
        if len(set(names)) != len(names):
            raise ValueError(f"predictor names must be unique, found {names}")
        keys = list(self.rows[0].metrics)
        for r in self.rows:
            if list(r.metrics) != keys:
                raise ValueError(
                    f"every row must have the same metrics; {self.rows[0].name!r} has {keys}, "
                    f"{r.name!r} has {list(r.metrics)}"
                )
        if self.primary not in keys:
            raise ValueError(f"primary metric {self.primary!r} is not one of the metrics {keys}")
        kinds = {r.name: r.kind for r in self.rows}
        for d in self.differences:
            if kinds.get(d.model) != "model" or kinds.get(d.baseline) != "baseline":
                raise ValueError(
                    f"a difference must be between a model and a baseline of this report, "
                    f"found {d.model!r} minus {d.baseline!r}"
                )

    @property
    def metrics(self) -> tuple[str, ...]:
        """Metric names, in column order."""
        return tuple(self.rows[0].metrics)

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rows if r.kind == "model")

    @property
    def baselines(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rows if r.kind == "baseline")

    def row(self, name: str) -> ReportRow:
        """The row of predictor ``name``."""
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no predictor {name!r}; predictors: {[r.name for r in self.rows]}")

    def best(self, metric: str | None = None) -> str:
        """Name of the predictor with the best ``metric`` (default: the primary one).

        ``nan`` never wins; ties go to the first row (models come first). Raises
        ``ValueError`` when no predictor has a value for the metric.
        """
        metric = self.primary if metric is None else metric
        if metric not in self.metrics:
            raise KeyError(f"no metric {metric!r} in this report; metrics: {list(self.metrics)}")
        best = _best_of(self.rows, metric)
        if best is None:
            raise ValueError(f"no predictor has a value for {metric}; see the notes")
        return best.name

    def best_baseline(self, metric: str | None = None) -> str | None:
        """Name of the baseline with the best ``metric`` (default: the primary one), ``None``
        when no baseline has a value for it."""
        metric = self.primary if metric is None else metric
        if metric not in self.metrics:
            raise KeyError(f"no metric {metric!r} in this report; metrics: {list(self.metrics)}")
        best = _best_of([r for r in self.rows if r.kind == "baseline"], metric)
        return None if best is None else best.name

    def standing(self, model: str | None = None) -> Standing:
        """The standing of ``model`` (default: the first) against the baselines: its level
        (``use``, ``care``, ``do_not_rely``, ``unknown``) and reason
        (:func:`~mfgtx.baselines.standing.standing`)."""
        return rule.standing(self, model)

    def verdicts(self) -> tuple[str, ...]:
        """One line per model: its standing against the baselines in words
        (:func:`~mfgtx.baselines.standing.standing`, the one rule every reader uses)."""
        return tuple(s.headline for s in rule.standings(self))

    @property
    def verdict(self) -> str:
        """The verdicts, as one line."""
        return " ".join(self.verdicts())

    @property
    def how_sure(self) -> str:
        """The :class:`Difference` sentences, as one line ("" when none were computed)."""
        return " ".join(d.sentence() for d in self.differences)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form (``nan`` as ``None``); includes the verdict for readers."""
        out = {
            "task": self.task,
            "n_test": self.n_test,
            "n_train": self.n_train,
            "primary": self.primary,
            "higher_is_better": {k: HIGHER_IS_BETTER[k] for k in self.metrics},
            "rows": [r.to_dict() for r in self.rows],
            "verdict": self.verdict,
            "how_sure": self.how_sure,
            "notes": list(self.notes),
            "unit": self.unit,
            "differences": [d.to_dict() for d in self.differences],
            "intervals": [c.to_dict() for c in self.intervals],
        }
        if self.sweep is not None:  # only with a sweep: reports without one read as before
            out["sweep"] = self.sweep.to_dict()
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The report as JSON text (strict JSON: no NaN)."""
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> EvaluationReport:
        """Rebuild from :meth:`to_dict`; the verdict is recomputed, not read."""
        missing = {"task", "n_test", "rows", "primary"} - set(state)
        if missing:
            raise ValueError(f"report state lacks {sorted(missing)}")
        return cls(
            task=state["task"],
            n_test=int(state["n_test"]),
            rows=tuple(ReportRow.from_dict(r) for r in state["rows"]),
            primary=str(state["primary"]),
            n_train=None if state.get("n_train") is None else int(state["n_train"]),
            notes=tuple(str(n) for n in state.get("notes", ())),
            unit=str(state.get("unit", "windows")),
            differences=tuple(Difference.from_dict(d) for d in state.get("differences", ())),
            intervals=tuple(Coverage.from_dict(c) for c in state.get("intervals", ())),
            sweep=None if state.get("sweep") is None else SweepTable.from_dict(state["sweep"]),
        )

    @classmethod
    def from_json(cls, text: str) -> EvaluationReport:
        """Rebuild from :meth:`to_json`."""
        return cls.from_dict(json.loads(text))

    def to_markdown(self) -> str:
        """A short table (best value per metric in bold), the verdict and any notes."""
        metrics = self.metrics
        best: dict[str, float | None] = {}
        for k in metrics:
            finite = [r.metrics[k] for r in self.rows if not math.isnan(r.metrics[k])]
            best[k] = (max(finite) if HIGHER_IS_BETTER[k] else min(finite)) if finite else None

        def cell(v: float, k: str) -> str:
            if math.isnan(v):
                return "n/a"
            return f"**{v:.4g}**" if v == best[k] else f"{v:.4g}"

        trained = (
            f", baselines fitted on {self.n_train} training {self.unit}" if self.n_train else ""
        )
        arrows = [f"{plain_name(k)} {'↑' if HIGHER_IS_BETTER[k] else '↓'}" for k in metrics]
        lines = [
            f"{_TASK_TITLE[self.task]}: {self.n_test} test {self.unit}, the same for every "
            f"predictor{trained}. ↑ higher is better, ↓ lower is better.",
            "",
            "| predictor | " + " | ".join(arrows) + " |",
            "| --- | " + " | ".join("---:" for _ in metrics) + " |",
        ]
        for r in self.rows:
            # in words (model_words, baseline_words), never the class behind the row
            label = model_words(r.name) if r.kind == "model" else baseline_words(r.name)
            label = label if r.kind == "model" else f"{label} (baseline)"
            cells = " | ".join(cell(r.metrics[k], k) for k in metrics)
            lines.append(f"| {label} | {cells} |")
        lines += ["", "What the figures mean:", *(f"- {m}" for m in plain_meanings(metrics))]
        lines += ["", f"Verdict: {self.verdict}"]
        if self.differences:
            lines += ["", f"How sure: {self.how_sure}"]
        if self.intervals:
            lines += ["", *_interval_table(self.intervals, set(self.baselines))]
        if self.sweep is not None:
            lines += ["", *self.sweep.to_markdown()]
        if self.notes:
            lines += ["", "Notes:", *(f"- {n}" for n in self.notes)]
        return "\n".join(lines) + "\n"


def _interval_table(intervals: tuple[Coverage, ...], baselines: set[str]) -> list[str]:
    """The intervals on the test lots: promised, held (with its binomial interval), width."""
    level = f"{intervals[0].level:.0%}"
    lines = [
        f"Intervals on the test lots (share of test values inside the band, by lot; {level} "
        "binomial interval over the test lots):",
        "",
        "| predictor | band | promised | held | interval | mean width | test lots |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for c in intervals:
        who = f"{baseline_words(c.name)} (baseline)" if c.name in baselines else model_words(c.name)
        who += f", {c.target} only" if c.target is not None else ""
        held = "n/a" if math.isnan(c.coverage) else f"{c.coverage:.1%}"
        span = "n/a" if math.isnan(c.low) else f"{c.low:.1%} to {c.high:.1%}"
        width = "n/a" if math.isnan(c.width) else f"{c.width:.4g}"
        lines.append(
            f"| {who} | {c.band_words} | {c.nominal:.0%} | {held} | {span} | {width} | {c.lots} |"
        )
    return lines
