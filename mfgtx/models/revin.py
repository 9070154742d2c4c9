"""Reversible instance normalisation (RevIN, Kim et al., ICLR 2022) from the context only.

Shape legend: ``B`` batch, ``T`` time steps, ``C`` channels.

Each series of each sample is centred and scaled by the mean and standard deviation of its
own *observed context* values, the model works in those units, and its outputs are mapped
back. The statistics are computed once, from the context window, and never from the
horizon: a forecast cannot learn the level of the future it is asked to predict.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

__all__ = ["InstanceStats", "denormalize", "instance_stats", "normalize"]


class InstanceStats(NamedTuple):
    """Per-sample, per-channel ``mean`` and ``std``, each ``(B, 1, C)``."""

    mean: Tensor
    std: Tensor


def instance_stats(
    x: Tensor, observed: Tensor | None = None, *, eps: float = 1e-5
) -> InstanceStats:
    """Mean and standard deviation of ``x (B, T, C)`` over time, observed steps only.

    Values where ``observed`` is ``False`` are ignored (they may be NaN). A channel with no
    observed value gets mean 0; the standard deviation is ``sqrt(var + eps)`` so that it is
    never 0.

    Example:
        >>> x = torch.tensor([[[1.0], [3.0], [float("nan")]]])
        >>> s = instance_stats(x, ~torch.isnan(x))
        >>> s.mean.item(), round(s.std.item(), 3)
        (2.0, 1.0)
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, T, C), found {tuple(x.shape)}")
    w = torch.ones_like(x) if observed is None else observed.to(x.dtype)  # (B, T, C)
    x = torch.where(w > 0, x, torch.zeros((), dtype=x.dtype, device=x.device))
    n = w.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1, C)
    mean = (x * w).sum(1, keepdim=True) / n  # (B, 1, C)
    var = (((x - mean) * w) ** 2).sum(1, keepdim=True) / n  # (B, 1, C)
    return InstanceStats(mean, torch.sqrt(var + eps))


def normalize(x: Tensor, stats: InstanceStats) -> Tensor:
    """``(x - mean) / std`` for ``x (B, T, C)``."""
    return (x - stats.mean) / stats.std


def denormalize(y: Tensor, stats: InstanceStats) -> Tensor:
    """Undo :func:`normalize` on ``y (B, T, C)`` or ``y (B, T, C, Q)`` (quantiles last).

    Example:
        >>> x = torch.randn(2, 10, 3) * 5 + 7
        >>> s = instance_stats(x)
        >>> bool(torch.allclose(denormalize(normalize(x, s), s), x, atol=1e-5))
        True
    """
    mean, std = stats
    if y.dim() == 4:
        mean, std = mean.unsqueeze(-1), std.unsqueeze(-1)  # (B, 1, C, 1)
    return y * std + mean
