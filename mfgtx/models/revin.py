"""Reversible instance normalisation (RevIN, Kim et al., ICLR 2022) from the context only.

Shape legend: ``B`` batch, ``T`` time steps, ``C`` channels, ``N`` prefixes.

Each series of each sample is centred and scaled by the mean and standard deviation of its
own *observed context* values, the model works in those units, and its outputs are mapped
back. The statistics are computed from the context window, never from the horizon: a
forecast cannot learn the level of the future it is asked to predict.

:func:`prefix_stats` gives the causal form for teacher forcing: the statistics of each
prefix ``x[:, :end]`` only, so that a position trained to predict context steps never sees
them through the normalisation.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import Tensor

__all__ = [
    "InstanceStats",
    "PrefixStats",
    "denormalize",
    "instance_stats",
    "normalize",
    "prefix_stats",
]


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


class PrefixStats(NamedTuple):
    """Statistics of ``N`` prefixes of each series: ``mean``, ``std`` and ``count`` (observed
    values), each ``(B, N, C)``."""

    mean: Tensor
    std: Tensor
    count: Tensor  # type: ignore[assignment]  # a field named count hides tuple.count, as meant


def prefix_stats(
    x: Tensor, observed: Tensor | None, ends: Tensor, *, eps: float = 1e-5
) -> PrefixStats:
    """Mean and standard deviation of ``x[:, :end]`` (observed steps only) for each ``end``.

    Running sums in float64, so the statistics of a prefix depend on that prefix alone, to
    the last bit: changing ``x`` at or after ``end`` leaves them unchanged. A prefix with no
    observed value gets mean 0 (``count`` says so); the standard deviation is
    ``sqrt(var + eps)`` as in :func:`instance_stats`, which the prefix ending at ``T`` equals
    up to float rounding.

    Args:
        x: ``(B, T, C)``; missing values may be NaN.
        observed: ``(B, T, C)`` bool, or ``None`` (every value observed).
        ends: ``(N,)`` prefix lengths in ``1 .. T``.
        eps: added to the variance.

    Returns:
        :class:`PrefixStats`, each field ``(B, N, C)`` in the dtype of ``x`` (count float).

    Example:
        >>> x = torch.tensor([[[1.0], [3.0], [8.0]]])
        >>> s = prefix_stats(x, None, torch.tensor([1, 2, 3]), eps=0.0)
        >>> s.mean.flatten().tolist(), [round(v, 3) for v in s.std.flatten().tolist()]
        ([1.0, 2.0, 4.0], [0.0, 1.0, 2.944])
    """
    if x.dim() != 3:
        raise ValueError(f"x must have shape (B, T, C), found {tuple(x.shape)}")
    T = x.shape[1]
    if ends.dim() != 1 or int(ends.min()) < 1 or int(ends.max()) > T:
        raise ValueError(f"ends must be 1-D prefix lengths in 1..{T}, found {ends.tolist()}")
    w = torch.ones_like(x, dtype=torch.float64) if observed is None else observed.double()
    x64 = torch.where(w > 0, x.double(), torch.zeros((), dtype=torch.float64, device=x.device))
    at = ends.to(x.device) - 1  # (N,) last step of each prefix
    count = w.cumsum(1)[:, at]  # (B, N, C)
    n = count.clamp(min=1.0)
    mean = (x64 * w).cumsum(1)[:, at] / n  # (B, N, C)
    var = ((x64 * x64 * w).cumsum(1)[:, at] / n - mean**2).clamp(min=0.0)
    return PrefixStats(mean.to(x.dtype), torch.sqrt(var + eps).to(x.dtype), count.to(x.dtype))


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
