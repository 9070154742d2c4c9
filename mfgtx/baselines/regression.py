"""Regression baselines (quality value, remaining useful life): windows with horizon 0.

Shape legend: ``n`` windows, ``K`` targets, ``F`` summary features.

:class:`TrainMean` predicts the training mean; :class:`Ridge` and :class:`GradientBoosting`
learn from the window summary features (:func:`~mfgtx.baselines.summary_features`). All are
fitted on the training windows only and predict ``(n, K)``, like ``windows.y``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, Self

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.linear_model import Ridge as _SkRidge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from mfgtx.baselines._base import Fitted, check_number, targets_of
from mfgtx.baselines.features import SummaryInputs
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["GradientBoosting", "Ridge", "TrainMean"]


class TrainMean(Fitted):
    """Predicts the mean target of the training windows for every window.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> t = np.zeros(3, "datetime64[ns]")
        >>> w = Windows(values=np.zeros((3, 1), np.float32), row_start=np.arange(3),
        ...             lot=np.array(["A", "B", "C"]), start=t, end=t, label_time=t,
        ...             y=np.array([[1.0], [3.0], [50.0]], np.float32), sensors=("s",),
        ...             targets=("q",), window=1, stride=1, horizon=0)
        >>> TrainMean().fit(w, [0, 1]).predict(w, [2]).tolist()  # window 2 is not seen
        [[2.0]]
    """

    task: ClassVar[str] = "regression"

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Remember the mean of ``windows.y[train_idx]`` per target."""
        idx = self._start_fit(windows, train_idx, scaler)
        self.mean_ = targets_of(windows, idx, "training").mean(axis=0)  # (K,)
        return self

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, K)`` training mean."""
        index = self._start_predict(windows, idx)
        return np.tile(self.mean_, (len(index), 1))


class _FeatureRegressor(Fitted):
    """A scikit-learn regressor on the summary features, one model per target if needed."""

    task: ClassVar[str] = "regression"
    _per_target: ClassVar[bool] = False

    def _make(self) -> Pipeline | HistGradientBoostingRegressor:
        raise NotImplementedError

    def fit(
        self,
        windows: Windows,
        train_idx: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
    ) -> Self:
        """Fit on the summary features and targets of the training windows only."""
        idx = self._start_fit(windows, train_idx, scaler)
        y = targets_of(windows, idx, "training")  # (n, K)
        self.inputs_ = SummaryInputs(windows, idx, scaler)
        x = self.inputs_(windows, idx)  # (n, F)
        if self._per_target:
            self.models_ = [self._make().fit(x, y[:, k]) for k in range(y.shape[1])]
        else:
            self.models_ = [self._make().fit(x, y)]
        return self

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(n, K)`` predictions."""
        index = self._start_predict(windows, idx)
        x = self.inputs_(windows, index)
        preds = [np.asarray(m.predict(x), dtype=np.float64) for m in self.models_]
        out = np.column_stack(preds) if self._per_target else preds[0]
        return out.reshape(len(index), -1)


class Ridge(_FeatureRegressor):
    """Ridge regression on standardised window summary features.

    Args:
        alpha: L2 penalty (scikit-learn ``Ridge(alpha)``) on the standardised features.

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
        >>> w = windows(3 * level)  # the target is 3 x the window mean, a feature
        >>> pred = Ridge(alpha=0.01).fit(w, np.arange(80)).predict(w, np.arange(80, 100))
        >>> pred.shape, bool(np.abs(pred - w.y[80:]).max() < 0.05)
        ((20, 1), True)
    """

    def __init__(self, *, alpha: float = 1.0) -> None:
        check_number("alpha", alpha)
        self.alpha = alpha

    def _make(self) -> Pipeline:
        return make_pipeline(StandardScaler(), _SkRidge(alpha=self.alpha))


class GradientBoosting(_FeatureRegressor):
    """Histogram gradient boosting (scikit-learn) on window summary features.

    One model per target. No early stopping, so every training window is used for fitting and
    the result depends on nothing but the data and ``random_state``; the defaults fit a few
    thousand windows in seconds.

    Args:
        max_iter: boosting rounds.
        learning_rate: shrinkage.
        max_leaf_nodes: leaves per tree.
        min_samples_leaf: fewest training windows per leaf.
        random_state: seed.

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
        >>> w = windows(np.abs(level))  # not linear in the features
        >>> train, test = np.arange(80), np.arange(80, 100)
        >>> gb = GradientBoosting(max_iter=50).fit(w, train).predict(w, test)
        >>> mean = TrainMean().fit(w, train).predict(w, test)
        >>> bool(np.abs(gb - w.y[test]).mean() < np.abs(mean - w.y[test]).mean())
        True
    """

    _per_target: ClassVar[bool] = True

    def __init__(
        self,
        *,
        max_iter: int = 200,
        learning_rate: float = 0.1,
        max_leaf_nodes: int = 15,
        min_samples_leaf: int = 20,
        random_state: int = 0,
    ) -> None:
        check_number("max_iter", max_iter, integer=True)
        check_number("learning_rate", learning_rate)
        check_number("max_leaf_nodes", max_leaf_nodes, integer=True, low=1)
        check_number("min_samples_leaf", min_samples_leaf, integer=True)
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.min_samples_leaf = min_samples_leaf
        self.random_state = random_state

    def _make(self) -> HistGradientBoostingRegressor:
        return HistGradientBoostingRegressor(
            max_iter=self.max_iter,
            learning_rate=self.learning_rate,
            max_leaf_nodes=self.max_leaf_nodes,
            min_samples_leaf=self.min_samples_leaf,
            early_stopping=False,
            random_state=self.random_state,
        )
