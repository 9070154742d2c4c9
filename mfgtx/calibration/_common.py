"""Input checks shared by the calibration tools."""

from __future__ import annotations

import math
from numbers import Real

import numpy as np
import torch

from mfgtx.metrics import _finite


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
    if isinstance(value, bool) or not isinstance(value, Real) or not float(value) > 0:
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
