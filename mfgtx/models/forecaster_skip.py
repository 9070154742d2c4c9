"""The forecaster's linear skip: a linear map of each series' normalised context to the
horizon (NLinear-style), added to the direct head's forecast, and its ridge fit.

Shape legend: ``B'`` sequences (``B * C`` channel-independent, else ``B``), ``L`` context
length, ``H`` horizon, ``k`` channels per token; ``R`` rows of a ridge fit (one per window
and series).

A :class:`torch.nn.Linear` from ``L`` to ``H``, so the forecaster's state-dict keys stay
``skip.weight`` and ``skip.bias``. It starts at zero: the forecaster begins as the
Transformer alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from torch import Tensor, nn

__all__ = ["LinearSkip"]


class LinearSkip(nn.Linear):
    """``values (B', L, k)`` -> a shift of the point forecast ``(B', H, k, 1)``, the same map
    for every series (shared across channels when channel-independent).

    Args:
        context_length: steps ``L`` read.
        horizon: steps ``H`` forecast.

    Example:
        >>> skip = LinearSkip(16, 4)
        >>> skip(torch.randn(3, 16, 2)).shape, float(skip.weight.detach().abs().sum())
        (torch.Size([3, 4, 2, 1]), 0.0)
    """

    def __init__(self, context_length: int, horizon: int) -> None:
        super().__init__(context_length, horizon)
        nn.init.zeros_(self.weight)  # zero at the start: the model begins as the Transformer
        nn.init.zeros_(self.bias)

    def forward(self, values: Tensor) -> Tensor:
        return super().forward(values.transpose(1, 2)).transpose(1, 2)[..., None]  # (B',H,k,1)

    @torch.no_grad()
    def fit_ridge(
        self,
        rows: Iterable[tuple[Tensor, Tensor, Tensor]],
        *,
        alpha: float,
        device: torch.device,
    ) -> None:
        """Set the map to the weighted ridge regression of the horizon on the context.

        Args:
            rows: chunks ``(X (R, L), Y (R, H), w (R, 1))`` in float64, one row per window and
                series; only sums of products are kept, so memory is one chunk's.
            alpha: penalty on the weights (the bias is not penalised: centred normal
                equations).
            device: where the sums are kept.
        """
        L, H = self.in_features, self.out_features

        def f64(*size: int) -> Tensor:  # zeros in float64 on device
            return torch.zeros(size, dtype=torch.float64, device=device)

        n, sx, sy = f64(), f64(L), f64(H)
        xx, xy = f64(L, L), f64(L, H)
        for X, Y, w in rows:
            wX = w * X
            n, sx, sy = n + w.sum(), sx + wX.sum(0), sy + (w * Y).sum(0)
            xx, xy = xx + wX.T @ X, xy + wX.T @ Y
        x_mean, y_mean = sx / n, sy / n  # centred normal equations; the bias is not penalised
        eye = torch.eye(L, dtype=torch.float64, device=device)
        gram = xx - n * torch.outer(x_mean, x_mean) + alpha * eye
        W = torch.linalg.solve(gram, xy - n * torch.outer(x_mean, y_mean))  # (L, H)
        self.weight.copy_(W.T)
        self.bias.copy_(y_mean - x_mean @ W)
