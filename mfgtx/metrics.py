"""Metrics for the reports: regression, classification (probabilities in), forecasting.

Shape legend: ``N`` samples (windows), ``K`` target columns, ``M`` classes, ``H`` horizon.

Plain numpy functions. Every function checks its inputs and raises ``ValueError`` naming the
metric, the shapes or the first bad value: predictions and truths must have the same shape
(no broadcasting), and neither may hold NaN or infinity. Nothing is dropped, so every sample
counts once. A metric that is undefined for the data (ROC AUC with one class present, R² of a
constant truth) is ``nan`` with a :class:`MetricWarning` that says why; the ``*_metrics``
helpers can collect those reasons in a list instead.

Which direction is better for each metric name is in :data:`HIGHER_IS_BETTER`; the words a
plant user reads for each (a plain name and a one-line meaning) are in :data:`PLAIN`.

Classification inputs are integer labels ``y_true (N,)`` (``0..M-1``; binary: ``1`` is the
positive class, the defect or failure) and probabilities: ``(N,)`` = P(class 1) for a binary
problem, or ``(N, M)`` rows that sum to 1 (``M == 2`` is binary too).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from numbers import Real
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from sklearn.metrics import f1_score, roc_auc_score

__all__ = [
    "ECE_BINS",
    "HIGHER_IS_BETTER",
    "PLAIN",
    "MetricWarning",
    "PairedDifference",
    "accuracy",
    "average_precision",
    "balanced_accuracy",
    "brier",
    "classification_metrics",
    "confusion_matrix",
    "detection_metrics",
    "expected_calibration_error",
    "f1",
    "forecast_metrics",
    "interval_coverage",
    "log_loss",
    "mae",
    "mse",
    "nasa_score",
    "paired_bootstrap",
    "plain_meanings",
    "plain_name",
    "r2",
    "regression_metrics",
    "rmse",
    "roc_auc",
]

ECE_BINS = 15
_LOG_EPS = 1e-15  # probabilities are clipped to [1e-15, 1] before the log
_SUM_TOL = 1e-3  # probability rows must sum to 1 within this

HIGHER_IS_BETTER: Mapping[str, bool] = MappingProxyType(
    {
        "mae": False,
        "mse": False,
        "rmse": False,
        "r2": True,
        "nasa_score": False,
        "accuracy": True,
        "balanced_accuracy": True,
        "f1": True,
        "roc_auc": True,
        "average_precision": True,
        "recall": True,
        "false_alarm_rate": False,
        "log_loss": False,
        "brier": False,
        "ece": False,
    }
)
"""Metric name (as used in the ``*_metrics`` dicts) -> whether a higher value is better."""


PLAIN: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "mae": ("average error", "the average size of a miss, in the target's units"),
        "mse": (
            "squared error",
            "the average squared miss (squared units); large misses weigh most",
        ),
        "rmse": (
            "typical error",
            "the size of a typical miss, in the target's units; large misses weigh more",
        ),
        "r2": ("share explained", "how much of the spread the predictions explain (1 = all)"),
        "nasa_score": (
            "late-warning penalty",
            "penalises predicting failure too late more than too early",
        ),
        "accuracy": ("share right", "the share of lots (or images) given the right class"),
        "balanced_accuracy": (
            "share right per class",
            "the share right within each class, averaged, so a rare class counts as much",
        ),
        "f1": ("defect catch score", "balances finding bad lots against false alarms"),
        "roc_auc": ("ranking", "how often a bad lot scores above a good one (0.5 = chance)"),
        "average_precision": (
            "flag precision",
            "how clean the flags are as the threshold moves, averaged",
        ),
        "recall": ("defects caught", "the share of bad lots (or images) flagged"),
        "false_alarm_rate": ("false alarms", "the share of good lots (or images) flagged"),
        "log_loss": (
            "probability error",
            "how far the stated probabilities are from what happened (confident misses cost most)",
        ),
        "brier": ("probability miss", "the average squared gap between probability and outcome"),
        "ece": (
            "calibration gap",
            "how far a stated probability is from how often it comes true",
        ),
    }
)
"""Metric name -> ``(plain name, one-line meaning)``: the words the reports, the ``mfgtx``
command and the dashboard show a plant user for each metric of :data:`HIGHER_IS_BETTER`."""


def plain_name(metric: str) -> str:
    """The plain name of ``metric`` (:data:`PLAIN`), or the metric itself when it has none.

    >>> plain_name("log_loss"), plain_name("ece")
    ('probability error', 'calibration gap')
    """
    return PLAIN.get(metric, (metric.replace("_", " "), ""))[0]


def plain_meanings(metrics: Iterable[str]) -> tuple[str, ...]:
    """One line per metric of ``metrics`` that has a meaning in :data:`PLAIN`: its plain
    name and what it says.

    >>> plain_meanings(["ece"])
    ('calibration gap: how far a stated probability is from how often it comes true',)
    """
    return tuple(f"{PLAIN[m][0]}: {PLAIN[m][1]}" for m in metrics if m in PLAIN)


class MetricWarning(UserWarning):
    """A metric is undefined for the data given (its value is ``nan``); the message says why."""


def _undefined(metric: str, reason: str, reasons: list[str] | None) -> float:
    text = f"{metric} is undefined: {reason}"
    if reasons is None:
        warnings.warn(text, MetricWarning, stacklevel=3)
    else:
        reasons.append(text)
    return float("nan")


def _finite(a: np.ndarray, metric: str, what: str) -> None:
    bad = ~np.isfinite(a)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{metric}: {what} has {int(bad.sum())} NaN or infinite value(s), first at "
            f"index {first} ({a[first]}); every sample must be scored, nothing is dropped"
        )


def _pair(y_true: object, y_pred: object, metric: str) -> tuple[np.ndarray, np.ndarray]:
    t = np.asarray(y_true, dtype=np.float64)
    p = np.asarray(y_pred, dtype=np.float64)
    if t.shape != p.shape:
        raise ValueError(
            f"{metric}: y_true has shape {t.shape} but y_pred has shape {p.shape}; "
            "they must match exactly"
        )
    if t.size == 0:
        raise ValueError(f"{metric}: no samples (shape {t.shape})")
    _finite(t, metric, "y_true")
    _finite(p, metric, "y_pred")
    return t, p


# ------------------------------------------------------------------ regression / forecasting


def mae(y_true: object, y_pred: object) -> float:
    """Mean absolute error over every entry (lower is better); any shape, e.g. ``(N, H, K)``.

    >>> mae([1.0, 2.0, 4.0], [1.0, 3.0, 2.0])
    1.0
    """
    t, p = _pair(y_true, y_pred, "mae")
    return float(np.mean(np.abs(p - t)))


def mse(y_true: object, y_pred: object) -> float:
    """Mean squared error over every entry (lower is better); any shape, e.g. ``(N, H, K)``.

    >>> mse([[1.0, 2.0]], [[2.0, 4.0]])
    2.5
    """
    t, p = _pair(y_true, y_pred, "mse")
    return float(np.mean((p - t) ** 2))


def rmse(y_true: object, y_pred: object) -> float:
    """Root mean squared error over every entry (lower is better).

    >>> rmse([0.0, 0.0], [3.0, -3.0])
    3.0
    """
    t, p = _pair(y_true, y_pred, "rmse")
    return float(np.sqrt(np.mean((p - t) ** 2)))


def _r2(t: np.ndarray, p: np.ndarray, reasons: list[str] | None) -> float:
    t2, p2 = t.reshape(t.shape[0], -1), p.reshape(p.shape[0], -1)  # (N, K)
    ss_res = ((t2 - p2) ** 2).sum(axis=0)
    ss_tot = ((t2 - t2.mean(axis=0)) ** 2).sum(axis=0)
    if (ss_tot == 0).any():
        k = int(np.flatnonzero(ss_tot == 0)[0])
        return _undefined("r2", f"y_true is constant ({t2[0, k]}) in column {k}", reasons)
    return float(np.mean(1.0 - ss_res / ss_tot))


def r2(y_true: object, y_pred: object) -> float:
    """Coefficient of determination (higher is better; 1 is perfect, 0 = predicting the mean).

    For ``(N, K)`` inputs the per-column values are averaged (as scikit-learn's
    ``uniform_average``). ``nan`` with a :class:`MetricWarning` if a column of ``y_true`` is
    constant.

    >>> r2([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    1.0
    """
    t, p = _pair(y_true, y_pred, "r2")
    return _r2(t, p, None)


def nasa_score(y_true: object, y_pred: object) -> float:
    """The C-MAPSS asymmetric scoring function for remaining useful life (lower is better).

    With ``d = pred - true``: ``sum(exp(-d / 13) - 1)`` over early predictions (``d < 0``)
    plus ``sum(exp(d / 10) - 1)`` over late ones (``d >= 0``), so predicting more life than
    is left costs more than predicting less. A sum, so it grows with the number of samples.

    >>> round(nasa_score([10.0, 10.0], [0.0, 20.0]), 4)  # e^(10/13) - 1 + e^(10/10) - 1
    2.8764
    """
    t, p = _pair(y_true, y_pred, "nasa_score")
    d = p - t
    with np.errstate(over="ignore"):
        s = np.where(d < 0, np.exp(-d / 13.0) - 1.0, np.exp(d / 10.0) - 1.0)
    return float(s.sum())


class PairedDifference(NamedTuple):
    """``metric(a) - metric(b)`` on the samples given, and a bootstrap interval around it."""

    difference: float
    low: float
    high: float
    level: float


def paired_bootstrap(
    y_true: object,
    pred_a: object,
    pred_b: object,
    metric: Callable[[object, object], float] = rmse,
    *,
    groups: object | None = None,
    n_resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> PairedDifference:
    """How sure is ``a`` better than ``b``? ``metric(a) - metric(b)`` with a percentile interval.

    Samples (rows of the first axis: test engines, lots, windows) are drawn with replacement
    ``n_resamples`` times, the same draw for both predictors, and the difference of the
    metric is recomputed on each draw. An interval that contains 0 says the two cannot be
    told apart on these samples. Rows are treated as independent unless ``groups`` names
    one group per row (the lot of each window): then whole groups are drawn, with all their
    rows, since overlapping windows of one lot are not independent evidence.

    ``y_true`` and the predictions need the same number of rows, not the same shape (class
    labels ``(N,)`` against probabilities ``(N, M)`` are fine); ``metric`` gets the rows of
    a draw. A draw on which the metric is undefined (``nan``) is left out of the interval.

    >>> t = np.arange(100.0)
    >>> d = paired_bootstrap(t, t + 1.0, t + 3.0)  # a is off by 1 everywhere, b by 3
    >>> round(d.difference, 6), round(d.low, 6), round(d.high, 6)
    (-2.0, -2.0, -2.0)
    """
    t, a, b = (np.asarray(v, dtype=np.float64) for v in (y_true, pred_a, pred_b))
    if t.ndim == 0 or a.shape != b.shape or a.shape[:1] != t.shape[:1]:
        raise ValueError(
            f"paired_bootstrap: y_true has shape {t.shape}, pred_a {a.shape} and pred_b "
            f"{b.shape}; the predictions must match, with one row per row of y_true"
        )
    for name, v in (("y_true", t), ("pred_a", a), ("pred_b", b)):
        _finite(v, "paired_bootstrap", name)
    if not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an integer >= 100, found {n_resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie in (0, 1), found {level!r}")
    members: list[np.ndarray] | None = None  # rows of each group; None: a row is a group
    if groups is not None:
        g = np.asarray(groups)
        if g.shape != t.shape[:1]:
            raise ValueError(
                f"groups must name one group per row ({t.shape[0]}), found shape {g.shape}"
            )
        _, inverse = np.unique(g, return_inverse=True)
        order = np.argsort(inverse, kind="stable")
        members = np.split(order, np.cumsum(np.bincount(inverse))[:-1])
    n = t.shape[0] if members is None else len(members)
    if n < 2:
        what = "samples" if members is None else "groups"
        raise ValueError(f"paired_bootstrap needs at least 2 {what}, found {n}")
    rng = np.random.default_rng(seed)
    diffs = np.empty(n_resamples)
    for r in range(n_resamples):
        i = rng.integers(0, n, n)
        if members is not None:
            i = np.concatenate([members[k] for k in i])
        diffs[r] = metric(t[i], a[i]) - metric(t[i], b[i])
    diffs = diffs[~np.isnan(diffs)]
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail]) if diffs.size else (np.nan, np.nan)
    return PairedDifference(float(metric(t, a) - metric(t, b)), float(low), float(high), level)


def _check_reasons(reasons: list[str] | None) -> None:
    if reasons is not None and not isinstance(reasons, list):
        raise ValueError(f"reasons must be a list or None, found {type(reasons).__name__}")


def regression_metrics(
    y_true: object, y_pred: object, *, rul: bool = False, reasons: list[str] | None = None
) -> dict[str, float]:
    """``mae``, ``rmse``, ``r2`` (and ``nasa_score`` when ``rul``: the target is remaining life).

    Args:
        y_true, y_pred: same shape, ``(N,)`` or ``(N, K)``.
        rul: add the C-MAPSS ``nasa_score``.
        reasons: if a list, why a metric is ``nan`` is appended to it instead of warning.

    >>> regression_metrics([1.0, 2.0, 3.0], [1.0, 2.0, 5.0])
    {'mae': 0.6666666666666666, 'rmse': 1.1547005383792515, 'r2': -1.0}
    """
    _check_reasons(reasons)
    t, p = _pair(y_true, y_pred, "regression_metrics")
    out = {
        "mae": float(np.mean(np.abs(p - t))),
        "rmse": float(np.sqrt(np.mean((p - t) ** 2))),
        "r2": _r2(t, p, reasons),
    }
    if rul:
        out["nasa_score"] = nasa_score(t, p)
    return out


def forecast_metrics(y_true: object, y_pred: object) -> dict[str, float]:
    """``mse`` and ``mae`` over ``(N, H, K)`` forecasts (every step and column weighs the same).

    >>> forecast_metrics(np.zeros((2, 3, 1)), np.ones((2, 3, 1)))
    {'mse': 1.0, 'mae': 1.0}
    """
    t, p = _pair(y_true, y_pred, "forecast_metrics")
    if t.ndim != 3:
        raise ValueError(f"forecast_metrics: expected (N, H, K) arrays, found shape {t.shape}")
    return {"mse": float(np.mean((p - t) ** 2)), "mae": float(np.mean(np.abs(p - t)))}


# ------------------------------------------------------------------------- classification


def _labels_proba(y_true: object, proba: object, metric: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated ``labels (N,)`` int64 and ``proba (N, M)`` float64."""
    t = np.asarray(y_true)
    p = np.asarray(proba, dtype=np.float64)
    if t.ndim != 1:
        raise ValueError(f"{metric}: y_true must be 1-D class labels, found shape {t.shape}")
    _finite(p, metric, "proba")
    if p.ndim == 1:
        p = np.stack([1.0 - p, p], axis=1)  # (N,) P(class 1) -> (N, 2)
    if p.ndim != 2 or p.shape[0] != t.shape[0] or p.shape[1] < 2:
        raise ValueError(
            f"{metric}: y_true has shape {t.shape} but the probabilities have shape "
            f"{np.asarray(proba).shape}; expected (N,) P(class 1) or (N, M) with M >= 2"
        )
    if t.size == 0:
        raise ValueError(f"{metric}: no samples")
    tf = t.astype(np.float64)
    _finite(tf, metric, "y_true")
    bad = (tf != np.round(tf)) | (tf < 0) | (tf >= p.shape[1])
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{metric}: y_true[{i}] = {t[i]} is not a class label 0..{p.shape[1] - 1} "
            f"(the probabilities have {p.shape[1]} columns)"
        )
    if (p < 0).any() or (p > 1).any():
        i = int(np.flatnonzero(((p < 0) | (p > 1)).any(axis=1))[0])
        raise ValueError(f"{metric}: probabilities of sample {i} outside [0, 1]: {p[i].tolist()}")
    sums = p.sum(axis=1)
    off = np.abs(sums - 1.0) > _SUM_TOL
    if off.any():
        i = int(np.flatnonzero(off)[0])
        raise ValueError(
            f"{metric}: probabilities of sample {i} sum to {sums[i]:.6g}, not 1 "
            f"({int(off.sum())} such rows); pass softmax outputs, not logits"
        )
    return tf.astype(np.int64), p


def _predicted(p: np.ndarray) -> np.ndarray:
    """Predicted class per row: the most probable (binary: class 1 when P(1) > 0.5)."""
    return np.argmax(p, axis=1)


def accuracy(y_true: object, proba: object) -> float:
    """Share of samples whose most probable class is the true one (higher is better).

    >>> accuracy([0, 1, 1], [0.2, 0.9, 0.4])
    0.6666666666666666
    """
    t, p = _labels_proba(y_true, proba, "accuracy")
    return float(np.mean(_predicted(p) == t))


def balanced_accuracy(y_true: object, proba: object) -> float:
    """Mean recall over the classes present in ``y_true`` (higher is better).

    Robust to imbalance: always predicting the majority class scores ``1 / classes present``.

    >>> balanced_accuracy([0, 0, 0, 1], [0.1, 0.1, 0.1, 0.1])
    0.5
    """
    t, p = _labels_proba(y_true, proba, "balanced_accuracy")
    pred = _predicted(p)
    recalls = [np.mean(pred[t == c] == c) for c in np.unique(t)]
    return float(np.mean(recalls))


def f1(y_true: object, proba: object) -> float:
    """F1 score (higher is better): binary, of class 1 (the defect); multi-class, macro mean.

    0 when class 1 is never predicted nor present (binary), per class likewise (macro).

    >>> f1([0, 1, 1, 0], [0.1, 0.9, 0.2, 0.7])
    0.5
    """
    t, p = _labels_proba(y_true, proba, "f1")
    average = "binary" if p.shape[1] == 2 else "macro"
    return float(f1_score(t, _predicted(p), average=average, pos_label=1, zero_division=0.0))


def _roc_auc(t: np.ndarray, p: np.ndarray, reasons: list[str] | None) -> float:
    if p.shape[1] != 2:
        raise ValueError(
            f"roc_auc is for binary problems; the probabilities have {p.shape[1]} classes"
        )
    present = np.unique(t)
    if present.size < 2:
        return _undefined("roc_auc", f"the samples hold only class {int(present[0])}", reasons)
    return float(roc_auc_score(t, p[:, 1]))


def roc_auc(y_true: object, proba: object) -> float:
    """Area under the ROC curve of P(class 1), binary only (higher is better; 0.5 = chance).

    ``nan`` with a :class:`MetricWarning` when ``y_true`` holds one class only.

    >>> roc_auc([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    0.75
    """
    t, p = _labels_proba(y_true, proba, "roc_auc")
    return _roc_auc(t, p, None)


def _binary(p: np.ndarray, metric: str) -> None:
    if p.shape[1] != 2:
        raise ValueError(
            f"{metric} is for binary problems; the probabilities have {p.shape[1]} classes"
        )


def _average_precision(t: np.ndarray, p: np.ndarray, reasons: list[str] | None) -> float:
    _binary(p, "average_precision")
    positive = t == 1
    n_pos = int(positive.sum())
    if n_pos == 0:
        return _undefined("average_precision", "the samples hold no class 1 (defect)", reasons)
    order = np.argsort(-p[:, 1], kind="stable")
    score = p[order, 1]
    tp = np.cumsum(positive[order])  # (N,) defects among the i+1 highest scores
    ends = np.r_[np.flatnonzero(np.diff(score)), score.size - 1]  # last row of each tie
    precision = tp[ends] / (ends + 1)
    recall = tp[ends] / n_pos
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def average_precision(y_true: object, proba: object) -> float:
    """Average precision of P(class 1), binary only (higher is better).

    ``sum_k (R_k - R_{k-1}) P_k`` over the distinct scores taken as thresholds, highest
    first (``P_k``, ``R_k``: precision and recall when flagging every sample scoring at least
    the k-th), as scikit-learn's ``average_precision_score``. Unlike ROC AUC it ignores the
    many easy good samples, so it tells models apart when defects are 1 % of the samples;
    a model that ranks at random scores about the defect share. ``nan`` with a
    :class:`MetricWarning` when ``y_true`` holds no class 1.

    >>> average_precision([0, 1, 0, 1], [0.1, 0.9, 0.8, 0.3])  # (1/2) * 1 + (1/2) * 2/3
    0.8333333333333333
    """
    t, p = _labels_proba(y_true, proba, "average_precision")
    return _average_precision(t, p, None)


def _check_threshold(threshold: object) -> None:
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, Real)
        or not 0 <= float(threshold) <= 1
    ):
        raise ValueError(f"threshold must be a number in [0, 1], found {threshold!r}")


