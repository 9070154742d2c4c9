"""Scaled dot-product attention: one function, one mask convention.

Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length,
``Dh`` query/key head dim, ``Dv`` value head dim.

Masks are boolean and ``True`` means *may attend*, the convention of
:func:`torch.nn.functional.scaled_dot_product_attention`. Additive float biases (for example
T5 relative position biases) travel separately as ``attn_bias`` so that a float tensor can
never be mistaken for a mask.

The default path is the fused kernel behind ``scaled_dot_product_attention`` (FlashAttention on
CUDA and on CPU). The explicit ``softmax(q k^T / sqrt(Dh) + bias) v`` path runs only when the
attention weights are asked for (``need_weights=True``): the fused kernels never materialise
them.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["AttentionOutput", "attention", "causal_mask"]


class AttentionOutput(NamedTuple):
    """Result of :func:`attention` and of the attention modules.

    Attributes:
        output: ``(B, H, T, Dv)`` for :func:`attention`, ``(B, T, d_model)`` for modules.
        weights: ``(B, H, T, S)`` post-softmax weights (rows over allowed keys sum to 1), or
            ``None`` unless ``need_weights=True`` was passed.
    """

    output: Tensor
    weights: Tensor | None


def causal_mask(
    query_len: int, key_len: int, *, device: torch.device | str | None = None
) -> Tensor:
    """Boolean causal mask ``(T, S)``, ``True`` = may attend, aligned bottom-right.

    Query ``i`` sits at absolute position ``i + (S - T)``, so with fewer queries than keys
    (decoding with a KV cache) the last query sees every key. With ``T == S`` this is the usual
    lower-triangular mask.

    >>> causal_mask(2, 4).int().tolist()
    [[1, 1, 1, 0], [1, 1, 1, 1]]
    """
    if query_len > key_len:
        raise ValueError(
            f"causal mask needs query_len <= key_len, found query_len={query_len}, "
            f"key_len={key_len}"
        )
    q_pos = torch.arange(query_len, device=device).unsqueeze(1) + (key_len - query_len)
    k_pos = torch.arange(key_len, device=device).unsqueeze(0)
    return k_pos <= q_pos  # (T, S)


def _check_broadcast(name: str, t: Tensor, target: tuple[int, ...]) -> None:
    """Raise if ``t`` does not broadcast to ``target`` = (B, H, T, S)."""
    ok = t.dim() <= 4 and all(
        a in (1, b) for a, b in zip(reversed(t.shape), reversed(target), strict=False)
    )
    if not ok:
        raise ValueError(
            f"{name} has shape {tuple(t.shape)}; expected a tensor broadcastable to "
            f"(B, H, T, S) = {target}"
        )


def _check_inputs(
    q: Tensor, k: Tensor, v: Tensor, attn_mask: Tensor | None, attn_bias: Tensor | None
) -> None:
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D (B, H, L, D), found shape {tuple(t.shape)}")
    if q.shape[:2] != k.shape[:2] or k.shape[:2] != v.shape[:2]:
        raise ValueError(
            "q, k and v must share (B, H); found q "
            f"{tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"q and k must have the same head dim; found q {tuple(q.shape)}, k {tuple(k.shape)}"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"k and v must have the same length S; found k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    target = (q.shape[0], q.shape[1], q.shape[2], k.shape[2])
    if attn_mask is not None:
        if attn_mask.dtype != torch.bool:
            raise ValueError(
                f"attn_mask must be a boolean tensor (True = may attend), found dtype "
                f"{attn_mask.dtype}; pass additive float biases as attn_bias"
            )
        _check_broadcast("attn_mask", attn_mask, target)
    if attn_bias is not None:
        if not attn_bias.is_floating_point():
            raise ValueError(f"attn_bias must be a float tensor, found dtype {attn_bias.dtype}")
        _check_broadcast("attn_bias", attn_bias, target)


def attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    *,
    attn_mask: Tensor | None = None,
    attn_bias: Tensor | None = None,
    is_causal: bool = False,
    dropout_p: float = 0.0,
    need_weights: bool = False,
    scale: float | None = None,
) -> AttentionOutput:
    """Scaled dot-product attention with optional weights.

    Args:
        q: ``(B, H, T, Dh)`` queries.
        k: ``(B, H, S, Dh)`` keys.
        v: ``(B, H, S, Dv)`` values.
        attn_mask: boolean, broadcastable to ``(B, H, T, S)``; ``True`` = may attend.
        attn_bias: float, broadcastable to ``(B, H, T, S)``; added to the scores.
        is_causal: apply a causal mask, aligned bottom-right when ``T < S`` (query ``i``
            sits at position ``i + S - T``). Combined with ``attn_mask`` by logical AND.
        dropout_p: dropout on the attention weights (training only). Any value above zero
            sends the CPU kernel to the unfused path.
        need_weights: also return the ``(B, H, T, S)`` weights; uses the explicit path.
        scale: score scale, default ``1 / sqrt(Dh)``.

    Returns:
        :class:`AttentionOutput` ``(output (B, H, T, Dv), weights or None)``. Query rows
        with no allowed key give zero output (and zero weights), as the fused kernel does.

    Example:
        >>> q = k = v = torch.randn(2, 4, 5, 8)
        >>> out, w = attention(q, k, v, is_causal=True, need_weights=True)
        >>> out.shape, w.shape
        (torch.Size([2, 4, 5, 8]), torch.Size([2, 4, 5, 5]))
        >>> bool(torch.allclose(w.sum(-1), torch.ones(2, 4, 5)))
        True
    """
    _check_inputs(q, k, v, attn_mask, attn_bias)
    if not 0.0 <= dropout_p < 1.0:
        raise ValueError(f"dropout_p must be in [0, 1), found {dropout_p}")
    T, S = q.shape[-2], k.shape[-2]

    mask = attn_mask
    sdpa_causal = False
    if is_causal:
        if T == S and mask is None and attn_bias is None and not need_weights:
            sdpa_causal = True  # let the kernel build it (keeps flash on CUDA)
        elif T > 1:  # a single query sits at the last position and sees every key
            causal = causal_mask(T, S, device=q.device)
            mask = causal if mask is None else mask & causal

    if not need_weights:
        sdpa_mask: Tensor | None = mask
        if attn_bias is not None:
            bias = attn_bias.to(q.dtype)
            sdpa_mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask, dropout_p=dropout_p, is_causal=sdpa_causal, scale=scale
        )
        return AttentionOutput(out, None)

    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    # Softmax in fp32. In-place steps are safe for autograd: mul, add and masked_fill do not
    # save the tensor they modify. Freeing `scores` keeps the peak near two (T, S) buffers.
    scores = torch.matmul(q, k.transpose(-2, -1)).float().mul_(scale)  # (B, H, T, S)
    if attn_bias is not None:
        scores.add_(attn_bias.float())
    if mask is not None:
        scores.masked_fill_(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    del scores
    if attn_mask is not None:  # a user mask may leave a row with no key: zeros, not NaN
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    weights = weights.to(q.dtype)
    mixed = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    out = torch.matmul(mixed, v)  # (B, H, T, Dv)
    return AttentionOutput(out, weights)
