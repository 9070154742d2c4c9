"""Classification baselines (pass/fail, defect class): windows with horizon 0, one target.

Shape legend: ``n`` windows, ``M`` classes, ``F`` summary features.

The target holds class labels ``0..M-1`` (binary: ``1`` is the defect or failure).
``predict_proba`` returns ``(n, M)`` probabilities with a column for every class, including
classes the training windows never showed (probability 0 for :class:`MajorityClass`);
``predict`` returns the most probable class ``(n,)``. ``M`` is ``n_classes`` if given, else
the largest training label + 1 (at least 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Literal, Self

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression as _SkLogisticRegression
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from mfgtx.baselines._base import Fitted, check_number, targets_of
from mfgtx.baselines.features import SummaryInputs
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["GradientBoostingClassifier", "LogisticRegression", "MajorityClass"]

ClassWeight = Literal["balanced"] | None


def class_labels(windows: Windows, idx: np.ndarray, what: str) -> np.ndarray:
    """``(n,)`` int64 labels of one integer-valued, non-negative target."""
    y = targets_of(windows, idx, what)
    if y.ndim != 2 or y.shape[1] != 1:
        raise ValueError(
            f"classification needs exactly one target column, found {list(windows.targets)}"
        )
    labels = y[:, 0]
    bad = (labels != np.round(labels)) | (labels < 0)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"target {windows.targets[0]!r} of window {int(idx[i])} (lot {windows.lot[idx[i]]}) "
            f"is {labels[i]:g}; class labels must be integers 0, 1, ... (1 = defect)"
        )
    return labels.astype(np.int64)


def _check_class_weight(class_weight: object) -> None:
    if class_weight not in (None, "balanced"):
        raise ValueError(f"class_weight must be None or 'balanced', found {class_weight!r}")


def _check_n_classes(n_classes: object) -> None:
    if n_classes is not None:
        check_number("n_classes", n_classes, integer=True, low=1)


class _Classifier(Fitted):
    task: ClassVar[str] = "classification"
    n_classes: int | None

    def _labels_for_fit(self, windows: Windows, idx: np.ndarray) -> np.ndarray:
        labels = class_labels(windows, idx, "training")
        top = int(labels.max())
        if self.n_classes is not None and top >= self.n_classes:
            raise ValueError(f"n_classes={self.n_classes} but a training window has class {top}")
        self.n_classes_ = self.n_classes if self.n_classes is not None else max(top + 1, 2)
        return labels

    def predict_proba(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n,)`` most probable class."""
        return np.argmax(self.predict_proba(windows, idx), axis=1)


class MajorityClass(_Classifier):
    """Predicts the most frequent training class; its probabilities are the train frequencies.

    Args:
        n_classes: number of classes ``M``; default: largest training label + 1 (at least 2).

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(5, "datetime64[ns]")
        >>> w = Windows(values=np.zeros((5, 1), np.float32), row_start=np.arange(5),
        ...             lot=np.array(list("ABCDE")), start=t, end=t, label_time=t,
        ...             y=np.array([[0], [0], [0], [1], [1]], np.float32), sensors=("s",),
        ...             targets=("defect",), window=1, stride=1, horizon=0)
        >>> m = MajorityClass().fit(w, [0, 1, 2, 3])
        >>> m.predict_proba(w, [4]).tolist(), m.predict(w, [4]).tolist()
        ([[0.75, 0.25]], [0])
    """

    def __init__(self, *, n_classes: int | None = None) -> None:
        _check_n_classes(n_classes)
        self.n_classes = n_classes

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Count the classes of the training windows."""
        idx = self._start_fit(windows, train_idx, scaler)
        labels = self._labels_for_fit(windows, idx)
        self.prior_ = np.bincount(labels, minlength=self.n_classes_) / labels.size  # (M,)
        return self

    def predict_proba(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, M)`` training class frequencies."""
        index = self._start_predict(windows, idx)
        return np.tile(self.prior_, (len(index), 1))


class _FeatureClassifier(_Classifier):
    """A scikit-learn classifier on the summary features."""

    class_weight: ClassWeight

    def _make(self) -> Pipeline | HistGradientBoostingClassifier:
        raise NotImplementedError

    @property
    def name(self) -> str:
        base = type(self).__name__
        return f"{base}(balanced)" if self.class_weight == "balanced" else base

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Fit on the summary features and labels of the training windows only."""
        idx = self._start_fit(windows, train_idx, scaler)
        labels = self._labels_for_fit(windows, idx)
        present = np.unique(labels)
        if present.size < 2:
            raise ValueError(
                f"{self.name}: every training window has class {int(present[0])}; a classifier "
                "needs at least two classes (use MajorityClass, or a split with both)"
            )
        self.inputs_ = SummaryInputs(windows, idx, scaler)
        self.model_ = self._make().fit(self.inputs_(windows, idx), labels)
        return self

    def predict_proba(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, M)`` probabilities; 0 for classes absent from the training windows."""
        index = self._start_predict(windows, idx)
        proba = self.model_.predict_proba(self.inputs_(windows, index))  # (n, classes seen)
        out = np.zeros((len(index), self.n_classes_))
        out[:, np.asarray(self.model_.classes_, dtype=np.int64)] = proba
        return out


