"""Configuration of :class:`~mfgtx.models.CausalForecaster`."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal

from mfgtx.nn import TransformerConfig

__all__ = ["ForecasterConfig"]


@dataclass(frozen=True)
class ForecasterConfig:
    """Configuration of a :class:`~mfgtx.models.CausalForecaster`.

    Args:
        n_channels: series to forecast ``C`` (their past is the model's main input).
        context_length: past steps ``L`` the model reads (exactly this many).
        horizon: steps ``H`` to forecast.
        patch_len: steps per token ``P``.
        stride: steps between patch starts ``s`` (default ``patch_len``). Each position
            predicts the ``s`` steps after its patch, so a generation step adds ``s`` steps.
        d_model, n_heads, n_layers, d_ff, dropout: the decoder-only Transformer.
        head: ``"direct"``: a flatten head emits the whole horizon at once.
            ``"autoregressive"``: every position predicts its next ``s`` steps (teacher
            forcing in training) and forecasts are generated patch by patch with a KV cache.
        channel_independent: each series is its own sequence with shared weights
            (PatchTST-style); ``False`` embeds all series of a patch in one token.
        quantiles: levels in (0, 1), ascending. Direct head: pinball-loss quantile outputs
            that cannot cross. Autoregressive head: a Gaussian scale per step is learned
            too, and the quantiles come from sampled trajectories.
        n_past_covariates: observed-only covariates (other sensors), known up to the end of
            the context and never after it.
        n_future_covariates: known-future inputs (planned set-points, shift schedule) given
            for the context and the horizon.
        revin: instance normalisation from the context (undone on the output).
        positional: ``"sinusoidal"``, ``"learned"`` or ``"rotary"``.
        norm_first: Pre-LN (default) or Post-LN blocks.
        head_dropout: dropout before the direct head.
        linear_skip: direct head only: add a linear map of each series' normalised context
            to the forecast (NLinear-style, shared across series when channel-independent;
            starts at zero), so the Transformer learns what that linear map misses.

    The defaults are the ``forecast`` section's of a job file
    (:class:`mfgtx.kinds.ForecastSection` takes them from here), sized for plant data: 24
    steps ahead, 8-step patches, ``d_model`` 32, 4 heads, 2 layers, ``d_ff`` 64, dropout 0.1
    and the 10 / 50 / 90 % quantiles. The PatchTST comparison size of the example below
    names its values.

    Example:
        >>> cfg = ForecasterConfig(n_channels=7, context_length=512, horizon=96, patch_len=16,
        ...                        stride=8, d_model=128, n_heads=16, n_layers=3, d_ff=256,
        ...                        dropout=0.2, quantiles=())
        >>> cfg.n_patches
        63
    """

    n_channels: int
    context_length: int = 512
    horizon: int = 24
    patch_len: int = 8
    stride: int | None = None
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    dropout: float = 0.1
    head: Literal["direct", "autoregressive"] = "direct"
    channel_independent: bool = True
    quantiles: tuple[float, ...] = (0.1, 0.5, 0.9)
    n_past_covariates: int = 0
    n_future_covariates: int = 0
    revin: bool = True
    positional: Literal["sinusoidal", "learned", "rotary"] = "sinusoidal"
    norm_first: bool = True
    head_dropout: float = 0.0
    linear_skip: bool = False

    def __post_init__(self) -> None:
        for name in ("n_channels", "context_length", "horizon", "patch_len"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        for name in ("n_past_covariates", "n_future_covariates"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, found {v!r}")
        if self.stride is not None and (
            not isinstance(self.stride, int) or isinstance(self.stride, bool) or self.stride < 1
        ):
            raise ValueError(f"stride must be a positive integer or None, found {self.stride!r}")
        if self.patch_len > self.context_length:
            raise ValueError(
                f"patch_len={self.patch_len} exceeds context_length={self.context_length}"
            )
        if self.patch_stride > self.patch_len:
            raise ValueError(
                f"stride={self.stride} exceeds patch_len={self.patch_len}: steps between patches "
                "would never be read"
            )
        if self.head not in ("direct", "autoregressive"):
            raise ValueError(f"head must be 'direct' or 'autoregressive', found {self.head!r}")
        if self.head == "autoregressive" and self.horizon % self.patch_stride:
            raise ValueError(
                f"head='autoregressive' generates {self.patch_stride} steps (stride) at a time: "
                f"horizon={self.horizon} must be a multiple of it"
            )
        if self.linear_skip and self.head != "direct":
            raise ValueError("linear_skip needs head='direct' (it adds to the direct forecast)")
        if self.n_future_covariates and self.horizon < self.patch_stride:
            raise ValueError(
                f"known-future covariates are read {self.patch_stride} steps (stride) ahead of "
                f"each patch: horizon={self.horizon} must be at least that"
            )
        object.__setattr__(self, "quantiles", tuple(float(q) for q in self.quantiles))
        q = self.quantiles
        if not all(0 < v < 1 for v in q) or any(b <= a for a, b in itertools.pairwise(q)):
            raise ValueError(f"quantiles must be ascending values in (0, 1), found {q}")
        if not 0.0 <= self.head_dropout < 1.0:
            raise ValueError(f"head_dropout must be in [0, 1), found {self.head_dropout!r}")
        if self.positional not in ("sinusoidal", "learned", "rotary"):
            raise ValueError(
                f"positional must be 'sinusoidal', 'learned' or 'rotary', found {self.positional!r}"
            )
        self.transformer  # validates d_model / n_heads / d_ff / dropout  # noqa: B018

    @property
    def patch_stride(self) -> int:
        return self.stride or self.patch_len

    @property
    def n_patches(self) -> int:
        """Tokens of the context (patches aligned to its end)."""
        return (self.context_length - self.patch_len) // self.patch_stride + 1

    @property
    def transformer(self) -> TransformerConfig:
        return TransformerConfig(
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            norm_first=self.norm_first,
            positional=self.positional,
            max_len=self.n_patches + math.ceil(self.horizon / self.patch_stride) + 1,
        )
