"""Encoder, decoder and encoder-decoder stacks over embedded inputs.

Shape legend: ``B`` batch, ``T`` target length, ``S`` source length, ``D`` ``d_model``,
``H`` heads.

Stacks take already-embedded inputs ``(B, T, D)``: models own their input embedding (sensor
patches, image patches, tokens) and their heads. A stack adds positional information as its
config says, applies its blocks, and ends with a final LayerNorm when the blocks are Pre-LN.
Masks: boolean, ``True`` = may attend; ``key_mask (B, T)`` marks real (non-padding) steps.
"""

from __future__ import annotations

from typing import NamedTuple

from torch import Tensor, nn

from mfgtx.nn.blocks import DecoderBlock, EncoderBlock
from mfgtx.nn.cache import KVCache
from mfgtx.nn.config import TransformerConfig
from mfgtx.nn.dropout import Dropout
from mfgtx.nn.init import init_weights
from mfgtx.nn.positional import (
    ALiBiBias,
    LearnedPositionalEmbedding,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
)

__all__ = ["Decoder", "Encoder", "EncoderDecoder", "StackOutput"]


class StackOutput(NamedTuple):
    """Stack output ``(B, T, D)`` and per-layer weights (tuples of ``(B, H, T, T|S)``)."""

    output: Tensor
    weights: tuple[Tensor, ...] | None = None
    cross_weights: tuple[Tensor, ...] | None = None


class _Positions(nn.Module):
    """The positional scheme of a stack: additive, rotary, a score bias (T5 or ALiBi) or none."""

    def __init__(self, config: TransformerConfig, *, bidirectional: bool) -> None:
        super().__init__()
        c = config
        self.additive: nn.Module | None = None
        self.rotary: RotaryEmbedding | None = None
        self.relative: RelativePositionBias | None = None
        self.alibi: ALiBiBias | None = None
        if c.positional == "sinusoidal":
            self.additive = SinusoidalPositionalEncoding(c.d_model, c.max_len)
        elif c.positional == "learned":
            self.additive = LearnedPositionalEmbedding(c.max_len, c.d_model)
        elif c.positional == "rotary":
            self.rotary = RotaryEmbedding(c.head_dim, base=c.rotary_base)
        elif c.positional == "relative":
            self.relative = RelativePositionBias(
                c.n_heads,
                num_buckets=c.relative_num_buckets,
                max_distance=c.relative_max_distance,
                bidirectional=bidirectional,
            )
        elif c.positional == "alibi":
            self.alibi = ALiBiBias(c.n_heads)

    def add(self, x: Tensor, offset: int) -> Tensor:
        return x if self.additive is None else self.additive(x, offset)

    def bias(self, query_len: int, key_len: int) -> Tensor | None:
        if self.relative is not None:
            return self.relative(query_len, key_len)
        return None if self.alibi is None else self.alibi(query_len, key_len)


def _check_input(name: str, x: Tensor, d_model: int) -> None:
    if x.dim() != 3 or x.shape[-1] != d_model:
        raise ValueError(
            f"{name} must have shape (B, T, d_model={d_model}), found {tuple(x.shape)}"
        )


class Encoder(nn.Module):
    """A stack of :class:`~mfgtx.nn.EncoderBlock` (bidirectional unless ``is_causal``).

    Args:
        config: a :class:`~mfgtx.nn.TransformerConfig`.

    Example:
        >>> enc = Encoder(TransformerConfig(d_model=16, n_heads=4, n_layers=2, d_ff=32))
        >>> out = enc(torch.randn(2, 5, 16), need_weights=True)
        >>> out.output.shape, len(out.weights), out.weights[0].shape
        (torch.Size([2, 5, 16]), 2, torch.Size([2, 4, 5, 5]))
    """

    def __init__(self, config: TransformerConfig) -> None:
        super().__init__()
        c = self.config = config
        self.positions = _Positions(c, bidirectional=True)
        self.dropout = Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(
                c.d_model,
                c.n_heads,
                c.d_ff,
                dropout=c.dropout,
                attn_dropout=c.attn_dropout,
                activation=c.activation,
                norm_first=c.norm_first,
                layer_norm_eps=c.layer_norm_eps,
                bias=c.bias,
                rotary=self.positions.rotary,
                drop_path=p,
            )
            for p in c.drop_rates
        )
        self.norm = (
            nn.LayerNorm(c.d_model, eps=c.layer_norm_eps, bias=c.bias) if c.norm_first else None
        )
        init_weights(self, n_layers=c.n_layers)

    def forward(
        self,
        x: Tensor,
        *,
        key_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
    ) -> StackOutput:
        """Encode ``x (B, T, D)``; returns :class:`StackOutput` with per-layer weights."""
        _check_input("x", x, self.config.d_model)
        T = x.shape[1]
        x = self.dropout(self.positions.add(x, 0))
        bias = self.positions.bias(T, T)
        weights = []
        for block in self.blocks:
            x, w, _ = block(
                x,
                key_mask=key_mask,
                attn_mask=attn_mask,
                attn_bias=bias,
                is_causal=is_causal,
                need_weights=need_weights,
            )
            weights.append(w)
        if self.norm is not None:
            x = self.norm(x)
        return StackOutput(x, tuple(weights) if need_weights else None)


