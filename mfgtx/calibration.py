"""Calibrated probabilities and a cost-based operating threshold for defect classifiers.

Shape legend: ``N`` samples (parts, windows, images), ``K`` classes.

A classifier's probabilities are often over-confident (a "95 %" defect call that is right
70 % of the time). Three tools, all fitted or checked on a *validation* set that the model
did not train on:

* :class:`TemperatureScaler` (Guo et al., 2017) divides the logits by one number, the
  temperature ``T``, chosen to minimise the log loss. ``T > 1`` softens an over-confident
  model, ``T < 1`` sharpens an under-confident one; the ranking of parts, and so ROC AUC,
  does not change.
* :func:`choose_threshold` picks the probability above which a part is flagged, from what a
  missed defect costs compared with a false alarm. :func:`bayes_threshold` is the same rule
  for a perfectly calibrated model; :func:`apply_threshold` flags parts.
* :func:`reliability_curve` bins the probabilities for a calibration plot.

Conventions are those of :mod:`mfgtx.metrics`: labels are integers ``0..K-1`` and, for a
binary problem, class ``1`` is the defect. A binary model gives one logit per sample,
shape ``(N,)``, read as ``sigmoid(logit) = P(defect)``; a multi-class model gives ``(N, K)``.
A part is flagged when ``P(defect) > threshold`` (strictly), as in :mod:`mfgtx.metrics`,
where class 1 is predicted when ``P(class 1) > 0.5``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import torch

from mfgtx.metrics import _finite, _labels_proba

__all__ = [
    "TEMPERATURE_RANGE",
    "CalibrationWarning",
    "TemperatureScaler",
    "ThresholdChoice",
    "apply_threshold",
    "bayes_threshold",
    "choose_threshold",
    "reliability_curve",
]

TEMPERATURE_RANGE = (0.05, 20.0)
"""The temperatures :meth:`TemperatureScaler.fit` searches, ``(lowest, highest)``."""

_STEP_RTOL = 1e-10  # the temperature search stops when 1/T moves by less than this (relative)
_COST_RTOL = 1e-9  # validation costs this close (relative) count as tied


class CalibrationWarning(UserWarning):
    """A calibration result deserves a second look (a temperature at the end of its range)."""


# ---------------------------------------------------------------------------- input checks


def _as_float_array(x: object) -> np.ndarray:
    """numpy float64 copy of a numpy array, list or torch tensor (any dtype, any device)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to(device="cpu", dtype=torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _as_logits(logits: object, where: str) -> np.ndarray:
    """Validated finite logits, ``(N,)`` (binary) or ``(N, K)`` with ``K >= 2``."""
    z = _as_float_array(logits)
    if z.ndim not in (1, 2) or (z.ndim == 2 and z.shape[1] < 2):
        raise ValueError(
            f"{where}: logits must be (N,) (one logit for class 1, binary) or (N, K) with "
            f"K >= 2 classes, found shape {z.shape}"
        )
    if z.shape[0] == 0:
        raise ValueError(f"{where}: no samples (logits of shape {z.shape})")
    _finite(z, where, "logits")
    return z


def _two_column(z: np.ndarray) -> np.ndarray:
    """Binary ``(N,)`` logits -> ``(N, 2)`` logits ``[0, z]`` (same softmax); ``(N, K)`` as is."""
    return np.stack([np.zeros_like(z), z], axis=1) if z.ndim == 1 else z


def _check_labels(labels: object, n: int, k: int, where: str) -> np.ndarray:
    """Validated integer labels ``(N,)`` in ``0..k-1``, at least two classes present."""
    y = _as_float_array(labels)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(
            f"{where}: labels must have shape ({n},) to match the logits, found {y.shape}"
        )
    _finite(y, where, "labels")
    bad = (y != np.round(y)) | (y < 0) | (y >= k)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{where}: labels[{i}] = {y[i]:g} is not a class label 0..{k - 1} (the logits "
            f"have {k} classes{'; binary (N,) logits mean classes 0 and 1' if k == 2 else ''})"
        )
    present = np.unique(y).astype(np.int64)
    if present.size < 2:
        raise ValueError(
            f"{where}: the validation labels hold only class {present[0]} ({n} samples); "
            "calibration needs both classes (defects and good parts) in the validation set"
        )
    return y.astype(np.int64)


def _check_cost(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not value > 0:
        raise ValueError(f"{name} must be a positive number, found {value!r}")
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, found {value!r}")
    return float(value)


def _defect_probability(probabilities: object, where: str) -> np.ndarray:
    """``(N,)`` P(defect) from ``(N,)`` or ``(N, 2)`` probabilities, checked to lie in [0, 1]."""
    p = _as_float_array(probabilities)
    if p.ndim == 2 and p.shape[1] == 2:
        p = p[:, 1]
    if p.ndim != 1:
        raise ValueError(
            f"{where} is for binary problems (defect vs good): pass (N,) P(defect) or (N, 2) "
            f"probabilities, found shape {p.shape}"
        )
    _finite(p, where, "probabilities")
    outside = (p < 0) | (p > 1)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"{where}: probabilities[{i}] = {p[i]:g} is outside [0, 1]")
    return p


# -------------------------------------------------------------------- temperature scaling


def _log_softmax(s: np.ndarray) -> np.ndarray:
    """Row-wise log softmax of ``s (N, K)``, stable for large values."""
    m = s.max(axis=1, keepdims=True)
    return s - m - np.log(np.exp(s - m).sum(axis=1, keepdims=True))


def _nll_slope_curvature(z: np.ndarray, y: np.ndarray, beta: float) -> tuple[float, float]:
    """First and second derivative of ``mean NLL(softmax(beta * z))`` with respect to beta.

    ``d/dbeta = mean(E_p[z] - z_y)`` and ``d2/dbeta2 = mean(Var_p[z]) >= 0``: the loss is
    convex in ``beta = 1 / T``, so the slope has one sign change and a bracketed root search
    finds the global minimum.
    """
    p = np.exp(_log_softmax(beta * z))  # (N, K)
    mean_z = (p * z).sum(axis=1)  # (N,)
    slope = float(np.mean(mean_z - z[np.arange(z.shape[0]), y]))
    curvature = float(np.mean((p * (z - mean_z[:, None]) ** 2).sum(axis=1)))
    return slope, curvature


@dataclass(frozen=True)
class TemperatureScaler:
    """Temperature scaling: probabilities ``softmax(logits / T)`` (binary: ``sigmoid(logit / T)``).

    Build it with :meth:`fit` on validation logits. One number, so it cannot over-fit a
    validation set of a few hundred parts, and it never changes which part ranks as more
    likely defective than another.

    Args:
        temperature: ``T > 0``; ``1`` leaves the model as it is.

    Example:
        >>> import numpy as np
        >>> logits = np.array([4.0, -4.0, 4.0, -4.0, 4.0, -4.0])  # very sure ...
        >>> labels = np.array([1, 0, 0, 1, 1, 0])                 # ... and wrong 2 times in 6
        >>> scaler = TemperatureScaler.fit(logits, labels)
        >>> round(scaler.temperature, 2)
        5.77
        >>> scaler.transform([4.0, -4.0]).round(3)                # now 2/3, as observed
        array([0.667, 0.333])
        >>> TemperatureScaler.from_dict(scaler.to_dict()) == scaler
        True
    """

    temperature: float

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, Real) or not (math.isfinite(t) and t > 0):
            raise ValueError(f"temperature must be a positive finite number, found {t!r}")

    @classmethod
    def fit(cls, logits: object, labels: object, *, max_iter: int = 100) -> TemperatureScaler:
        """Find the temperature in :data:`TEMPERATURE_RANGE` with the lowest validation log loss.

        A safeguarded Newton search on ``1 / T`` (the loss is convex in it) in float64:
        deterministic, and the log loss at the result is never above the one at ``T = 1``.
        A :class:`CalibrationWarning` says when the best temperature is an end of the range:
        the lowest (0.05) when the validation set is perfectly separated (no finite
        temperature is best; the model would become almost certain), the highest (20) when
        the logits carry no information about the labels, or point the wrong way.

        Args:
            logits: validation logits, ``(N,)`` for a binary model (one logit for the defect
                class) or ``(N, K)``; numpy, list or torch tensor.
            labels: ``(N,)`` true classes ``0..K-1``; at least two classes must be present.
            max_iter: most search steps (about 10 are used); a
                :class:`CalibrationWarning` says if they run out.

        Raises:
            ValueError: empty input, shapes that do not match, NaN or infinite logits,
                labels that are not classes of the logits, or only one class present.
        """
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, found {max_iter!r}")
        z = _two_column(_as_logits(logits, "TemperatureScaler.fit"))  # (N, K)
        y = _check_labels(labels, z.shape[0], z.shape[1], "TemperatureScaler.fit")
        t_low, t_high = TEMPERATURE_RANGE
        lo, hi = 1.0 / t_high, 1.0 / t_low  # bracket on beta = 1 / T
        if _nll_slope_curvature(z, y, lo)[0] >= 0:
            _warn_bound(t_high, "the logits tell nothing about the labels (or point the wrong way)")
            return cls(temperature=t_high)
        if _nll_slope_curvature(z, y, hi)[0] <= 0:
            _warn_bound(t_low, "the validation set is perfectly separated by the logits")
            return cls(temperature=t_low)
        beta = 1.0  # start from the model as it is
        for _ in range(max_iter):
            slope, curvature = _nll_slope_curvature(z, y, beta)
            if slope == 0:
                break
            if slope < 0:
                lo = beta
            else:
                hi = beta
            step = beta - slope / curvature if curvature > 0 else math.nan
            new = step if lo < step < hi else 0.5 * (lo + hi)  # Newton, else bisection
            converged = abs(new - beta) <= _STEP_RTOL * beta
            beta = new
            if converged:
                break
        else:
            warnings.warn(
                f"TemperatureScaler.fit: the search did not converge in max_iter={max_iter} "
                f"steps; using T = {1.0 / beta:.6g}",
                CalibrationWarning,
                stacklevel=2,
            )
        return cls(temperature=1.0 / beta)

    def transform(self, logits: object) -> np.ndarray:
        """Calibrated probabilities, float64 numpy: ``(N,)`` P(class 1) or ``(N, K)`` rows.

        Args:
            logits: ``(N,)`` (binary) or ``(N, K)``; numpy, list or torch tensor.
        """
        z = _as_logits(logits, "TemperatureScaler.transform") / self.temperature
        if z.ndim == 1:
            return np.exp(-np.logaddexp(0.0, -z))  # sigmoid, no overflow
        return np.exp(_log_softmax(z))

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (saved in the model bundle)."""
        return {"temperature": float(self.temperature)}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TemperatureScaler:
        """Rebuild from :meth:`to_dict`; raises ``ValueError`` on missing or bad fields."""
        if not isinstance(state, dict) or set(state) != {"temperature"}:
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"temperature scaler state must have keys ['temperature'], found {found}"
            )
        return cls(temperature=state["temperature"])


def _warn_bound(temperature: float, why: str) -> None:
    warnings.warn(
        f"TemperatureScaler.fit: {why}; the temperature is set to {temperature}, the end of "
        f"the searched range {TEMPERATURE_RANGE}. Check the validation set (size, both "
        "classes, not the training data) before trusting these probabilities.",
        CalibrationWarning,
        stacklevel=3,
    )


# ------------------------------------------------------------------- operating threshold


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
        return cls(
            **{f: float(state[f]) for f in fields[:3]},
            **{f: state[f] for f in fields[3:]},
        )


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


def reliability_curve(probabilities: object, labels: object, n_bins: int = 10) -> dict[str, Any]:
    """Predicted probability against observed frequency, in equal-width bins, for a plot.

    Binary input (``(N,)`` or ``(N, 2)``): P(defect) against the share of defects
    (``"kind": "positive_class"``). Multi-class: each sample's top probability against the
    share of correct top classes (``"kind": "top_label"``, the bins of
    :func:`mfgtx.metrics.expected_calibration_error`). A calibrated model lies on the diagonal.
    Bins are ``[k/n_bins, (k+1)/n_bins)``, the last one also holds 1.0.

    Returns:
        JSON-compatible ``{"kind", "bin_edges" (n_bins + 1), "mean_predicted",
        "observed_frequency", "counts" (n_bins each)}``; an empty bin has ``None`` for both
        means and count 0.

    >>> curve = reliability_curve([0.1, 0.2, 0.7, 0.9], [0, 1, 1, 1], n_bins=2)
    >>> curve["counts"], curve["mean_predicted"], curve["observed_frequency"]
    ([2, 2], [0.15000000000000002, 0.8], [0.5, 1.0])
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, found {n_bins!r}")
    y, p = _labels_proba(labels, probabilities, "reliability_curve")
    if p.shape[1] == 2:
        kind, predicted, hit = "positive_class", p[:, 1], (y == 1).astype(np.float64)
    else:
        kind, predicted = "top_label", p.max(axis=1)
        hit = (np.argmax(p, axis=1) == y).astype(np.float64)
    bins = np.minimum((predicted * n_bins).astype(np.int64), n_bins - 1)  # (N,)
    counts = np.bincount(bins, minlength=n_bins)
    pred_sum = np.bincount(bins, weights=predicted, minlength=n_bins)
    hit_sum = np.bincount(bins, weights=hit, minlength=n_bins)
    return {
        "kind": kind,
        "bin_edges": np.linspace(0.0, 1.0, n_bins + 1).tolist(),
        "mean_predicted": [
            float(s / c) if c else None for s, c in zip(pred_sum, counts, strict=True)
        ],
        "observed_frequency": [
            float(s / c) if c else None for s, c in zip(hit_sum, counts, strict=True)
        ],
        "counts": [int(c) for c in counts],
    }