def detection_metrics(
    y_true: object, proba: object, threshold: float, *, reasons: list[str] | None = None
) -> dict[str, float]:
    """How well defects are found: ranking and the decision at an operating threshold.

    For tiles or whole photos alike (a photo's P(defect) being its worst tile's, see
    :func:`mfgtx.images.image_scores`). A sample is flagged when ``P(defect) > threshold``,
    as :func:`mfgtx.calibration.apply_threshold`.

    Args:
        y_true: ``(N,)`` 0 good / 1 defect.
        proba: ``(N,)`` P(defect) or ``(N, 2)`` probabilities.
        threshold: the operating threshold in ``[0, 1]`` (e.g. the cost threshold).
        reasons: if a list, why a metric is ``nan`` is appended to it instead of warning.

    Returns:
        ``{"roc_auc", "average_precision", "recall"`` (defects flagged / defects),
        ``"false_alarm_rate"`` (good flagged / good)``}``; ``recall`` is ``nan`` without a
        defect, ``false_alarm_rate`` without a good sample.

    >>> m = detection_metrics([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9], 0.5)
    >>> m["roc_auc"], m["recall"], m["false_alarm_rate"]
    (0.75, 0.5, 0.5)
    """
    _check_reasons(reasons)
    _check_threshold(threshold)
    t, p = _labels_proba(y_true, proba, "detection_metrics")
    _binary(p, "detection_metrics")
    flagged = p[:, 1] > threshold
    defect = t == 1
    if defect.any():
        recall = float(flagged[defect].mean())
    else:
        recall = _undefined("recall", "the samples hold no defect", reasons)
    if (~defect).any():
        false_alarms = float(flagged[~defect].mean())
    else:
        false_alarms = _undefined("false_alarm_rate", "the samples hold no good part", reasons)
    return {
        "roc_auc": _roc_auc(t, p, reasons),
        "average_precision": _average_precision(t, p, reasons),
        "recall": recall,
        "false_alarm_rate": false_alarms,
    }


