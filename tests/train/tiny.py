"""A tiny trainable model and data set shared by the training tests and their subprocesses."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch.utils.data import Dataset

from mfgtx.nn import Encoder, TransformerConfig


class WindowData(Dataset):
    """``x (T, C)`` windows whose target is a fixed linear function of their mean."""

    def __init__(self, n: int, seed: int, *, poison_index: int | None = None) -> None:
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 12, 3, generator=g)
        self.y = self.x.mean(1) @ torch.tensor([1.5, -2.0, 0.5]) + 0.1 * torch.randn(n, generator=g)
        if poison_index is not None:
            self.x[poison_index] = float("nan")
        self.seen: list[int] = []

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        self.seen.append(int(i))
        return {"x": self.x[i], "y": self.y[i], "index": torch.tensor(i)}


@dataclass(frozen=True)
class TinyConfig:
    d_model: int = 16


class TinyRegressor(nn.Module):
    def __init__(self, config: TinyConfig = TinyConfig()) -> None:
        super().__init__()
        self.config = config
        cfg = TransformerConfig(d_model=config.d_model, n_heads=2, n_layers=1, d_ff=32, dropout=0.1)
        self.embed = nn.Linear(3, config.d_model)
        self.encoder = Encoder(cfg)
        self.head = nn.Linear(config.d_model, 1)

    def predict(self, batch: dict[str, Tensor]) -> Tensor:
        h = self.encoder(self.embed(batch["x"])).output  # (B, T, D)
        return self.head(h.mean(1)).squeeze(-1)  # (B,)

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        return nn.functional.mse_loss(self.predict(batch).float(), batch["y"])