class Decoder(nn.Module):
    """A stack of :class:`~mfgtx.nn.DecoderBlock`, causal by default.

    Args:
        config: a :class:`~mfgtx.nn.TransformerConfig`.
        cross_attention: ``True`` for the decoder of an encoder-decoder, ``False`` for a
            decoder-only stack.

    Example:
        >>> cfg = TransformerConfig(d_model=16, n_heads=4, d_ff=32)
        >>> dec = Decoder(cfg, cross_attention=False).eval()
        >>> x = torch.randn(1, 6, 16)
        >>> cache = dec.new_cache()
        >>> with torch.no_grad():
        ...     a = dec(x[:, :5], cache=cache).output
        ...     b = dec(x[:, 5:], cache=cache).output   # one new position
        ...     full = dec(x).output
        >>> bool(torch.allclose(torch.cat([a, b], 1), full, atol=1e-5))
        True
    """

    def __init__(self, config: TransformerConfig, *, cross_attention: bool = True) -> None:
        super().__init__()
        if config.drop_path:
            raise ValueError(
                f"drop_path={config.drop_path!r}: stochastic depth is for Encoder stacks; "
                "decoder blocks have none"
            )
        c = self.config = config
        self.cross_attention = cross_attention
        self.positions = _Positions(c, bidirectional=False)
        self.dropout = Dropout(c.dropout)
        self.blocks = nn.ModuleList(
            DecoderBlock(
                c.d_model,
                c.n_heads,
                c.d_ff,
                cross_attention=cross_attention,
                dropout=c.dropout,
                attn_dropout=c.attn_dropout,
                activation=c.activation,
                norm_first=c.norm_first,
                layer_norm_eps=c.layer_norm_eps,
                bias=c.bias,
                rotary=self.positions.rotary,
            )
            for _ in range(c.n_layers)
        )
        self.norm = (
            nn.LayerNorm(c.d_model, eps=c.layer_norm_eps, bias=c.bias) if c.norm_first else None
        )
        init_weights(self, n_layers=c.n_layers)

    def new_cache(self) -> KVCache:
        """An empty :class:`~mfgtx.nn.KVCache` sized for this stack."""
        return KVCache(self.config.n_layers)

    def forward(
        self,
        x: Tensor,
        memory: Tensor | None = None,
        *,
        key_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        memory_key_mask: Tensor | None = None,
        is_causal: bool = True,
        need_weights: bool = False,
        cache: KVCache | None = None,
    ) -> StackOutput:
        """Decode ``x (B, T, D)`` attending to ``memory (B, S, D)``.

        With a ``cache``, ``x`` holds only the new positions: they are placed after the
        ``cache.length`` positions already decoded, and attention runs over all of them.
        """
        _check_input("x", x, self.config.d_model)
        if memory is not None:
            _check_input("memory", memory, self.config.d_model)
        if cache is not None and cache.n_layers != len(self.blocks):
            raise ValueError(
                f"cache has {cache.n_layers} layers, the decoder has {len(self.blocks)}"
            )
        offset = 0 if cache is None else cache.length
        T = x.shape[1]
        x = self.dropout(self.positions.add(x, offset))
        bias = self.positions.bias(T, offset + T)
        weights, cross = [], []
        for i, block in enumerate(self.blocks):
            x, w, cw = block(
                x,
                memory,
                key_mask=key_mask,
                attn_mask=attn_mask,
                attn_bias=bias,
                is_causal=is_causal,
                memory_key_mask=memory_key_mask,
                need_weights=need_weights,
                cache=None if cache is None else cache.self_attn[i],
                cross_cache=None
                if cache is None or not self.cross_attention
                else cache.cross_attn[i],
            )
            weights.append(w)
            cross.append(cw)
        if self.norm is not None:
            x = self.norm(x)
        if not need_weights:
            return StackOutput(x)
        return StackOutput(x, tuple(weights), tuple(cross) if self.cross_attention else None)


class EncoderDecoder(nn.Module):
    """The original sequence-to-sequence Transformer over embedded inputs.

    Args:
        encoder: config of the encoder stack.
        decoder: config of the decoder stack (default: the encoder's). Widths must match.

    Example:
        >>> m = EncoderDecoder(TransformerConfig(d_model=16, n_heads=4, d_ff=32))
        >>> m(torch.randn(2, 7, 16), torch.randn(2, 5, 16)).output.shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self, encoder: TransformerConfig, decoder: TransformerConfig | None = None
    ) -> None:
        super().__init__()
        decoder = encoder if decoder is None else decoder
        if decoder.d_model != encoder.d_model:
            raise ValueError(
                f"encoder d_model={encoder.d_model} and decoder d_model={decoder.d_model} differ"
            )
        self.encoder = Encoder(encoder)
        self.decoder = Decoder(decoder, cross_attention=True)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        *,
        src_key_mask: Tensor | None = None,
        tgt_key_mask: Tensor | None = None,
        need_weights: bool = False,
    ) -> StackOutput:
        """``src (B, S, D)``, ``tgt (B, T, D)`` -> decoder output ``(B, T, D)``."""
        memory = self.encoder(src, key_mask=src_key_mask).output
        return self.decoder(
            tgt,
            memory,
            key_mask=tgt_key_mask,
            memory_key_mask=src_key_mask,
            need_weights=need_weights,
        )