def confusion_matrix(y_true: object, proba: object, threshold: float | None = None) -> np.ndarray:
    """Counts of samples by actual class (rows) and predicted class (columns), ``(M, M)``.

    The predicted class is the most probable one; with ``threshold`` (binary only) it is
    class 1 when ``P(class 1) > threshold``, as :func:`detection_metrics` flags a sample.

    >>> confusion_matrix([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9], threshold=0.5)
    array([[1, 1],
           [1, 1]])
    >>> confusion_matrix([0, 0, 1, 1], [0.1, 0.6, 0.4, 0.9], threshold=0.3).tolist()
    [[1, 1], [0, 2]]
    """
    t, p = _labels_proba(y_true, proba, "confusion_matrix")
    if threshold is None:
        predicted = _predicted(p)
    else:
        _check_threshold(threshold)
        _binary(p, "confusion_matrix")
        predicted = (p[:, 1] > threshold).astype(np.int64)
    m = p.shape[1]
    return np.bincount(t * m + predicted, minlength=m * m).reshape(m, m)


def log_loss(y_true: object, proba: object) -> float:
    """Mean negative log probability of the true class (lower is better).

    Probabilities are clipped to ``[1e-15, 1]`` first, so a confident miss costs about 34.5.

    >>> round(log_loss([1, 0], [0.5, 0.5]), 6)
    0.693147
    """
    t, p = _labels_proba(y_true, proba, "log_loss")
    p_true = p[np.arange(t.size), t]
    return float(-np.mean(np.log(np.clip(p_true, _LOG_EPS, 1.0))))


