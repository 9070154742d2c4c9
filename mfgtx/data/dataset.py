"""A torch Dataset over chosen windows, scaled with the training scaler.

Shape legend: ``T`` window length, ``C`` sensors, ``K`` targets, ``H`` horizon.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch
from torch import Tensor
from torch.utils.data import Dataset

from mfgtx.data.errors import DataWarning
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.windows import Windows

__all__ = ["WindowDataset"]


class WindowDataset(Dataset):
    """Items ``{"x": (T, C) float32, "observed": (T, C) bool, "y": ..., "index": int}``.

    Args:
        windows: the :class:`~mfgtx.data.Windows`.
        indices: which windows (for example ``sets.train``).
        scaler: the scaler fitted on the training windows (applied to ``x`` only; ``y`` stays
            in the data's units). Forecast windows whose targets are sensors warn, since the
            model would read scaled values and predict raw ones: use
            :class:`mfgtx.data.ForecastWindows`, which scales both.
        target: ``"float"`` (``y`` as float32 ``(K,)`` or ``(H, K)``), ``"class"`` (``y`` as an
            int64 class id from the first target column) or ``"none"`` (no ``y``).

    Example:
        >>> import pandas as pd
        >>> from mfgtx.data import ColumnMap, make_windows, read_table
        >>> df = pd.DataFrame({"lot": ["A"] * 6, "t": range(6), "s": range(6), "rul": range(6)})
        >>> w = make_windows(read_table(df, ColumnMap("lot", "t", targets="rul")), 4)
        >>> item = WindowDataset(w, [0, 2])[1]
        >>> item["x"].shape, item["y"].tolist(), int(item["index"])
        (torch.Size([4, 1]), [5.0], 2)
    """

    def __init__(
        self,
        windows: Windows,
        indices: Sequence[int] | np.ndarray,
        scaler: SensorScaler | None = None,
        *,
        target: Literal["float", "class", "none"] = "float",
    ) -> None:
        if target not in ("float", "class", "none"):
            raise ValueError(f"target must be 'float', 'class' or 'none', found {target!r}")
        if target != "none" and windows.y is None:
            raise ValueError("the windows have no targets; use target='none'")
        self.windows, self.scaler, self.target = windows, scaler, target
        self.indices = np.asarray(indices, dtype=np.int64)
        if self.indices.size and (self.indices.min() < 0 or self.indices.max() >= len(windows)):
            raise ValueError(f"indices must lie in [0, {len(windows)}), found {self.indices.max()}")
        if (
            scaler is not None
            and target == "float"
            and windows.horizon > 0
            and any(t in windows.sensors for t in windows.targets)
        ):
            warnings.warn(
                "WindowDataset scales x but not y: these forecast windows would have the model "
                "read scaled sensors and predict them in raw units; use "
                "mfgtx.data.ForecastWindows, which scales both with the same scaler",
                DataWarning,
                stacklevel=2,
            )
        if target == "class" and windows.y is not None:  # not None: checked above
            labels = windows.y[self.indices].reshape(len(self.indices), -1)[:, 0]
            if np.isnan(labels).any() or (labels != np.round(labels)).any() or (labels < 0).any():
                raise ValueError("class targets must be whole numbers >= 0 without missing values")

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return self.__getitems__([i])[0]

    def __getitems__(self, items: Sequence[int]) -> list[dict[str, Tensor]]:
        """The items at positions ``items``, read and scaled in one vectorised pass.

        A :class:`~torch.utils.data.DataLoader` calls this once per batch instead of
        ``__getitem__`` once per item; its collate function then stacks the items as usual.
        """
        j = self.indices[np.asarray(items, dtype=np.int64)]
        x, observed = self.windows.features(j, self.scaler)
        columns = {
            "x": torch.from_numpy(x),
            "observed": torch.from_numpy(observed),
            "index": torch.from_numpy(j),
        }
        y = self.windows.y  # None only with target "none" (checked in __init__)
        if self.target == "float" and y is not None:
            columns["y"] = torch.from_numpy(np.asarray(y[j], dtype=np.float32))
        elif self.target == "class" and y is not None:
            first = y[j].reshape(len(j), -1)[:, 0]
            columns["y"] = torch.from_numpy(first.astype(np.int64))
        return [{k: v[n] for k, v in columns.items()} for n in range(len(j))]
