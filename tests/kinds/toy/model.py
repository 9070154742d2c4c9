"""The toy model: each sensor's mean over the window, then one linear layer.

Shape legend: ``B`` windows, ``T`` window rows, ``C`` sensors, ``K`` classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class ToyConfig:
    """Args: n_channels: sensors; n_outputs: classes."""

    n_channels: int
    n_outputs: int = 2

    def __post_init__(self) -> None:
        if self.n_channels < 1 or self.n_outputs < 2:
            raise ValueError(f"n_channels >= 1 and n_outputs >= 2, found {self}")


class ToyModel(nn.Module):
    """``forward(x (B, T, C), observed (B, T, C)) -> logits (B, K)``."""

    def __init__(self, config: ToyConfig) -> None:
        super().__init__()
        self.config = config
        self.head = nn.Linear(config.n_channels, config.n_outputs)

    def forward(self, x: Tensor, observed: Tensor | None = None) -> Tensor:
        seen = torch.ones_like(x) if observed is None else observed.to(x.dtype)
        mean = (x * seen).sum(1) / seen.sum(1).clamp(min=1.0)  # (B, T, C) -> (B, C)
        return self.head(mean)  # (B, K)

    def loss(self, batch: dict[str, Any]) -> Tensor:
        logits = self(batch["x"], batch.get("observed")).float()
        return F.cross_entropy(logits, batch["y"].long().view(-1))

    def predict(self, batch: dict[str, Any]) -> Tensor:
        return self(batch["x"], batch.get("observed"))