def brier(y_true: object, proba: object) -> float:
    """Brier score (lower is better).

    Binary: ``mean((P(class 1) - y)^2)`` (as scikit-learn's ``brier_score_loss``).
    Multi-class: ``mean(sum_m (p_m - onehot_m)^2)``, between 0 and 2.

    >>> brier([1, 0], [0.8, 0.4])
    0.1
    """
    t, p = _labels_proba(y_true, proba, "brier")
    if p.shape[1] == 2:
        return float(np.mean((p[:, 1] - t) ** 2))
    onehot = np.eye(p.shape[1])[t]  # (N, M)
    return float(np.mean(((p - onehot) ** 2).sum(axis=1)))


def expected_calibration_error(y_true: object, proba: object, n_bins: int = ECE_BINS) -> float:
    """Top-label expected calibration error with equal-width bins (lower is better).

    Each sample's confidence is its largest class probability; samples fall in bins
    ``[k/n_bins, (k+1)/n_bins)`` (the last bin also holds 1.0). ECE is the sample-weighted mean
    over bins of ``|accuracy - mean confidence|``.

    >>> expected_calibration_error([1, 1, 1, 0], [0.9, 0.9, 0.9, 0.9])  # 90 % sure, 75 % right
    0.15000000000000002
    """
    if not isinstance(n_bins, int) or isinstance(n_bins, bool) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, found {n_bins!r}")
    t, p = _labels_proba(y_true, proba, "expected_calibration_error")
    conf = p.max(axis=1)
    correct = (_predicted(p) == t).astype(np.float64)
    bins = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
    conf_sum = np.bincount(bins, weights=conf, minlength=n_bins)
    hit_sum = np.bincount(bins, weights=correct, minlength=n_bins)
    return float(np.abs(hit_sum - conf_sum).sum() / t.size)  # sum_b n_b/N |acc_b - conf_b|


