"""Whether a model still holds where the truth has arrived, against its own test figures.

The judged scores are a bundle's scores joined to the truth that arrived later
(:func:`mfgtx.history.judged_scores`). A truth of a whole lot is compared with the lot's last
scored window (as ``mfgtx evaluate`` judges a lot); a truth of a window end with that window.

- a classifier (``p_bad``): the Brier score (probability error, lower is better) against the
  test lots' Brier score, beside the share of right decisions;
- a regressor: the average error (MAE) of its first target against the test MAE, and the
  share of true values inside the interval against the share the interval was built for.

The model is not valid when its realized error is
:attr:`~mfgtx.jobfile.watch.WatchSettings.error_ratio` times its test error or more, or its
interval holds ``coverage_drop`` less of the truth than it was built for; unjudged (``None``)
with fewer than ``min_truth`` judged windows or without the test figure to compare with.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.jobfile.watch import WatchSettings

__all__ = ["ModelCheck", "check_model", "reported_figures", "truth_number"]

_TRUE = {"true", "yes", "bad", "defect", "fail", "nok", "n.i.o."}
_FALSE = {"false", "no", "good", "pass", "ok", "i.o."}


def truth_number(value: Any) -> float:
    """A truth value as a number: a number's text, or a pass/fail word (bad, defect, true:
    1; good, pass, false: 0); NaN when it is neither."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return 1.0
    if text in _FALSE:
        return 0.0
    try:
        return float(text)
    except ValueError:
        return math.nan


@dataclass(frozen=True)
class ModelCheck:
    """A model's realized figures on the lots whose truth arrived, against its test figures.

    Attributes:
        judged: scored windows judged (with their truth).
        figure: the error compared (``brier`` or ``mae``), or ``None`` when not judged.
        realized, test: that figure on the judged windows and on the bundle's test lots.
        accuracy: the share of right decisions (a classifier), or ``None``.
        coverage, nominal: the share of truths inside the interval, and the share it was
            built for (a regressor with an interval), or ``None``.
        valid: ``True``, ``False``, or ``None`` (not judged).
        why: the reason in plant words.
        problems: ``(reason, message)`` pairs (``error``, ``coverage``).
    """

    judged: int
    figure: str | None
    realized: float | None
    test: float | None
    valid: bool | None
    why: str
    accuracy: float | None = None
    coverage: float | None = None
    nominal: float | None = None
    problems: tuple[tuple[str, str], ...] = ()


def reported_figures(manifest: Mapping[str, Any]) -> dict[str, float]:
    """The model's own test figures a bundle keeps (``metrics``: the report's model row and
    its extra figures), empty when the bundle has none."""
    metrics = manifest.get("metrics") or {}
    rows = metrics.get("rows") or []
    out: dict[str, float] = {}
    for row in rows[:1]:  # the report's first row is the model
        out.update({k: float(v) for k, v in (row.get("metrics") or {}).items() if v is not None})
    out.update({k: float(v) for k, v in (metrics.get("extra") or {}).items() if v is not None})
    return out


def _judged_rows(judged: pd.DataFrame) -> pd.DataFrame:
    """Window truths as they are; a lot's truth on its last scored window only."""
    if judged.empty:
        return judged
    own = judged[judged["truth_of_window"].astype(bool)]
    whole = judged[~judged["truth_of_window"].astype(bool)]
    last = whole.sort_values(["lot", "window_end"]).groupby("lot", sort=False).tail(1)
    return pd.concat([own, last], ignore_index=True)


def _prediction(judged: pd.DataFrame, column: str) -> np.ndarray:
    return np.array(
        [math.nan if p.get(column) is None else float(p[column]) for p in judged["predictions"]],
        dtype=np.float64,
    )


def check_model(
    judged: pd.DataFrame,
    figures: Mapping[str, float],
    settings: WatchSettings,
    *,
    task: str | None,
    targets: Sequence[str] = (),
    nominal: float | None = None,
) -> ModelCheck:
    """Judge a model on its scores with truth (:func:`mfgtx.history.judged_scores`) against
    its test ``figures`` (:func:`reported_figures`); ``nominal``: the share its interval was
    built for (e.g. 0.8 for 10-90 %), or ``None``."""
    rows = _judged_rows(judged)
    y = (
        np.array([truth_number(v) for v in rows["truth"]], dtype=np.float64)
        if len(rows)
        else (np.zeros(0))
    )
    n = int(np.isfinite(y).sum())
    if n < max(settings.min_truth, 1):
        return ModelCheck(
            n,
            None,
            None,
            None,
            None,
            f"only {n} scored window(s) have their truth yet; the model is judged "
            f"from {settings.min_truth} on",
        )
    if task == "classification":
        return _classifier(rows, y, figures, settings)
    if task == "regression" and targets:
        return _regressor(rows, y, figures, settings, targets[0], nominal)
    return ModelCheck(
        n,
        None,
        None,
        None,
        None,
        f"a {task or 'model of unknown task'} is not judged on its truth by the watch",
    )


