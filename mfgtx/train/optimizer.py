"""The optimizer :func:`mfgtx.train.fit` trains with: AdamW, decay on matrices only."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from mfgtx.train.config import TrainConfig

__all__ = ["build_optimizer"]


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def build_optimizer(model: nn.Module, config: TrainConfig) -> torch.optim.AdamW:
    """AdamW over ``model``'s trainable parameters with ``config``'s rate, betas and decay.

    Weight decay applies to parameters with two or more dimensions (weight matrices,
    convolution kernels, position tables); biases and norm scales are not decayed.

    Args:
        model: the module to train.
        config: the :class:`~mfgtx.train.TrainConfig` (``lr``, ``betas``, ``weight_decay``).

    Returns:
        The optimizer :func:`~mfgtx.train.fit` uses.

    Example:
        >>> opt = build_optimizer(nn.Linear(4, 2), TrainConfig(lr=1e-3))
        >>> [len(g["params"]) for g in opt.param_groups], opt.param_groups[1]["weight_decay"]
        ([1, 1], 0.0)
    """
    return torch.optim.AdamW(
        _param_groups(model, config.weight_decay), lr=config.lr, betas=config.betas
    )