def classification_metrics(
    y_true: object, proba: object, *, reasons: list[str] | None = None
) -> dict[str, float]:
    """Accuracy, balanced accuracy, F1, (binary) ROC AUC, log loss, Brier score and ECE.

    Args:
        y_true: ``(N,)`` class labels.
        proba: ``(N,)`` P(class 1) or ``(N, M)`` probabilities.
        reasons: if a list, why a metric is ``nan`` is appended to it instead of warning.

    Returns:
        ``{"accuracy", "balanced_accuracy", "f1", "roc_auc" (binary only), "log_loss",
        "brier", "ece"}``.

    >>> m = classification_metrics([0, 1, 1, 0], [0.1, 0.9, 0.6, 0.3])
    >>> m["accuracy"], m["roc_auc"]
    (1.0, 1.0)
    """
    _check_reasons(reasons)
    t, p = _labels_proba(y_true, proba, "classification_metrics")
    out = {
        "accuracy": accuracy(t, p),
        "balanced_accuracy": balanced_accuracy(t, p),
        "f1": f1(t, p),
    }
    if p.shape[1] == 2:
        out["roc_auc"] = _roc_auc(t, p, reasons)
    out |= {
        "log_loss": log_loss(t, p),
        "brier": brier(t, p),
        "ece": expected_calibration_error(t, p),
    }
    return out


