"""Multi-head attention for self- and cross-attention, with rotary positions and a KV cache.

Shape legend: ``B`` batch, ``T`` query length, ``S`` key length, ``D`` ``d_model``,
``H`` ``n_heads``, ``Dh`` head dim ``D / H``.

Masks follow the package convention: boolean, ``True`` = may attend. Note that
``key_mask`` is *not* PyTorch's ``key_padding_mask``: there ``True`` marks padding to ignore,
here ``True`` marks a real key. The name differs on purpose, so that code ported from
``torch.nn.MultiheadAttention`` cannot silently invert its padding.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.nn.attention import AttentionOutput, attention
from mfgtx.nn.cache import LayerKV
from mfgtx.nn.positional import RotaryEmbedding

__all__ = ["MultiHeadAttention", "merge_masks"]


def merge_masks(
    attn_mask: Tensor | None, key_mask: Tensor | None, batch: int, key_len: int
) -> Tensor | None:
    """AND a broadcastable ``attn_mask`` with a ``(B, S)`` ``key_mask`` -> ``(B, 1|H, T|1, S)``.

    >>> merge_masks(None, torch.tensor([[True, False]]), 1, 2).shape
    torch.Size([1, 1, 1, 2])
    """
    if key_mask is None:
        return attn_mask
    if key_mask.dtype != torch.bool or tuple(key_mask.shape) != (batch, key_len):
        raise ValueError(
            f"key_mask must be a boolean tensor of shape (B, S) = {(batch, key_len)} "
            f"(True = real key), found {key_mask.dtype} {tuple(key_mask.shape)}"
        )
    km = key_mask[:, None, None, :]  # (B, 1, 1, S)
    return km if attn_mask is None else attn_mask & km


class _SplitHeads(torch.autograd.Function):
    """``qkv (B, T, 3D)`` -> queries, keys and values ``(B, H, T, Dh)``, as views of it.

    The backward writes the three gradients straight into one ``(B, T, 3D)`` buffer: one
    copy, where autograd's ``unbind`` would stack them and copy again to undo the
    permutation. Used in training only; without gradients plain views do the same.
    """

    @staticmethod
    def forward(ctx: Any, qkv: Tensor, n_heads: int) -> tuple[Tensor, Tensor, Tensor]:
        B, T, D3 = qkv.shape
        ctx.shape = (B, T, 3, n_heads, D3 // (3 * n_heads))
        heads = qkv.view(ctx.shape).permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh)
        return heads[0], heads[1], heads[2]

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, *grads: Tensor | None) -> tuple[Tensor, None]:
        B, T = ctx.shape[:2]
        like = next(g for g in grads if g is not None)
        grad = torch.empty(ctx.shape, dtype=like.dtype, device=like.device)  # (B, T, 3, H, Dh)
        heads = grad.permute(2, 0, 3, 1, 4)  # (3, B, H, T, Dh), a view of it
        for i, g in enumerate(grads):
            if g is None:
                heads[i].zero_()
            else:
                heads[i].copy_(g)
        return grad.view(B, T, -1), None  # (B, T, 3D)


class MultiHeadAttention(nn.Module):
    """Multi-head scaled dot-product attention (Vaswani et al., 2017).

    Args:
        d_model: model width ``D``; must be divisible by ``n_heads``.
        n_heads: number of heads ``H``.
        dropout: dropout on the attention weights during training. Keep it at 0 (the default)
            for speed: any attention dropout sends the CPU kernel to the unfused path.
        bias: add biases to the four projections.
        kdim: width of the key input (cross-attention from another model), default ``D``.
        vdim: width of the value input, default ``kdim``.
        rotary: a :class:`RotaryEmbedding` applied to queries and keys (self-attention).

    Example:
        >>> mha = MultiHeadAttention(16, 4)
        >>> x = torch.randn(2, 5, 16)
        >>> out, w = mha(x, need_weights=True)
        >>> out.shape, w.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 4, 5, 5]))
        >>> mem = torch.randn(2, 7, 16)
        >>> mha(x, mem).output.shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        dropout: float = 0.0,
        bias: bool = True,
        kdim: int | None = None,
        vdim: int | None = None,
        rotary: RotaryEmbedding | None = None,
    ) -> None:
        super().__init__()
        if d_model <= 0 or n_heads <= 0:
            raise ValueError(f"d_model and n_heads must be positive, found {d_model}, {n_heads}")
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), found {dropout}")
        self.d_model, self.n_heads, self.head_dim = d_model, n_heads, d_model // n_heads
        if rotary is not None and rotary.head_dim != self.head_dim:
            raise ValueError(
                f"rotary head_dim={rotary.head_dim} does not match d_model / n_heads = "
                f"{self.head_dim}"
            )
        self.kdim = kdim or d_model
        self.vdim = vdim or self.kdim
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(self.kdim, d_model, bias=bias)
        self.v_proj = nn.Linear(self.vdim, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)
        self.rotary = rotary
        self._fusable = self.kdim == d_model and self.vdim == d_model  # one (D, 3D) product

    def _qkv(self, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Self-attention queries, keys and values ``(B, H, T, Dh)`` from one product.

        One ``(D, 3D)`` product instead of three ``(D, D)`` ones: fewer, larger GEMMs in
        forward and backward. The weights stay three ``(D, D)`` parameters, so the state
        dict and :meth:`from_torch` are those of separate projections; concatenating them
        per call copies ``3 D^2`` values, against ``B T`` rows of activations.
        """
        B, T, _ = x.shape
        weight = torch.cat([self.q_proj.weight, self.k_proj.weight, self.v_proj.weight])
        bias = None
        if self.q_proj.bias is not None:
            bias = torch.cat([self.q_proj.bias, self.k_proj.bias, self.v_proj.bias])
        qkv = F.linear(x, weight, bias)  # (B, T, 3D)
        if qkv.requires_grad:
            return _SplitHeads.apply(qkv, self.n_heads)
        heads = qkv.view(B, T, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        return heads[0], heads[1], heads[2]  # each (B, H, T, Dh), a view

    def _heads(self, x: Tensor) -> Tensor:
        B, L, _ = x.shape
        return x.view(B, L, self.n_heads, self.head_dim).transpose(1, 2)  # (B, H, L, Dh)

    @staticmethod
    def _check(name: str, x: Tensor, width: int) -> None:
        if x.dim() != 3 or x.shape[-1] != width:
            raise ValueError(f"{name} must have shape (B, L, {width}), found {tuple(x.shape)}")

    def forward(
        self,
        query: Tensor,
        key: Tensor | None = None,
        value: Tensor | None = None,
        *,
        key_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        attn_bias: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
        cache: LayerKV | None = None,
    ) -> AttentionOutput:
        """Attend from ``query (B, T, D)`` to ``key``/``value (B, S, kdim|vdim)``.

        Args:
            query: ``(B, T, D)``.
            key: ``(B, S, kdim)``; ``None`` for self-attention (keys = query).
            value: ``(B, S, vdim)``; defaults to ``key``.
            key_mask: ``(B, S)`` boolean, ``True`` = real key (not padding). With a cache,
                it covers every cached key.
            attn_mask: boolean, broadcastable to ``(B, H, T, S)``, ``True`` = may attend.
            attn_bias: float additive bias broadcastable to ``(B, H, T, S)``.
            is_causal: causal self-attention; bottom-right aligned when decoding with a cache.
            need_weights: also return per-head weights ``(B, H, T, S)``.
            cache: self-attention: new keys/values are appended and attention runs over all
                of them. Cross-attention: keys/values are computed from ``key`` on the first
                call and reused afterwards.

        Returns:
            :class:`AttentionOutput` ``(output (B, T, D), weights (B, H, T, S) or None)``.
        """
        self._check("query", query, self.d_model)
        self_attn = key is None
        if self_attn and value is not None:
            raise ValueError("value was given without key; pass both for cross-attention")
        B = query.shape[0]
        offset = cache.length if (cache is not None and self_attn) else 0

        if self_attn and self._fusable:
            q, k, v = self._qkv(query)  # one (D, 3D) product instead of three (D, D) ones
            if self.rotary is not None:
                k = self.rotary(k, offset)
            if cache is not None:
                k, v = cache.append(k, v)
        elif not self_attn and cache is not None and cache.length > 0:
            q = self._heads(self.q_proj(query))  # (B, H, T, Dh)
            k, v = cache.get()  # cross-attention memory, computed once
        else:
            q = self._heads(self.q_proj(query))  # (B, H, T, Dh)
            key_in = query if key is None else key
            value_in = key_in if value is None else value
            self._check("key", key_in, self.kdim if not self_attn else self.d_model)
            self._check("value", value_in, self.vdim if not self_attn else self.d_model)
            if key_in.shape[:2] != value_in.shape[:2] or key_in.shape[0] != B:
                raise ValueError(
                    f"query, key and value must share the batch size and key and value the "
                    f"length; found query {tuple(query.shape)}, key {tuple(key_in.shape)}, "
                    f"value {tuple(value_in.shape)}"
                )
            k = self._heads(self.k_proj(key_in))  # (B, H, S, Dh)
            v = self._heads(self.v_proj(value_in))  # (B, H, S, Dh)
            if self.rotary is not None and self_attn:
                k = self.rotary(k, offset)
            if cache is not None:
                k, v = cache.append(k, v)
        if self.rotary is not None and self_attn:
            q = self.rotary(q, offset)

        mask = merge_masks(attn_mask, key_mask, B, k.shape[2])
        out, weights = attention(
            q,
            k,
            v,
            attn_mask=mask,
            attn_bias=attn_bias,
            is_causal=is_causal,
            dropout_p=self.dropout if self.training else 0.0,
            need_weights=need_weights,
        )
        out = out.transpose(1, 2).reshape(B, q.shape[2], self.d_model)  # (B, T, D)
        return AttentionOutput(self.out_proj(out), weights)

    @classmethod
    def from_torch(cls, m: nn.MultiheadAttention) -> MultiHeadAttention:
        """Copy a :class:`torch.nn.MultiheadAttention` so that outputs match.

        Our module is always batch-first; when ``m.batch_first`` is ``False`` feed ``(B, T, D)``
        here where ``m`` took ``(T, B, D)``. Modules with ``add_bias_kv`` or ``add_zero_attn``
        have no counterpart and are refused.

        Example:
            >>> ref = nn.MultiheadAttention(8, 2, batch_first=True)
            >>> ours = MultiHeadAttention.from_torch(ref)
            >>> x = torch.randn(1, 3, 8)
            >>> bool(torch.allclose(ours(x).output, ref(x, x, x)[0], atol=1e-6))
            True
        """
        if m.bias_k is not None or m.add_zero_attn:
            raise ValueError(
                "MultiheadAttention with add_bias_kv or add_zero_attn is not supported"
            )
        bias = m.in_proj_bias is not None
        new = cls(m.embed_dim, m.num_heads, dropout=m.dropout, bias=bias, kdim=m.kdim, vdim=m.vdim)
        new.to(device=m.out_proj.weight.device, dtype=m.out_proj.weight.dtype)
        E = m.embed_dim
        with torch.no_grad():
            if m.in_proj_weight is not None:
                wq, wk, wv = m.in_proj_weight.split(E, dim=0)
            else:
                wq, wk, wv = m.q_proj_weight, m.k_proj_weight, m.v_proj_weight
            for proj, w in ((new.q_proj, wq), (new.k_proj, wk), (new.v_proj, wv)):
                proj.weight.copy_(w)
            if bias:
                for proj, b in zip(
                    (new.q_proj, new.k_proj, new.v_proj), m.in_proj_bias.split(E), strict=True
                ):
                    proj.bias.copy_(b)
            new.out_proj.weight.copy_(m.out_proj.weight)
            if m.out_proj.bias is not None and new.out_proj.bias is not None:
                new.out_proj.bias.copy_(m.out_proj.bias)
        return new
