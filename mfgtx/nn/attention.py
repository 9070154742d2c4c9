"""Scaled dot-product attention: one function, one mask convention.

Shape legend: ``B`` batch, ``H`` heads, ``T`` query length, ``S`` key length,
``Dh`` query/key head dim, ``Dv`` value head dim.

Masks are boolean and ``True`` means *may attend*, the convention of
:func:`torch.nn.functional.scaled_dot_product_attention`. Additive float biases (for example
T5 relative position biases) travel separately as ``attn_bias`` so that a float tensor can
never be mistaken for a mask.

The default path is the fused kernel behind ``scaled_dot_product_attention`` (FlashAttention on
CPU; on CUDA FlashAttention when there is no explicit mask or bias, else the memory-efficient
kernel). The explicit ``softmax(q k^T / sqrt(Dh) + bias) v`` path runs when the attention
weights are asked for (``need_weights=True``): the fused kernels never materialise them.

One rule picks products over the kernel: bf16 training on the CPU over at most
:data:`MATERIALISE_MAX_KEYS` keys and :data:`MATERIALISE_MAX_SCORES` scores a call runs as bf16
products and a softmax (:func:`_materialise` gives the measurements: the CPU kernel's bf16
backward is several times slower than the products there). It is a kernel choice, made the
same way every time, not a fallback, so it does not warn.

No silent fallback: a call that records gradients (a training call) and will not run on a
fused kernel raises a :class:`KernelWarning` saying why: weights asked for, or PyTorch's own
dispatcher choosing its math kernel (on CPU: attention dropout, a bias that needs a gradient
such as the learned T5 relative bias, query and value head dims that differ).
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor
from torch.nn.attention import SDPBackend

__all__ = ["AttentionOutput", "KernelWarning", "attention", "causal_mask"]


class KernelWarning(UserWarning):
    """A training call of :func:`attention` runs outside PyTorch's fused attention kernels.

    Raised (as a warning) when a call that records gradients takes the explicit softmax path
    (``need_weights=True``) or when PyTorch's dispatcher picks its math kernel for it. The
    message names the reason. Turn it into an error with
    ``warnings.simplefilter("error", KernelWarning)`` to make a training run refuse it.
    """


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


def _records_gradients(*tensors: Tensor | None) -> bool:
    """A training call: autograd is on and some input needs a gradient."""
    return torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in tensors)


#: bf16 training on the CPU materialises the scores of a call up to this many keys and this
#: many scores (``B * H * T * S``; 2 bytes each are kept for the backward).
MATERIALISE_MAX_KEYS = 1024
MATERIALISE_MAX_SCORES = 1 << 25


def _compute_dtype(q: Tensor) -> torch.dtype:
    """The dtype attention runs in: ``q``'s, or autocast's where autocast casts it."""
    if q.dtype == torch.float32 and torch.is_autocast_enabled(q.device.type):
        return torch.get_autocast_dtype(q.device.type)
    return q.dtype


def _materialise(q: Tensor, k: Tensor, sdpa_mask: Tensor | None, dropout_p: float) -> bool:
    """bf16 training on the CPU over at most ``MATERIALISE_MAX_KEYS`` keys: the explicit
    products, not the flash kernel.

    PyTorch's CPU flash kernel is slow backward in bf16: on a 2-core AMD EPYC with
    AVX512-BF16 one ViT-Tiny attention layer (32 x 3 heads x 197 x 64) took 38 ms forward
    and backward in the kernel against 13 ms as bf16 products and a softmax (fp32 inside),
    and 35 against 6 ms at 64 x 4 x 65 x 48; from 1024 keys on, the two are even and the
    kernel's linear memory wins (``benchmarks/floor.py``, README). In fp32 the kernel is as
    fast as the products, so fp32 always runs it.
    """
    B, H, T, _ = q.shape
    S = k.shape[-2]
    return (
        q.device.type == "cpu"
        and _compute_dtype(q) == torch.bfloat16
        and dropout_p == 0.0
        and (sdpa_mask is None or not sdpa_mask.requires_grad)
        and S <= MATERIALISE_MAX_KEYS
        and B * H * T * S <= MATERIALISE_MAX_SCORES
    )


def _materialised(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    bias: Tensor | None,
    is_causal: bool,
    user_mask: Tensor | None,
    scale: float | None,
) -> Tensor:
    """``softmax(q k^T * scale + bias) v`` in bf16, softmax accumulated in fp32: the scores
    ``(B, H, T, S)`` are kept once, as the bf16 weights (2 bytes a score).

    The scores round to bf16 before the softmax, as in eager bf16 attention: against float64
    the error is a few times the flash kernel's (``tests/nn/test_attention.py``).
    """
    dtype = torch.bfloat16
    q, k, v = q.to(dtype), k.to(dtype), v.to(dtype)
    T, S = q.shape[-2], k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = torch.matmul(q * scale, k.transpose(-2, -1))  # (B, H, T, S) bf16
    if bias is not None:
        scores = scores + bias.to(dtype)
    if is_causal:
        mask = causal_mask(T, S, device=q.device)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)  # bf16 out, fp32 inside
    if user_mask is not None and mask is not None:  # mask holds the user mask, which
        # may leave a row with no key: zeros, not NaN
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    return torch.matmul(weights, v)  # (B, H, T, Dv)


def _math_reasons(q: Tensor, v: Tensor, mask: Tensor | None, dropout_p: float) -> list[str]:
    """The known reasons PyTorch sends a call to its math kernel (for the warning text)."""
    reasons = []
    if dropout_p > 0.0 and q.device.type == "cpu":
        reasons.append(f"attention dropout {dropout_p} (the CPU flash kernel has none)")
    if mask is not None and mask.requires_grad:
        reasons.append(
            "an additive bias that needs a gradient (a learned bias such as the T5 relative "
            "position bias; positional='alibi' or 'rotary' keep the fused kernel)"
        )
    if q.shape[-1] != v.shape[-1]:
        reasons.append(f"query head dim {q.shape[-1]} differs from value head dim {v.shape[-1]}")
    if any(t.stride(-1) != 1 for t in (q, v)):
        reasons.append("a last dimension that is not contiguous")
    return reasons


def _warn_if_math_kernel(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None,
    dropout_p: float,
    is_causal: bool,
    scale: float | None,
) -> None:
    """Ask PyTorch's dispatcher which kernel this call gets; warn if it is the math one."""
    choose = getattr(torch, "_fused_sdp_choice", None)
    if choose is None or torch.compiler.is_compiling():
        return
    try:
        backend = int(choose(q, k, v, mask, dropout_p, is_causal, scale=scale))
    except (RuntimeError, TypeError):  # an older signature: the check cannot be made
        return
    if backend != SDPBackend.MATH.value:
        return
    why = _math_reasons(q, v, mask, dropout_p) or [
        f"dtype {q.dtype}, head dim {q.shape[-1]} (run it under "
        "torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION) to see PyTorch's reason)"
    ]
    warnings.warn(
        f"attention that records gradients (training) runs on PyTorch's math kernel on "
        f"{q.device.type}, not a fused kernel: " + "; ".join(why),
        KernelWarning,
        stacklevel=3,
    )


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
        need_weights: also return the ``(B, H, T, S)`` weights; uses the explicit path
            (and warns, :class:`KernelWarning`, when the call records gradients).
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
        if _records_gradients(q, k, v, sdpa_mask):
            if _materialise(q, k, sdpa_mask, dropout_p):
                out = _materialised(q, k, v, mask, attn_bias, sdpa_causal, attn_mask, scale)
                return AttentionOutput(out, None)
            _warn_if_math_kernel(q, k, v, sdpa_mask, dropout_p, sdpa_causal, scale)
        out = F.scaled_dot_product_attention(
            q, k, v, attn_mask=sdpa_mask, dropout_p=dropout_p, is_causal=sdpa_causal, scale=scale
        )
        return AttentionOutput(out, None)

    if _records_gradients(q, k, v, attn_bias):
        warnings.warn(
            "attention weights were asked for (need_weights=True) in a call that records "
            "gradients: the explicit softmax path runs, not a fused kernel. Ask for weights "
            "under torch.no_grad(), as mfgtx.explain does",
            KernelWarning,
            stacklevel=2,
        )

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
    if attn_mask is not None and mask is not None:  # mask holds the user mask, which
        # may leave a row with no key: zeros, not NaN
        weights = weights.masked_fill(~mask.any(dim=-1, keepdim=True), 0.0)
    weights = weights.to(q.dtype)
    mixed = F.dropout(weights, p=dropout_p) if dropout_p > 0.0 else weights
    out = torch.matmul(mixed, v)  # (B, H, T, Dv)
    return AttentionOutput(out, weights)