def _ratio_problem(
    figure: str, realized: float, test: float, settings: WatchSettings
) -> tuple[str, str] | None:
    words = {"brier": "probability error (Brier score)", "mae": "average error"}[figure]
    limit = settings.error_ratio * test
    if realized < limit or (test <= 0 and realized <= 0):
        return None
    times = realized / test if test > 0 else math.inf
    return (
        "error",
        f"its {words} on the lots whose truth arrived is {realized:.4g}, "
        f"{times:.1f} times the {test:.4g} of its test lots (limit: "
        f"{settings.error_ratio:g} times)",
    )


def _classifier(
    rows: pd.DataFrame, y: np.ndarray, figures: Mapping[str, float], settings: WatchSettings
) -> ModelCheck:
    known = np.isfinite(y)
    p = _prediction(rows, "p_bad")
    both = known & np.isfinite(p)
    decided = rows["decision"].astype("string").str.lower().to_numpy()
    right = [(d == "bad") == (t == 1.0) for d, t in zip(decided[known], y[known], strict=True)]
    accuracy = float(np.mean(right)) if right else None
    test = figures.get("brier")
    if not both.any() or test is None:
        return ModelCheck(
            int(known.sum()),
            None,
            None,
            test,
            None,
            "no bad-lot probability or no test Brier score to compare with",
            accuracy=accuracy,
        )
    realized = float(np.mean((p[both] - y[both]) ** 2))
    problem = _ratio_problem("brier", realized, test, settings)
    return _verdict(int(both.sum()), "brier", realized, test, problem, accuracy=accuracy)


def _regressor(
    rows: pd.DataFrame,
    y: np.ndarray,
    figures: Mapping[str, float],
    settings: WatchSettings,
    target: str,
    nominal: float | None,
) -> ModelCheck:
    pred = _prediction(rows, target)
    both = np.isfinite(y) & np.isfinite(pred)
    test = figures.get("mae")
    if not both.any() or test is None:
        return ModelCheck(
            int(both.sum()),
            None,
            None,
            test,
            None,
            f"no {target} prediction or no test average error to compare with",
        )
    realized = float(np.mean(np.abs(pred[both] - y[both])))
    problems = [_ratio_problem("mae", realized, test, settings)]
    coverage = None
    low = pd.to_numeric(rows["interval_low"], errors="coerce").to_numpy(dtype=np.float64)
    high = pd.to_numeric(rows["interval_high"], errors="coerce").to_numpy(dtype=np.float64)
    banded = both & np.isfinite(low) & np.isfinite(high)
    if banded.any() and nominal is not None:
        inside = (y[banded] >= low[banded]) & (y[banded] <= high[banded])
        coverage = float(inside.mean())
        if coverage < nominal - settings.coverage_drop:
            problems.append(
                (
                    "coverage",
                    f"its interval holds {coverage:.0%} of the true values "
                    f"that arrived; it was built to hold {nominal:.0%}",
                )
            )
    return _verdict(
        int(both.sum()), "mae", realized, test, *problems, coverage=coverage, nominal=nominal
    )


def _verdict(
    n: int,
    figure: str,
    realized: float,
    test: float,
    *found: tuple[str, str] | None,
    accuracy: float | None = None,
    coverage: float | None = None,
    nominal: float | None = None,
) -> ModelCheck:
    problems = tuple(p for p in found if p is not None)
    if problems:
        why = "; ".join(m for _, m in problems)
    else:
        why = (
            f"its {figure} on {n} judged window(s) is {realized:.4g} against {test:.4g} on "
            f"its test lots"
        )
    return ModelCheck(
        n,
        figure,
        round(realized, 6),
        round(test, 6),
        not problems,
        why,
        accuracy=accuracy,
        coverage=coverage,
        nominal=nominal,
        problems=problems,
    )
