"""The forecaster's heads and their losses: direct (the whole horizon at once, with quantiles
that cannot cross) and next-patch (autoregressive: every position's next ``s`` steps, with a
Gaussian scale when quantiles are asked for).

Shape legend: ``B'`` sequences (``B * C`` channel-independent, else ``B``), ``N`` patches
(tokens), ``D`` ``d_model``, ``H`` horizon, ``k`` channels per token (1 or ``C``), ``Q``
quantiles, ``s`` stride (steps a position predicts), ``F`` known-future covariates.

Each head is a :class:`torch.nn.Linear` with its output reshaped, so the forecaster's
state-dict keys stay ``direct.*``, ``future_head.*`` and ``next_patch.*``.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import Tensor, nn

__all__ = [
    "DirectHead",
    "NextPatchHead",
    "PlanHead",
    "direct_loss",
    "next_patch_loss",
    "non_crossing",
    "shift_point",
]


class DirectHead(nn.Linear):
    """Flatten head: the context's tokens ``(B', N*D)`` -> ``(B', H, k, 1 + Q)``, the point
    forecast then ``Q`` raw quantile outputs (see :func:`non_crossing`).

    Args:
        n_patches, d_model: the tokens ``N`` and their width ``D``.
        horizon: steps ``H`` forecast at once.
        k: channels per token.
        n_quantiles: quantile outputs ``Q`` per step (0: the point forecast only).

    Example:
        >>> DirectHead(4, 8, horizon=6, k=1, n_quantiles=3)(torch.zeros(2, 32)).shape
        torch.Size([2, 6, 1, 4])
    """

    def __init__(self, n_patches: int, d_model: int, *, horizon: int, k: int, n_quantiles: int):
        super().__init__(n_patches * d_model, horizon * k * (1 + n_quantiles))
        self.horizon, self.n_quantiles = horizon, n_quantiles

    def forward(self, tokens: Tensor) -> Tensor:
        out = super().forward(tokens)  # (B', H*k*(1+Q))
        return out.view(tokens.shape[0], self.horizon, -1, 1 + self.n_quantiles)  # (B',H,k,1+Q)


class PlanHead(nn.Linear):
    """Known-future covariates of the horizon ``(B', H, F)`` -> a shift of the point forecast
    ``(B', H, k, 1)`` (the planned set-points' linear effect).

    Example:
        >>> PlanHead(horizon=6, n_future=2, k=1)(torch.zeros(3, 6, 2)).shape
        torch.Size([3, 6, 1, 1])
    """

    def __init__(self, *, horizon: int, n_future: int, k: int) -> None:
        super().__init__(horizon * n_future, horizon * k)
        self.horizon, self.k = horizon, k

    def forward(self, plan: Tensor) -> Tensor:
        out = super().forward(plan.flatten(1))  # (B', H*k)
        return out.view(plan.shape[0], self.horizon, self.k, 1)  # (B', H, k, 1)


def shift_point(out: Tensor, delta: Tensor) -> Tensor:
    """Add ``delta (B', H, k, 1)`` to the point forecast and the first quantile of ``out (B',
    H, k, 1 + Q)``; the other quantiles are steps above the first (:func:`non_crossing`),
    so the whole band moves with it."""
    moves = torch.zeros(out.shape[-1], dtype=out.dtype, device=out.device)
    moves[:2] = 1.0
    return out + delta * moves


def non_crossing(out: Tensor) -> Tensor:
    """``(..., 1 + Q)`` raw outputs -> the point and ``Q`` quantiles that cannot cross: the
    first quantile is free, each next one adds a positive (softplus) step.

    Example:
        >>> [round(v, 4) for v in non_crossing(torch.tensor([0.5, 1.0, -5.0, 0.0])).tolist()]
        [0.5, 1.0, 1.0067, 1.6999]
    """
    q = torch.cat([out[..., 1:2], F.softplus(out[..., 2:])], dim=-1).cumsum(-1)
    return torch.cat([out[..., :1], q], dim=-1)


def direct_loss(out: Tensor, y: Tensor, quantiles: Sequence[float]) -> Tensor:
    """MSE of the point forecast plus, with quantiles, the mean pinball loss; ``out (B, H,
    C, 1 + Q)``, ``y (B, H, C)`` with NaN where a target is missing (left out)."""
    w = (~torch.isnan(y)).float()
    target = torch.nan_to_num(y.float())
    n = w.sum().clamp(min=1.0)
    loss = (((out[..., 0] - target) ** 2) * w).sum() / n
    if quantiles:
        levels = torch.tensor(quantiles, device=out.device)  # (Q,)
        err = target.unsqueeze(-1) - out[..., 1:]  # (B, H, C, Q)
        pinball = torch.maximum(levels * err, (levels - 1) * err) * w.unsqueeze(-1)
        loss = loss + pinball.sum() / (n * len(quantiles))
    return loss


class NextPatchHead(nn.Linear):
    """Autoregressive head: positions ``(B', N, D)`` -> the mean of each one's next ``s``
    steps ``(B', N, s, k)`` and, ``with_scale``, a positive Gaussian scale of the same shape
    (else ``None``).

    Example:
        >>> head = NextPatchHead(8, stride=4, k=1, with_scale=True)
        >>> mean, scale = head(torch.zeros(2, 5, 8))
        >>> mean.shape, bool((scale > 0).all())
        (torch.Size([2, 5, 4, 1]), True)
    """

    def __init__(self, d_model: int, *, stride: int, k: int, with_scale: bool) -> None:
        super().__init__(d_model, stride * k * (2 if with_scale else 1))
        self.stride, self.k, self.with_scale = stride, k, with_scale

    # a Linear that returns two tensors: mean and scale
    def forward(self, h: Tensor) -> tuple[Tensor, Tensor | None]:  # type: ignore[override]  # returns (mean, scale)
        out = super().forward(h)  # (B', N, s*k*(1|2))
        shape = (*h.shape[:2], self.stride, self.k)
        mean = out[..., : self.stride * self.k].reshape(shape)
        if not self.with_scale:
            return mean, None
        return mean, F.softplus(out[..., self.stride * self.k :]).reshape(shape) + 1e-3


def next_patch_loss(
    mean: Tensor, scale: Tensor | None, target: Tensor, std: Tensor, weight: Tensor
) -> Tensor:
    """Teacher-forced loss of the next-patch head, each ``(B, N', s, C)`` but ``std (B, 1,
    C)``: the MSE in the context's units (``(mean - target) / std``, so every sample weighs
    the same) or, with a ``scale``, the Gaussian negative log-likelihood; ``weight`` 0 leaves
    a target out."""
    z = (mean.float() - target.float()) / std.unsqueeze(1)  # (B, N', s, C)
    if scale is None:
        return ((z**2) * weight).sum() / weight.sum().clamp(min=1.0)
    sz = scale.float() / std.unsqueeze(1)
    nll = 0.5 * z**2 / sz**2 + torch.log(sz)
    return (nll * weight).sum() / weight.sum().clamp(min=1.0)
