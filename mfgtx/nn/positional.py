"""Positional information: sinusoidal, learned, rotary (RoFormer), T5 relative bias, ALiBi.

Shape legend: ``B`` batch, ``T`` query length, ``S`` key length, ``H`` heads,
``D`` model width (``d_model``), ``Dh`` head dim.

Additive encodings (:class:`SinusoidalPositionalEncoding`, :class:`LearnedPositionalEmbedding`)
take ``x (B, T, D)`` and an ``offset`` (the number of positions already seen, for decoding with
a KV cache) and return ``x`` plus the encoding. :class:`RotaryEmbedding` rotates queries and
keys inside attention. :class:`RelativePositionBias` (learned) and :class:`ALiBiBias` (fixed)
return an additive ``(1, H, T, S)`` bias for the attention scores.

Which kernel each trains on: the learned T5 bias needs a gradient, which PyTorch's CPU flash
kernel does not compute, so on CPU it trains on the math kernel (a
:class:`~mfgtx.nn.KernelWarning` says so); on CUDA the memory-efficient kernel takes a bias
with a gradient. ALiBi's bias is fixed (no gradient), so it keeps the CPU flash kernel; on
CUDA any explicit bias rules flash out and the memory-efficient kernel runs. Rotary
positions pass no bias at all and keep flash everywhere.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

__all__ = [
    "ALiBiBias",
    "LearnedPositionalEmbedding",
    "RelativePositionBias",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "alibi_slopes",
    "sinusoidal_table",
]


def _check_positive(**kwargs: int) -> None:
    for name, value in kwargs.items():
        if value <= 0:
            raise ValueError(f"{name} must be positive, found {value}")


def sinusoidal_table(length: int, d_model: int, *, base: float = 10000.0) -> Tensor:
    """The encoding of Vaswani et al. (2017), ``(length, d_model)``.

    ``PE[pos, 2i] = sin(pos / base^(2i/d_model))``, ``PE[pos, 2i+1] = cos(...)``.

    >>> torch.allclose(sinusoidal_table(3, 4)[1, :2], torch.tensor([math.sin(1.0), math.cos(1.0)]))
    True
    """
    _check_positive(length=length, d_model=d_model)
    if d_model % 2:
        raise ValueError(f"sinusoidal encoding needs an even d_model, found {d_model}")
    pos = torch.arange(length, dtype=torch.float64).unsqueeze(1)  # (L, 1)
    div = torch.pow(base, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)  # (D/2,)
    table = torch.empty(length, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos / div)
    table[:, 1::2] = torch.cos(pos / div)
    return table.float()


def _check_x(x: Tensor, d_model: int) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(f"x must have shape (B, T, d_model={d_model}), found {tuple(x.shape)}")


class SinusoidalPositionalEncoding(nn.Module):
    """Fixed sinusoidal positions added to ``x``; any length (the table grows on demand).

    Args:
        d_model: model width (even).
        max_len: length of the precomputed table.

    Example:
        >>> pe = SinusoidalPositionalEncoding(8)
        >>> pe(torch.zeros(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    table: Tensor  # (max_len, d_model) buffer, grown on demand

    def __init__(self, d_model: int, max_len: int = 2048) -> None:
        super().__init__()
        self.d_model = d_model
        self.register_buffer("table", sinusoidal_table(max_len, d_model), persistent=False)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_x(x, self.d_model)
        end = offset + x.shape[1]
        if end > self.table.shape[0]:
            self.table = sinusoidal_table(2 * end, self.d_model).to(self.table.device)
        return x + self.table[offset:end].to(x.dtype)


class LearnedPositionalEmbedding(nn.Module):
    """Learned absolute positions (as in BERT and GPT-2) added to ``x``.

    Args:
        max_len: the number of positions that can be represented.
        d_model: model width.

    Example:
        >>> LearnedPositionalEmbedding(16, 8)(torch.zeros(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(self, max_len: int, d_model: int) -> None:
        super().__init__()
        _check_positive(max_len=max_len, d_model=d_model)
        self.d_model = d_model
        self.weight = nn.Parameter(torch.zeros(max_len, d_model))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        _check_x(x, self.d_model)
        end = offset + x.shape[1]
        if end > self.weight.shape[0]:
            raise ValueError(
                f"sequence reaches position {end} but the learned positional embedding has "
                f"max_len={self.weight.shape[0]}; build the model with a larger max_len"
            )
        return x + self.weight[offset:end]


def _rotate_half(x: Tensor) -> Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    """Rotary position embedding (Su et al., RoFormer, 2021) for queries and keys.

    Dimension pairs ``(j, j + Dh/2)`` are rotated by the angle ``pos * base^(-2j/Dh)``, so
    ``<rot(q, m), rot(k, n)>`` depends only on ``m - n``. Holds no parameters; one instance can
    be shared by every layer.

    Args:
        head_dim: ``Dh``, even.
        base: frequency base (10000 in the paper).

    Example:
        >>> rope = RotaryEmbedding(8)
        >>> rope(torch.randn(1, 2, 5, 8), offset=3).shape
        torch.Size([1, 2, 5, 8])
    """

    inv_freq: Tensor  # (Dh/2,) buffer

    def __init__(self, head_dim: int, base: float = 10000.0) -> None:
        super().__init__()
        _check_positive(head_dim=head_dim)
        if head_dim % 2:
            raise ValueError(f"rotary embedding needs an even head_dim, found {head_dim}")
        self.head_dim = head_dim
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
        self.register_buffer("inv_freq", inv_freq.float(), persistent=False)

    def angles(self, length: int, offset: int = 0, device: torch.device | None = None) -> Tensor:
        """``(length, Dh)`` rotation angles for positions ``offset .. offset+length-1``."""
        pos = torch.arange(offset, offset + length, device=device, dtype=torch.float32)
        freqs = torch.outer(pos, self.inv_freq.to(device))  # (L, Dh/2)
        return torch.cat((freqs, freqs), dim=-1)  # (L, Dh)

    def forward(self, x: Tensor, offset: int = 0) -> Tensor:
        """Rotate ``x (B, H, L, Dh)`` as if it sat at positions ``offset ..``."""
        if x.dim() != 4 or x.shape[-1] != self.head_dim:
            raise ValueError(
                f"rotary input must have shape (B, H, L, Dh={self.head_dim}), "
                f"found {tuple(x.shape)}"
            )
        ang = self.angles(x.shape[-2], offset, x.device)
        cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
        return x * cos + _rotate_half(x) * sin


class RelativePositionBias(nn.Module):
    """T5-style bucketed relative position bias (Raffel et al., 2020), one scalar per head.

    Offsets ``key_pos - query_pos`` are put into ``num_buckets`` buckets: exact for small
    offsets, logarithmic up to ``max_distance``, clipped beyond. Bidirectional (encoder) biases
    use half the buckets for each sign.

    Args:
        n_heads: number of heads ``H``.
        num_buckets: buckets per direction set (32 in T5).
        max_distance: offsets beyond this share the last bucket (128 in T5).
        bidirectional: ``False`` for causal decoders (future offsets never occur).

    Example:
        >>> RelativePositionBias(4)(5, 7).shape
        torch.Size([1, 4, 5, 7])
    """

    def __init__(
        self,
        n_heads: int,
        *,
        num_buckets: int = 32,
        max_distance: int = 128,
        bidirectional: bool = True,
    ) -> None:
        super().__init__()
        _check_positive(n_heads=n_heads, num_buckets=num_buckets, max_distance=max_distance)
        if bidirectional and num_buckets < 4:
            raise ValueError(f"bidirectional bias needs num_buckets >= 4, found {num_buckets}")
        self.n_heads = n_heads
        self.num_buckets = num_buckets
        self.max_distance = max_distance
        self.bidirectional = bidirectional
        self.embedding = nn.Embedding(num_buckets, n_heads)

    def bucket(self, relative: Tensor) -> Tensor:
        """Map integer offsets ``key - query`` to bucket ids."""
        n = self.num_buckets
        buckets = torch.zeros_like(relative)
        if self.bidirectional:
            n //= 2
            buckets = buckets + (relative > 0).long() * n
            dist = relative.abs()
        else:
            dist = (-relative).clamp(min=0)
        max_exact = n // 2
        is_small = dist < max_exact
        log_ratio = torch.log(dist.float().clamp(min=1) / max_exact) / math.log(
            self.max_distance / max_exact
        )
        large = max_exact + (log_ratio * (n - max_exact)).long()
        large = large.clamp(max=n - 1)
        return buckets + torch.where(is_small, dist, large)

    def forward(self, query_len: int, key_len: int) -> Tensor:
        """Bias ``(1, H, T, S)``; queries are aligned to the last keys (as with a KV cache)."""
        device = self.embedding.weight.device
        q_pos = torch.arange(key_len - query_len, key_len, device=device)
        k_pos = torch.arange(key_len, device=device)
        rel = k_pos[None, :] - q_pos[:, None]  # (T, S)
        bias = self.embedding(self.bucket(rel))  # (T, S, H)
        # contiguous: CUDA's fused kernels take a bias only when its last dimension is dense;
        # the permuted view (stride H) sent every training step of the learned bias to the
        # math kernel (benchmarks/gpu_check.py on an H200, torch 2.11)
        return bias.permute(2, 0, 1).unsqueeze(0).contiguous()  # (1, H, T, S)


def alibi_slopes(n_heads: int) -> Tensor:
    """Per-head slopes of ALiBi (Press et al., ICLR 2022), ``(H,)``.

    For ``H`` a power of two the geometric sequence ``2^(-8/H), 2^(-16/H), ..., 2^(-8)``;
    otherwise the slopes of the largest power of two below ``H`` followed by every other slope
    of twice that (the paper's rule).

    >>> alibi_slopes(4).tolist()
    [0.25, 0.0625, 0.015625, 0.00390625]
    >>> len(alibi_slopes(6)), alibi_slopes(6)[4:].tolist()  # 4 slopes, then 2 of the 8-head set
    (6, [0.5, 0.125])
    """
    _check_positive(n_heads=n_heads)

    def geometric(n: int) -> list[float]:
        return [2.0 ** (-8.0 * (i + 1) / n) for i in range(n)]

    low = 2 ** math.floor(math.log2(n_heads))
    slopes = geometric(low) + geometric(2 * low)[0::2][: n_heads - low]
    return torch.tensor(slopes, dtype=torch.float32)


class ALiBiBias(nn.Module):
    """Attention with linear biases (ALiBi, Press et al., 2022): ``-slope_h * |key - query|``.

    A fixed bias, no parameters: it needs no gradient, so training keeps PyTorch's CPU flash
    kernel (which takes a float bias but computes no gradient for it). Causal stacks mask the
    future anyway, so one symmetric form serves encoders and decoders. Queries are aligned to
    the last keys, as with a KV cache.

    Args:
        n_heads: number of heads ``H``.

    Example:
        >>> bias = ALiBiBias(2)(3, 3)
        >>> bias.shape, bias[0, 0, 2].tolist()  # head 0 (slope 1/16): last query vs each key
        (torch.Size([1, 2, 3, 3]), [-0.125, -0.0625, -0.0])
    """

    slopes: Tensor  # (H,) buffer

    def __init__(self, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.register_buffer("slopes", alibi_slopes(n_heads), persistent=False)

    def forward(self, query_len: int, key_len: int) -> Tensor:
        """Bias ``(1, H, T, S)``; query ``i`` sits at key position ``i + S - T``."""
        _check_positive(query_len=query_len, key_len=key_len)
        device = self.slopes.device
        q_pos = torch.arange(key_len - query_len, key_len, device=device)
        k_pos = torch.arange(key_len, device=device)
        dist = (k_pos[None, :] - q_pos[:, None]).abs().float()  # (T, S)
        return (-self.slopes[:, None, None] * dist).unsqueeze(0)  # (1, H, T, S)
