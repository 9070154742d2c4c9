"""Forecast windows as training items: the forecast columns' past, its mask and horizon.

Shape legend: ``T`` window length, ``H`` horizon, ``K`` forecast columns, ``Cp`` other
sensors (past-observed covariates).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch.utils.data import Dataset

from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["ForecastWindows"]


class ForecastWindows(Dataset):
    """Items ``{"x": (T, K), "observed": (T, K), "y": (H, K)[, "past_covariates": (T, Cp)]}``.

    All scaled with the training ``scaler``; ``y`` holds the forecast columns' horizon
    (NaN where missing), ``past_covariates`` the other sensors inside the window only.

    Args:
        windows: forecast windows (``horizon > 0``) whose forecast columns are sensors.
        indices: which windows.
        scaler: fitted on the training windows.
        covariates: also return the other sensors as ``past_covariates``.
    """

    def __init__(
        self,
        windows: Windows,
        indices: Sequence[int] | np.ndarray,
        scaler: SensorScaler,
        *,
        covariates: bool = False,
    ) -> None:
        if windows.horizon == 0 or windows.y is None:
            raise ValueError("forecast windows need horizon > 0 and targets (windows.y)")
        missing = [c for c in windows.targets if c not in windows.sensors]
        if missing:
            raise ValueError(
                f"forecast columns {missing} are not sensors (sensors: {list(windows.sensors)});"
                " the forecaster reads the past of what it forecasts"
            )
        self.windows, self.scaler, self.covariates = windows, scaler, covariates
        self.y = windows.y  # (N, H, K), not None (checked above)
        self.indices = np.asarray(indices, dtype=np.int64)
        self.cols = [windows.sensors.index(c) for c in windows.targets]
        self.others = [j for j in range(len(windows.sensors)) if j not in self.cols]
        center, scale = np.asarray(scaler.center), np.asarray(scaler.scale)
        self.center, self.scale = center[self.cols], scale[self.cols]

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def scaled_targets(self, idx: np.ndarray) -> np.ndarray:
        """``(n, H, K)`` horizons of windows ``idx`` in the scaler's units."""
        y = self.y[idx].astype(np.float64)
        return ((y - self.center) / self.scale).astype(np.float32)

    def batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        """The items of windows ``idx`` (positions into the windows), stacked."""
        x, observed = self.windows.features(idx, self.scaler)  # (n, T, C)
        out = {
            "x": torch.from_numpy(x[:, :, self.cols]),
            "observed": torch.from_numpy(observed[:, :, self.cols]),
            "y": torch.from_numpy(self.scaled_targets(idx)),
        }
        if self.covariates:
            out["past_covariates"] = torch.from_numpy(x[:, :, self.others])
        return out

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: v[0] for k, v in self.batch(self.indices[i : i + 1]).items()}
