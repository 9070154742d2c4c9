"""An operating threshold from what a missed defect costs compared with a false alarm."""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from mfgtx.calibration._common import _check_cost, _defect_probability
from mfgtx.metrics import _labels_proba

_COST_RTOL = 1e-9  # validation costs this close (relative) count as tied


def bayes_threshold(*, cost_missed_defect: float, cost_false_alarm: float = 1.0) -> float:
    """The threshold a perfectly calibrated model would use: ``c_fa / (c_fa + c_missed)``.

    Flagging a part with defect probability ``p`` costs ``(1 - p) * cost_false_alarm`` on
    average, passing it costs ``p * cost_missed_defect``; flagging is cheaper exactly when
    ``p`` is above this value. Only the ratio of the two costs matters. Use it when the
    probabilities are calibrated (for instance by :class:`TemperatureScaler`) and the
    validation set is too small for :func:`choose_threshold`.

    >>> bayes_threshold(cost_missed_defect=1.0)            # equal costs
    0.5
    >>> round(bayes_threshold(cost_missed_defect=20.0), 4)  # a miss costs 20 false alarms
    0.0476
    """
    c_md = _check_cost(cost_missed_defect, "cost_missed_defect")
    c_fa = _check_cost(cost_false_alarm, "cost_false_alarm")
    return c_fa / (c_fa + c_md)


def apply_threshold(probabilities: object, threshold: float) -> np.ndarray:
    """Which parts to flag as defective: ``P(defect) > threshold``, a bool ``(N,)`` array.

    Args:
        probabilities: ``(N,)`` P(defect) or ``(N, 2)`` probabilities.
        threshold: in ``[0, 1]``, e.g. :attr:`ThresholdChoice.threshold`.

    >>> apply_threshold([0.1, 0.5, 0.9], 0.5)
    array([False, False,  True])
    """
    if isinstance(threshold, bool) or not isinstance(threshold, Real) or not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be a number in [0, 1], found {threshold!r}")
    return _defect_probability(probabilities, "apply_threshold") > threshold


