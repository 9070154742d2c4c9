"""Frozen, validated configuration for the Transformer stacks."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Positional", "TransformerConfig"]

Positional = Literal["sinusoidal", "learned", "rotary", "relative", "alibi", "none"]
_POSITIONAL = ("sinusoidal", "learned", "rotary", "relative", "alibi", "none")


@dataclass(frozen=True)
class TransformerConfig:
    """Configuration of an :class:`~mfgtx.nn.Encoder` or :class:`~mfgtx.nn.Decoder` stack.

    Args:
        d_model: model width.
        n_heads: attention heads; must divide ``d_model``.
        n_layers: number of blocks.
        d_ff: feed-forward hidden width.
        dropout: residual, feed-forward and embedding dropout.
        attn_dropout: dropout on attention weights. Keep 0 for speed: any attention dropout
            sends the CPU kernel off the fused FlashAttention path.
        activation: ``"relu"`` or ``"gelu"``.
        norm_first: Pre-LN (``True``, with a final norm) or Post-LN (``False``).
        positional: ``"sinusoidal"``, ``"learned"``, ``"rotary"``, ``"relative"`` (learned
            T5 bias: trains on the math kernel on CPU), ``"alibi"`` (fixed linear bias: keeps
            the CPU flash kernel) or ``"none"``.
        max_len: longest sequence for learned positions (and the precomputed sinusoid table).
        layer_norm_eps: LayerNorm epsilon.
        bias: biases in linear layers and LayerNorms.
        rotary_base: frequency base of rotary positions.
        relative_num_buckets: buckets of the relative position bias.
        relative_max_distance: offsets beyond this share a bucket.
        drop_path: stochastic depth of an :class:`~mfgtx.nn.Encoder` (Pre-LN): the last
            block's drop-path probability; block ``i`` of ``n`` gets ``drop_path * i / (n - 1)``
            (0 for the first). Encoder stacks only.

    Example:
        >>> TransformerConfig(d_model=64, n_heads=4, n_layers=2, d_ff=128).head_dim
        16
        >>> TransformerConfig(d_model=10, n_heads=3)
        Traceback (most recent call last):
        ...
        ValueError: d_model=10 is not divisible by n_heads=3
    """

    d_model: int = 128
    n_heads: int = 8
    n_layers: int = 2
    d_ff: int = 256
    dropout: float = 0.1
    attn_dropout: float = 0.0
    activation: Literal["relu", "gelu"] = "gelu"
    norm_first: bool = True
    positional: Positional = "sinusoidal"
    max_len: int = 2048
    layer_norm_eps: float = 1e-5
    bias: bool = True
    rotary_base: float = 10000.0
    relative_num_buckets: int = 32
    relative_max_distance: int = 128
    drop_path: float = 0.0

    def __post_init__(self) -> None:
        for name in ("d_model", "n_heads", "n_layers", "d_ff", "max_len"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, found {value!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        for name in ("dropout", "attn_dropout"):
            value = getattr(self, name)
            if not 0.0 <= value < 1.0:
                raise ValueError(f"{name} must be in [0, 1), found {value!r}")
        if not 0.0 <= self.drop_path < 1.0:
            raise ValueError(f"drop_path must be in [0, 1), found {self.drop_path!r}")
        if self.drop_path and not self.norm_first:
            raise ValueError(
                f"drop_path={self.drop_path!r} needs Pre-LN blocks (norm_first=True): a Post-LN "
                "block normalises after its residual add, so there is no update to drop"
            )
        if self.activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', found {self.activation!r}")
        if self.positional not in _POSITIONAL:
            raise ValueError(f"positional must be one of {_POSITIONAL}, found {self.positional!r}")
        if self.positional == "sinusoidal" and self.d_model % 2:
            raise ValueError(f"sinusoidal positions need an even d_model, found {self.d_model}")
        if self.positional == "rotary" and self.head_dim % 2:
            raise ValueError(
                f"rotary positions need an even head dim d_model / n_heads, found {self.head_dim}"
            )
        if self.layer_norm_eps <= 0:
            raise ValueError(f"layer_norm_eps must be positive, found {self.layer_norm_eps!r}")
        if self.relative_num_buckets < 4 or self.relative_max_distance <= 0:
            raise ValueError(
                "relative_num_buckets must be >= 4 and relative_max_distance positive, found "
                f"{self.relative_num_buckets}, {self.relative_max_distance}"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads

    @property
    def drop_rates(self) -> tuple[float, ...]:
        """Drop-path probability of each block: rising linearly from 0 to ``drop_path``.

        >>> TransformerConfig(n_layers=3, drop_path=0.2).drop_rates
        (0.0, 0.1, 0.2)
        """
        n = self.n_layers
        return tuple(self.drop_path * i / max(n - 1, 1) for i in range(n))
