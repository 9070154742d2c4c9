"""Operating regimes of raw rows, as a bundle's :class:`~mfgtx.data.Regimes` tells them.

The watch compares a sensor within one regime with that regime's training readings, so that
a new mix of grades or operating conditions does not read as drift.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mfgtx.data import Regimes

__all__ = ["regime_names", "regime_of_rows"]


def regime_names(regimes: Regimes) -> tuple[str, ...]:
    """The name of each regime index: a column regime's names (or values), else
    ``regime_0`` ..."""
    if regimes.plan.column is not None:
        if regimes.names:
            return tuple(regimes.names)
        return tuple(f"{v:g}" for v in regimes.labels)
    return tuple(f"regime_{k}" for k in range(regimes.n_regimes))


def regime_of_rows(regimes: Regimes, frame: pd.DataFrame) -> np.ndarray:
    """The regime index ``(R,)`` of each raw row of ``frame`` (``-1``: not told: a setting
    missing, a column missing, or a regime never seen in training)."""
    n = len(frame)
    if any(c not in frame.columns for c in regimes.settings):
        return np.full(n, -1, dtype=np.int64)
    if regimes.plan.column is not None and regimes.names:
        names = list(regimes.names)
        col = frame[regimes.plan.column].astype("string")
        return np.array([names.index(v) if v in names else -1 for v in col], dtype=np.int64)
    values = np.full((n, len(regimes.inputs)), np.nan)  # (R, C) in the order assign reads
    for c in regimes.settings:
        values[:, regimes.inputs.index(c)] = pd.to_numeric(frame[c], errors="coerce")
    told = ~np.isnan(values[:, [regimes.inputs.index(c) for c in regimes.settings]]).any(axis=1)
    out = np.full(n, -1, dtype=np.int64)
    if told.any():
        out[told] = regimes.assign(values[told])
    return out