@dataclass(frozen=True)
class ThresholdChoice:
    """An operating threshold and what it did on the validation set.

    The rates are computed from the counts, so they always agree with them.

    Attributes:
        threshold: flag a part when ``P(defect) > threshold``.
        cost_missed_defect, cost_false_alarm: the costs it was chosen for.
        tp, fp, tn, fn: validation counts: defects flagged, good parts flagged (false
            alarms), good parts passed, defects passed (missed).
    """

    threshold: float
    cost_missed_defect: float
    cost_false_alarm: float
    tp: int
    fp: int
    tn: int
    fn: int

    def __post_init__(self) -> None:
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, Real) or not 0 <= t <= 1:
            raise ValueError(f"threshold must be in [0, 1], found {self.threshold!r}")
        _check_cost(self.cost_missed_defect, "cost_missed_defect")
        _check_cost(self.cost_false_alarm, "cost_false_alarm")
        counts = {"tp": self.tp, "fp": self.fp, "tn": self.tn, "fn": self.fn}
        for name, v in counts.items():
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"{name} must be a non-negative integer, found {v!r}")
        if self.tp + self.fn == 0 or self.fp + self.tn == 0:
            raise ValueError(f"the counts need both defects and good parts, found {counts}")

    @property
    def cost_ratio(self) -> float:
        """How many false alarms one missed defect is worth."""
        return self.cost_missed_defect / self.cost_false_alarm

    @property
    def expected_cost(self) -> float:
        """``(cost_missed_defect * fn + cost_false_alarm * fp) / N``: average cost per part."""
        n = self.tp + self.fp + self.tn + self.fn
        return (self.cost_missed_defect * self.fn + self.cost_false_alarm * self.fp) / n

    @property
    def recall(self) -> float:
        """Share of the defects that are flagged."""
        return self.tp / (self.tp + self.fn)

    @property
    def precision(self) -> float:
        """Share of the flags that are real defects; ``nan`` when nothing is flagged."""
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else math.nan

    @property
    def false_alarm_rate(self) -> float:
        """Share of the good parts that are flagged."""
        return self.fp / (self.fp + self.tn)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible fields and rates; a ``nan`` precision becomes ``None``."""
        return {
            "threshold": float(self.threshold),
            "cost_missed_defect": float(self.cost_missed_defect),
            "cost_false_alarm": float(self.cost_false_alarm),
            "cost_ratio": self.cost_ratio,
            "expected_cost": self.expected_cost,
            "tp": self.tp,
            "fp": self.fp,
            "tn": self.tn,
            "fn": self.fn,
            "recall": self.recall,
            "precision": None if math.isnan(self.precision) else self.precision,
            "false_alarm_rate": self.false_alarm_rate,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ThresholdChoice:
        """Rebuild from :meth:`to_dict` (the rates are recomputed from the counts)."""
        fields = ("threshold", "cost_missed_defect", "cost_false_alarm", "tp", "fp", "tn", "fn")
        missing = [f for f in fields if f not in state]
        if missing:
            raise ValueError(f"threshold choice state lacks {missing}, found {sorted(state)}")
        threshold, missed, false_alarm = (float(state[f]) for f in fields[:3])
        tp, fp, tn, fn = (state[f] for f in fields[3:])
        return cls(threshold, missed, false_alarm, tp, fp, tn, fn)


def choose_threshold(
    probabilities: object,
    labels: object,
    *,
    cost_missed_defect: float,
    cost_false_alarm: float = 1.0,
) -> ThresholdChoice:
    """The threshold with the lowest total cost on validation data, for a defect classifier.

    What the plant engineer sets is how much worse a missed defect is than a false alarm:
    "a missed defect costs 20 times a false alarm" is ``cost_missed_defect=20`` (with the
    default ``cost_false_alarm=1``); money per event works as well, only the ratio matters.
    The higher the ratio, the lower the threshold: more parts are stopped for inspection and
    fewer defects escape.

    Every decision the validation probabilities allow is tried (thresholds 0, 1 and each
    distinct probability) and the total cost ``cost_missed_defect * fn + cost_false_alarm *
    fp`` is counted. Ties: when several thresholds cost the same, the highest ones win (fewer
    alarms for the same cost), and the threshold returned is the middle of that run of
    equally good thresholds, i.e. half way between the validation probabilities on either
    side, rather than on one of them. A part with probability exactly 0 is never flagged.

    Args:
        probabilities: ``(N,)`` P(defect) or ``(N, 2)`` validation probabilities, best
            calibrated first (:class:`TemperatureScaler`).
        labels: ``(N,)``, ``1`` = defect, ``0`` = good; both must be present.
        cost_missed_defect: cost of passing a defective part (a false negative).
        cost_false_alarm: cost of stopping a good part (a false positive).

    Example:
        >>> p = [0.1, 0.3, 0.4, 0.8, 0.9]
        >>> y = [0, 1, 0, 1, 1]
        >>> c = choose_threshold(p, y, cost_missed_defect=1.0)  # flags 0.8 and 0.9
        >>> round(c.threshold, 6), c.fn, c.fp
        (0.6, 1, 0)
        >>> c = choose_threshold(p, y, cost_missed_defect=20.0)  # a miss is 20 alarms
        >>> c.threshold, c.recall, c.false_alarm_rate
        (0.2, 1.0, 0.5)
    """
    c_md = _check_cost(cost_missed_defect, "cost_missed_defect")
    c_fa = _check_cost(cost_false_alarm, "cost_false_alarm")
    y, proba = _labels_proba(labels, probabilities, "choose_threshold")
    if proba.shape[1] != 2:
        raise ValueError(
            "choose_threshold is for binary problems (defect vs good): pass (N,) P(defect) or "
            f"(N, 2) probabilities, found {proba.shape[1]} classes"
        )
    p = proba[:, 1]
    n_pos = int(y.sum())
    n_neg = y.size - n_pos
    if n_pos == 0 or n_neg == 0:
        raise ValueError(
            f"choose_threshold: the validation labels hold only class {int(y[0])} ({y.size} "
            "parts); choosing a threshold needs both defects (1) and good parts (0)"
        )
    # Threshold t flags p > t; the decisions only change at the distinct probabilities, so
    # the candidate t = lefts[i] stands for the whole interval [lefts[i], lefts[i + 1]).
    lefts = np.unique(np.concatenate([[0.0], p]))  # (C,) sorted
    rights = np.append(lefts[1:], 1.0)  # (C,); the last interval [max p, 1] is closed
    flagged_pos = n_pos - np.searchsorted(np.sort(p[y == 1]), lefts, side="right")  # tp
    flagged_neg = n_neg - np.searchsorted(np.sort(p[y == 0]), lefts, side="right")  # fp
    cost = c_md * (n_pos - flagged_pos) + c_fa * flagged_neg  # (C,)
    tied = cost <= cost.min() * (1 + _COST_RTOL)
    last = int(np.flatnonzero(tied)[-1])  # highest best candidate
    first = last
    while first > 0 and tied[first - 1]:
        first -= 1
    low, high = float(lefts[first]), float(rights[last])
    threshold = 0.5 * (low + high)
    if threshold >= high and last < lefts.size - 1:  # neighbouring floats: stay inside
        threshold = low
    flag = p > threshold
    return ThresholdChoice(
        threshold=threshold,
        cost_missed_defect=c_md,
        cost_false_alarm=c_fa,
        tp=int((flag & (y == 1)).sum()),
        fp=int((flag & (y == 0)).sum()),
        tn=int((~flag & (y == 0)).sum()),
        fn=int((~flag & (y == 1)).sum()),
    )


# ---------------------------------------------------------------------- reliability curve
