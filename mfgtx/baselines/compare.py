"""Score a model and the baselines on exactly the same test windows.

Shape legend: ``n`` test windows, ``K`` targets, ``M`` classes, ``H`` horizon.

What the model must pass in, per task (the units of ``windows.y``, unscaled):

* ``"regression"``: ``(n, K)`` predictions (``(n,)`` when ``K == 1``);
* ``"classification"``: probabilities, ``(n,)`` P(class 1) or ``(n, M)``;
* ``"forecast"``: ``(n, H, K)`` forecasts (``(n, H)`` when ``K == 1``).

Row ``i`` of every prediction belongs to window ``test_idx[i]``. Nothing is dropped: a
prediction with the wrong number of rows, a test window without a label, a repeated test
window, or a baseline fitted on a test window (or on other training windows than the rest)
is an error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Literal, Protocol, cast

import numpy as np

from mfgtx import metrics as M
from mfgtx.baselines._base import Baseline, as_indices, check_task, check_windows, targets_of
from mfgtx.baselines.classification import class_labels
from mfgtx.baselines.report import Difference, EvaluationReport, ReportRow, _best_of
from mfgtx.baselines.suite import fit_baselines
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows
from mfgtx.metrics import (
    classification_metrics,
    forecast_metrics,
    regression_metrics,
)

__all__ = ["PRIMARY_METRIC", "bootstrap_differences", "compare"]

PRIMARY_METRIC: dict[str, str] = {
    "regression": "rmse",
    "classification": "log_loss",
    "forecast": "mse",
}
"""Default metric of the verdict per task (log loss: a proper score of the probabilities)."""


class _ClassBaseline(Baseline, Protocol):
    """A classification baseline: the classes it saw and its probabilities."""

    n_classes_: int

    def predict_proba(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray: ...


def _check_baselines(
    baselines: Sequence[Baseline], task: str, windows: Windows, test: np.ndarray
) -> int:
    """All fitted for ``task`` on the same training windows, none of them a test window."""
    train: np.ndarray | None = None
    first = ""
    for b in baselines:
        if getattr(b, "task", None) != task:
            raise ValueError(f"{b!r} is a {getattr(b, 'task', '?')} baseline, not {task}")
        if not hasattr(b, "train_idx_"):
            raise ValueError(f"baseline {b.name} is not fitted; call fit(windows, train_idx)")
        fitted_on = getattr(b, "n_windows_", len(windows))
        if fitted_on != len(windows):
            raise ValueError(
                f"baseline {b.name} was fitted on windows with {fitted_on} windows (not these "
                f"{len(windows)}); fit it on the Windows the split was made from"
            )
        seen = np.unique(b.train_idx_)
        leaked = np.intersect1d(seen, test)
        if leaked.size:
            i = int(leaked[0])
            raise ValueError(
                f"baseline {b.name} was fitted on {leaked.size} test window(s), first window "
                f"{i} (lot {windows.lot[i]}); fit baselines on the training windows only"
            )
        if train is None:
            train, first = seen, b.name
        elif not np.array_equal(train, seen):
            raise ValueError(
                f"baselines {first} and {b.name} were fitted on different training windows "
                f"({train.size} vs {seen.size}); fit every baseline on the same split"
            )
    return 0 if train is None else int(train.size)


def _as_predictions(
    model_predictions: Mapping[str, object] | np.ndarray, model_name: str
) -> dict[str, np.ndarray]:
    if isinstance(model_predictions, Mapping):
        preds = {str(k): np.asarray(v, dtype=np.float64) for k, v in model_predictions.items()}
    else:
        preds = {model_name: np.asarray(model_predictions, dtype=np.float64)}
    if not preds:
        raise ValueError("model_predictions is empty; pass at least one model's predictions")
    return preds


def _shaped(name: str, pred: np.ndarray, truth_shape: tuple[int, ...], task: str) -> np.ndarray:
    """``pred`` in the shape of the truth (classification: ``(n, M')`` probabilities)."""
    n = truth_shape[0]
    if pred.ndim == 0 or pred.shape[0] != n:
        rows = "a scalar" if pred.ndim == 0 else f"{pred.shape[0]} rows"
        raise ValueError(
            f"predictions of {name!r} have {rows} but test_idx has {n} windows; every test "
            "window must be predicted once, in the order of test_idx"
        )
    if task == "classification":
        return np.stack([1.0 - pred, pred], axis=1) if pred.ndim == 1 else pred
    if truth_shape[-1] == 1 and pred.shape == truth_shape[:-1]:
        pred = pred.reshape(truth_shape)  # (n,) -> (n, 1); (n, H) -> (n, H, 1)
    if pred.shape != truth_shape:
        raise ValueError(
            f"predictions of {name!r} have shape {pred.shape}, the test targets {truth_shape}"
        )
    return pred


def _score(
    task: str, truth: np.ndarray, predictions: dict[str, np.ndarray], models: set[str], rul: bool
) -> tuple[list[ReportRow], list[str]]:
    """One row per predictor, and why any metric is ``nan``."""
    rows, notes = [], []
    for name, pred in predictions.items():
        reasons: list[str] = []
        try:
            if task == "regression":
                scores = regression_metrics(truth, pred, rul=rul, reasons=reasons)
            elif task == "classification":
                scores = classification_metrics(truth, pred, reasons=reasons)
            else:
                scores = forecast_metrics(truth, pred)
        except ValueError as err:
            raise ValueError(f"cannot score {name!r}: {err}") from err
        kind: Literal["model", "baseline"] = "model" if name in models else "baseline"
        rows.append(ReportRow(name=name, kind=kind, metrics=scores))
        notes += [f"{name}: {r}" for r in reasons]
    return rows, notes


_METRIC_FUNCTIONS: dict[str, Callable[[object, object], float]] = {
    "mae": M.mae,
    "mse": M.mse,
    "rmse": M.rmse,
    "r2": M.r2,
    "nasa_score": M.nasa_score,
    "accuracy": M.accuracy,
    "balanced_accuracy": M.balanced_accuracy,
    "f1": M.f1,
    "roc_auc": M.roc_auc,
    "log_loss": M.log_loss,
    "brier": M.brier,
    "ece": M.expected_calibration_error,
}
"""Each metric a comparison can rank by (``primary``), as a function of (truth, prediction).

Recall and false-alarm rate of :data:`~mfgtx.metrics.HIGHER_IS_BETTER` are not here: they
need an operating threshold (:func:`mfgtx.metrics.detection_metrics`)."""


def _bootstrap_inputs(
    metric: str, truth: np.ndarray, a: np.ndarray, b: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, Callable[[object, object], float]]:
    """``(truth, a, b, metric function)`` for :func:`~mfgtx.metrics.paired_bootstrap`.

    ``mse``, ``rmse`` and ``mae`` are functions of the mean of per-row mean errors (every row
    has as many entries), so they are resampled from those ``(n,)`` numbers instead of the
    ``(n, H, K)`` forecasts: the same figures, a hundred times faster on a long horizon.
    """
    if metric not in ("mse", "rmse", "mae"):
        return truth, a, b, _METRIC_FUNCTIONS[metric]

    def row_errors(pred: np.ndarray) -> np.ndarray:
        d = (np.asarray(pred, np.float64) - truth).reshape(len(truth), -1)  # (n, H*K)
        return np.abs(d).mean(axis=1) if metric == "mae" else (d**2).mean(axis=1)

    def of_row_errors(_: object, errors: object) -> float:
        mean = float(np.mean(np.asarray(errors, np.float64)))
        return math.sqrt(mean) if metric == "rmse" else mean

    return np.zeros(len(truth)), row_errors(a), row_errors(b), of_row_errors


def bootstrap_differences(
    rows: Sequence[ReportRow],
    truth: np.ndarray,
    predictions: Mapping[str, np.ndarray],
    groups: np.ndarray,
    primary: str,
    n_resamples: int | None = 1000,
    unit: str = "test lots",
) -> tuple[tuple[Difference, ...], list[str]]:
    """Each model row minus the best baseline row on ``primary``: one :class:`Difference`
    each, and the report notes (why there is none).

    ``predictions`` holds each row's test predictions by name (class probabilities for
    classification); ``groups`` the unit each test row is drawn with, e.g. its lot (one
    group only: a note instead of an interval). ``n_resamples=None``: no interval.
    :func:`compare` calls this; a hand-built report (images) can too.
    """
    if n_resamples is None:
        return (), []
    n_lots = int(np.unique(groups).size)
    if n_lots < 2:
        return (), [f"one {unit[:-1]}: no interval for the difference to the baselines"]
    base = [r for r in rows if r.kind == "baseline" and not np.isnan(r.metrics[primary])]
    if not base:
        return (), []
    best = _best_of(base, primary)
    assert best is not None  # base holds finite values only
    out = []
    for m in (r for r in rows if r.kind == "model" and not np.isnan(r.metrics[primary])):
        t, a, b, metric = _bootstrap_inputs(
            primary, truth, predictions[m.name], predictions[best.name]
        )
        # a draw may leave a metric undefined (one class only: no roc_auc); such draws are
        # left out of the interval, and their warnings would only repeat what _score said
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            d = M.paired_bootstrap(t, a, b, metric, groups=groups, n_resamples=n_resamples)
        out.append(Difference(m.name, best.name, primary, *d, n_groups=n_lots, unit=unit))
    return tuple(out), []


def compare(
    task: str,
    windows: Windows,
    test_idx: Sequence[int] | np.ndarray,
    model_predictions: Mapping[str, np.ndarray] | np.ndarray,
    baselines: Sequence[Baseline] | None = None,
    model_name: str = "model",
    *,
    train_idx: Sequence[int] | np.ndarray | None = None,
    scaler: SensorScaler | None = None,
    period: int | None = None,
    rul: bool = False,
    primary: str | None = None,
    n_resamples: int | None = 1000,
) -> EvaluationReport:
    """Score the model(s) and every baseline on the windows ``test_idx``.

    Args:
        task: ``"regression"``, ``"classification"`` or ``"forecast"``.
        windows: the windows the split was made from.
        test_idx: the test windows (each once); all must be labelled.
        model_predictions: one model's predictions, or ``{name: predictions}`` for several
            (shapes in the module docstring).
        baselines: fitted baselines (:func:`fit_baselines`), at least one. ``None``: fit the
            default ones on ``train_idx`` here (``scaler`` and ``period`` as in
            :func:`fit_baselines`).
        model_name: the name of a single model's row.
        train_idx: the training windows, needed when ``baselines`` is ``None``.
        rul: regression targets are remaining useful life: add the ``nasa_score``.
        primary: metric of the verdict; default :data:`PRIMARY_METRIC` of the task.
        n_resamples: draws of the paired bootstrap that gives each model's
            :class:`~mfgtx.baselines.Difference` to the best baseline on ``primary`` (test
            lots drawn as wholes; none with fewer than 2 test lots). ``None``: no interval.

    Returns:
        :class:`EvaluationReport`.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(6, "datetime64[ns]")
        >>> w = Windows(values=np.arange(6, dtype=np.float32)[:, None], row_start=np.arange(6),
        ...             lot=np.array(list("ABCDEF")), start=t, end=t, label_time=t,
        ...             y=np.arange(6, dtype=np.float32)[:, None], sensors=("s",),
        ...             targets=("q",), window=1, stride=1, horizon=0)
        >>> report = compare("regression", w, [4, 5], np.array([4.0, 5.5]),
        ...                  train_idx=[0, 1, 2, 3])
        >>> report.rows[1].name, report.rows[1].metrics["rmse"]  # TrainMean predicts 1.5
        ('TrainMean', 3.0413812651491097)
        >>> report.verdict  # computed, not assumed: ridge does better, but on 2 lots only
        'Use with care. On the 2 test lots the model cannot be told apart from the best \
baseline, a linear fit on window summaries, on typical error (lower is better), 0.354 \
against 0.179.'
    """
    check_task(task)
    check_windows(windows, task, "compare")
    test = as_indices(test_idx, len(windows), "test_idx")
    if np.unique(test).size != test.size:
        values, counts = np.unique(test, return_counts=True)
        raise ValueError(
            f"test_idx repeats window {int(values[counts > 1][0])}; every test window must be "
            "scored exactly once"
        )
    if task == "classification":
        truth = class_labels(windows, test, "test")  # (n,)
    else:
        truth = targets_of(windows, test, "test")  # (n, K) or (n, H, K)
    preds = _as_predictions(model_predictions, model_name)
    shaped = {name: _shaped(name, p, truth.shape, task) for name, p in preds.items()}

    if baselines is None:
        if train_idx is None:
            raise ValueError("pass fitted baselines, or train_idx to fit the default ones")
        baselines = fit_baselines(windows, train_idx, task, scaler=scaler, period=period)
    baselines = list(baselines)
    if not baselines:
        raise ValueError(
            "baselines is empty: a model is judged against at least one baseline; pass "
            "fitted baselines (fit_baselines) or baselines=None with train_idx to fit the "
            "default ones"
        )
    names = [*shaped, *(b.name for b in baselines)]
    if len(set(names)) != len(names):
        raise ValueError(f"predictor names must be unique, found {names}")
    n_train = _check_baselines(baselines, task, windows, test)
    if train_idx is not None:
        expected = np.unique(as_indices(train_idx, len(windows), "train_idx"))
        if not np.array_equal(np.unique(baselines[0].train_idx_), expected):
            raise ValueError(
                f"the baselines were fitted on {n_train} training windows, not on the "
                f"{expected.size} of train_idx"
            )

    if task == "classification":
        classifiers = cast(list[_ClassBaseline], baselines)  # all of task "classification"
        widths = {p.shape[1] for p in shaped.values()}
        n_classes = max([*widths, *(c.n_classes_ for c in classifiers)])
        if widths != {n_classes}:
            raise ValueError(
                f"model probabilities have {sorted(widths)} columns, but there are {n_classes} "
                "classes (the baselines saw them in training); give one column per class"
            )
        for c in classifiers:
            proba = c.predict_proba(windows, test)
            shaped[c.name] = np.pad(proba, ((0, 0), (0, n_classes - proba.shape[1])))
    else:
        for b in baselines:
            shaped[b.name] = b.predict(windows, test)

    primary = PRIMARY_METRIC[task] if primary is None else primary
    if primary not in _METRIC_FUNCTIONS:  # recall at a threshold is no (truth, pred) function
        raise ValueError(f"primary must be one of {sorted(_METRIC_FUNCTIONS)}, found {primary!r}")
    rows, notes = _score(task, truth, shaped, set(preds), rul)
    differences, why = bootstrap_differences(
        rows, truth, shaped, windows.lot[test], primary, n_resamples
    )
    notes += why
    return EvaluationReport(
        task=task,
        n_test=int(test.size),
        rows=tuple(rows),
        primary=primary,
        n_train=n_train or None,
        notes=tuple(notes),
        differences=differences,
    )
