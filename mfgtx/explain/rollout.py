"""Attention rollout (Abnar & Zuidema, 2020): attention traced through all layers.

Shape legend: ``B`` batch, ``H`` heads, ``N`` tokens (queries = keys, self-attention).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["attention_rollout"]


def attention_rollout(layers: Sequence[Tensor], key_mask: Tensor | None = None) -> Tensor:
    """Rollout ``(B, N, N)``: per layer, heads averaged and the identity added for the
    residual path, rows renormalised, then the layers multiplied (first layer rightmost).

    Every row of the result sums to 1 (a product of row-stochastic matrices). Rows of
    queries that attended to nothing (all keys masked) are taken as the identity.

    Args:
        layers: per-layer self-attention weights ``(B, H, N, N)``, first layer first.
        key_mask: optional ``(B, N)``, ``True`` = a real token; masked tokens keep no weight.

    Example:
        >>> w = torch.softmax(torch.randn(2, 4, 5, 5), dim=-1)
        >>> r = attention_rollout([w, w])
        >>> r.shape, torch.allclose(r.sum(-1), torch.ones(2, 5))
        (torch.Size([2, 5, 5]), True)
    """
    if not layers:
        raise ValueError("attention_rollout needs the weights of at least one layer")
    B, _, N, S = layers[0].shape
    if N != S:
        raise ValueError(f"rollout needs self-attention weights (N x N), found {N} x {S}")
    eye = torch.eye(N, dtype=torch.float64, device=layers[0].device).expand(B, N, N)
    rollout = eye
    for i, w in enumerate(layers):
        if w.shape != layers[0].shape:
            raise ValueError(f"layer {i} weights {tuple(w.shape)} differ from layer 0's")
        a = w.to(torch.float64).mean(1)  # (B, N, N) heads averaged
        if key_mask is not None:
            a = a * key_mask[:, None, :].to(a.dtype)
        a = a + eye  # the residual path
        a = a / a.sum(-1, keepdim=True)
        rollout = a @ rollout
    return rollout.to(layers[0].dtype)
