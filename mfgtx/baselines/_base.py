"""The baseline interface and the checks every baseline shares.

Shape legend: ``N`` windows, ``n`` windows asked for, ``K`` targets, ``H`` horizon,
``M`` classes.

A baseline is fitted on the training windows of a split and then predicts other windows (of
the same :class:`~mfgtx.data.Windows`, or of new ones with the same sensors and targets)::

    baseline.fit(windows, train_idx, scaler=None)   # -> the baseline itself
    baseline.predict(windows, test_idx)             # -> (n, K), (n,) labels or (n, H, K)
    baseline.predict_proba(windows, test_idx)       # classifiers only -> (n, M)

It remembers the training indices (``train_idx_``) so that :func:`~mfgtx.baselines.compare`
can check that every baseline saw the same training windows and none of the test windows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Protocol, Self, runtime_checkable

import numpy as np

from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["Baseline", "Task"]

Task = Literal["regression", "classification", "forecast"]
TASKS: tuple[str, ...] = ("regression", "classification", "forecast")


@runtime_checkable
class Baseline(Protocol):
    """What :func:`~mfgtx.baselines.compare` needs from a baseline."""

    task: ClassVar[str]
    train_idx_: np.ndarray

    @property
    def name(self) -> str: ...

    def fit(
        self, windows: Windows, train_idx: Sequence[int] | np.ndarray, scaler: Any = None
    ) -> Self: ...

    def predict(self, windows: Windows, idx: Sequence[int] | np.ndarray) -> np.ndarray: ...


def check_task(task: object) -> str:
    if task not in TASKS:
        raise ValueError(f"task must be one of {list(TASKS)}, found {task!r}")
    return str(task)


def as_indices(idx: object, n_windows: int, what: str) -> np.ndarray:
    """``idx`` as a non-empty 1-D int64 array of window positions in ``[0, n_windows)``."""
    arr = np.asarray(idx)
    if arr.dtype == bool:
        raise ValueError(f"{what} must be window indices, not a boolean mask; use np.flatnonzero")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(
            f"{what} must be a non-empty 1-D array of window indices, found shape {arr.shape}"
        )
    if not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{what} must hold integers, found dtype {arr.dtype}")
    out_of_range = (arr < 0) | (arr >= n_windows)
    if out_of_range.any():
        raise ValueError(
            f"{what} holds {int(arr[out_of_range][0])}, outside the {n_windows} windows "
            f"(0..{n_windows - 1})"
        )
    return arr.astype(np.int64)


def targets_of(windows: Windows, idx: np.ndarray, what: str) -> np.ndarray:
    """``windows.y[idx]`` as float64, refusing windows without a complete label."""
    if windows.y is None:
        raise ValueError("the windows have no targets (windows.y is None)")
    y = windows.y[idx].astype(np.float64)
    missing = np.isnan(y.reshape(len(idx), -1)).any(axis=1)
    if missing.any():
        i = int(np.flatnonzero(missing)[0])
        raise ValueError(
            f"{int(missing.sum())} of the {what} windows have a missing target, first window "
            f"{int(idx[i])} (lot {windows.lot[idx[i]]}); keep labelled windows only "
            "(np.intersect1d(idx, windows.labelled()))"
        )
    return y


def check_windows(windows: Windows, task: str, who: str, *, need_targets: bool = True) -> None:
    """The windows suit ``task``: horizon 0 for regression/classification, > 0 for forecasts.

    Fitting needs targets; predicting on new, unlabelled windows does not.
    """
    if not isinstance(windows, Windows):
        raise ValueError(f"{who} needs mfgtx.data.Windows, found {type(windows).__name__}")
    if need_targets and windows.y is None:
        raise ValueError(f"{who}: the windows have no targets (windows.y is None)")
    if task == "forecast" and windows.horizon == 0:
        raise ValueError(f"{who} forecasts: it needs windows with horizon > 0, found horizon 0")
    if task != "forecast" and windows.horizon != 0:
        raise ValueError(
            f"{who} is a {task} baseline: it needs windows with horizon 0, found horizon "
            f"{windows.horizon} (use the forecast baselines)"
        )


def check_scaler(scaler: object, windows: Windows) -> None:
    if scaler is None:
        return
    if not isinstance(scaler, SensorScaler):
        raise ValueError(f"scaler must be a SensorScaler or None, found {type(scaler).__name__}")
    if tuple(scaler.sensors) != tuple(windows.sensors):
        raise ValueError(
            f"the scaler was fitted on sensors {list(scaler.sensors)}, the windows have "
            f"{list(windows.sensors)}"
        )


def check_number(name: str, value: object, *, integer: bool = False, low: float = 0.0) -> None:
    """``value`` is a number (an integer if asked) strictly above ``low``."""
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if not isinstance(value, kinds) or isinstance(value, bool) or not value > low:
        kind = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {kind} > {low:g}, found {value!r}")


class Fitted:
    """Mixin: the training indices and a clear error when predicting before :meth:`fit`."""

    task: ClassVar[str]
    train_idx_: np.ndarray
    n_windows_: int

    @property
    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return self.name

    def _start_fit(self, windows: Windows, train_idx: object, scaler: object) -> np.ndarray:
        check_windows(windows, self.task, self.name)
        check_scaler(scaler, windows)
        idx = as_indices(train_idx, len(windows), f"{self.name}: train_idx")
        self.train_idx_ = idx
        self.n_windows_ = len(windows)
        return idx

    def _start_predict(self, windows: Windows, idx: object) -> np.ndarray:
        if not hasattr(self, "train_idx_"):
            raise RuntimeError(f"{self.name} is not fitted yet; call fit(windows, train_idx) first")
        check_windows(windows, self.task, self.name, need_targets=False)
        return as_indices(idx, len(windows), f"{self.name}: idx")