class LogisticRegression(_FeatureClassifier):
    """Logistic regression on standardised window summary features.

    Args:
        C: inverse L2 penalty strength (scikit-learn ``LogisticRegression(C)``).
        class_weight: ``"balanced"`` weighs each class by its inverse training frequency,
            for rare failures (probabilities are then no longer calibrated); default ``None``.
        max_iter: solver iterations.
        n_classes: number of classes ``M``; default: largest training label + 1.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(400, 1)).astype(np.float32)  # 100 windows of 4 rows
        >>> level = x.reshape(100, 4).mean(axis=1, keepdims=True)  # (N, 1) window mean
        >>> t = np.zeros(100, "datetime64[ns]")
        >>> def windows(y):
        ...     return Windows(values=x, row_start=np.arange(100) * 4, lot=t.astype(str),
        ...                    start=t, end=t, label_time=t, y=y, sensors=("s",),
        ...                    targets=("q",), window=4, stride=4, horizon=0)
        >>> w = windows((level > 0.5).astype(np.float32))  # defect: a high window mean
        >>> lr = LogisticRegression(class_weight="balanced").fit(w, np.arange(80))
        >>> lr.name, lr.predict_proba(w, [80, 81]).shape
        ('LogisticRegression(balanced)', (2, 2))
        >>> bool((lr.predict(w, np.arange(80, 100)) == w.y[80:, 0]).mean() >= 0.9)
        True
    """

    def __init__(
        self,
        *,
        C: float = 1.0,  # scikit-learn's name
        class_weight: ClassWeight = None,
        max_iter: int = 1000,
        n_classes: int | None = None,
    ) -> None:
        check_number("C", C)
        _check_class_weight(class_weight)
        check_number("max_iter", max_iter, integer=True)
        _check_n_classes(n_classes)
        self.C = C
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.n_classes = n_classes

    def _make(self) -> Pipeline:
        return make_pipeline(
            StandardScaler(),
            _SkLogisticRegression(C=self.C, class_weight=self.class_weight, max_iter=self.max_iter),
        )


class GradientBoostingClassifier(_FeatureClassifier):
    """Histogram gradient boosting classifier (scikit-learn) on window summary features.

    No early stopping (every training window is used for fitting); fixed ``random_state``.

    Args:
        max_iter: boosting rounds.
        learning_rate: shrinkage.
        max_leaf_nodes: leaves per tree.
        min_samples_leaf: fewest training windows per leaf.
        class_weight: ``None`` or ``"balanced"`` (for rare failures).
        random_state: seed.
        n_classes: number of classes ``M``; default: largest training label + 1.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> rng = np.random.default_rng(0)
        >>> x = rng.normal(size=(400, 1)).astype(np.float32)  # 100 windows of 4 rows
        >>> level = x.reshape(100, 4).mean(axis=1, keepdims=True)  # (N, 1) window mean
        >>> t = np.zeros(100, "datetime64[ns]")
        >>> def windows(y):
        ...     return Windows(values=x, row_start=np.arange(100) * 4, lot=t.astype(str),
        ...                    start=t, end=t, label_time=t, y=y, sensors=("s",),
        ...                    targets=("q",), window=4, stride=4, horizon=0)
        >>> w = windows((np.abs(level) > 0.5).astype(np.float32))  # far from 0 either way
        >>> gb = GradientBoostingClassifier(max_iter=50).fit(w, np.arange(80))
        >>> bool((gb.predict(w, np.arange(80, 100)) == w.y[80:, 0]).mean() >= 0.8)
        True
    """

    def __init__(
        self,
        *,
        max_iter: int = 200,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 20,
        class_weight: ClassWeight = None,
        random_state: int = 0,
        n_classes: int | None = None,
    ) -> None:
        check_number("max_iter", max_iter, integer=True)
        check_number("learning_rate", learning_rate)
        check_number("max_leaf_nodes", max_leaf_nodes, integer=True, low=1)
        check_number("min_samples_leaf", min_samples_leaf, integer=True)
        _check_class_weight(class_weight)
        _check_n_classes(n_classes)
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.class_weight = class_weight
        self.random_state = random_state
        self.n_classes = n_classes

    def _make(self) -> HistGradientBoostingClassifier:
        return HistGradientBoostingClassifier(
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf,
            class_weight=self.class_weight,
            early_stopping=False,
            random_state=self.random_state,
        )