def interval_coverage(
    y_true: np.ndarray, bands: np.ndarray, quantiles: Sequence[float]
) -> dict[str, float]:
    """How often ``y_true`` falls between the lowest and highest predicted quantile.

    Args:
        y_true: ``(N, H, C)`` actual values (NaN entries are left out).
        bands: ``(N, H, C, Q)`` predicted quantiles at ``quantiles`` (ascending).
        quantiles: the ``Q`` levels; the interval is ``[first, last]``.

    Returns:
        ``coverage`` (share inside), ``nominal`` (``last - first`` level), ``width`` (mean
        interval width) and ``n`` (values counted).

    Example:
        >>> y = np.array([[[0.0], [5.0]]])
        >>> q = np.array([[[[-1.0, 1.0]], [[-1.0, 1.0]]]])
        >>> interval_coverage(y, q, (0.1, 0.9))["coverage"]
        0.5
    """
    y, q = np.asarray(y_true, dtype=np.float64), np.asarray(bands, dtype=np.float64)
    if q.ndim != 4 or q.shape[:3] != y.shape or q.shape[3] != len(quantiles) or len(quantiles) < 2:
        raise ValueError(
            f"bands must have shape y_true + (Q={len(quantiles)},) with Q >= 2, found "
            f"{q.shape} for y_true {y.shape}"
        )
    seen = ~np.isnan(y)
    inside = (y >= q[..., 0]) & (y <= q[..., -1])
    return {
        "coverage": float(inside[seen].mean()),
        "nominal": float(quantiles[-1] - quantiles[0]),
        "width": float((q[..., -1] - q[..., 0])[seen].mean()),
        "n": float(seen.sum()),
    }
