"""Configuration of :class:`~mfgtx.models.CausalForecaster`."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Literal, Protocol

from mfgtx.models._settings import StackSettings, stack_config
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
        for name in ("n_channels", "context_length"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        for name in ("n_past_covariates", "n_future_covariates"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, found {v!r}")
        object.__setattr__(self, "quantiles", tuple(float(q) for q in self.quantiles))
        ForecasterConfig.check(self, linear_skip=self.linear_skip)
        if self.patch_len > self.context_length:
            raise ValueError(
                f"patch_len={self.patch_len} exceeds context_length={self.context_length}"
            )
        if self.n_future_covariates and self.horizon < self.patch_stride:
            raise ValueError(
                f"known-future covariates are read {self.patch_stride} steps (stride) ahead of "
                f"each patch: horizon={self.horizon} must be at least that"
            )

    @staticmethod
    def check(settings: ForecasterSettings, *, linear_skip: bool) -> None:
        """Refuse settings the forecaster cannot take whatever the data: each field's range
        and the rules between fields that no data decides (the series, context length and
        covariates are checked by the config itself).

        The config calls it, and so does a forecast job's ``forecast`` section
        (:class:`mfgtx.kinds.ForecastSection`, same names; ``linear_skip`` is given apart,
        as whether the model has a skip) when the job file is read: one copy of each rule,
        refused before any data is read.

        Raises:
            ValueError: naming the field, its value and what is expected.

        Example:
            >>> ForecasterConfig(n_channels=2, head="autoregressive", linear_skip=True)
            Traceback (most recent call last):
            ...
            ValueError: linear_skip needs head='direct' (it adds to the direct forecast)
        """
        s = settings
        for name in ("horizon", "patch_len"):
            v = getattr(s, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        if s.stride is not None and (
            not isinstance(s.stride, int) or isinstance(s.stride, bool) or s.stride < 1
        ):
            raise ValueError(f"stride must be a positive integer or None, found {s.stride!r}")
        stride = s.stride or s.patch_len
        if stride > s.patch_len:
            raise ValueError(
                f"stride={s.stride} exceeds patch_len={s.patch_len}: steps between patches "
                "would never be read"
            )
        if s.head not in ("direct", "autoregressive"):
            raise ValueError(f"head must be 'direct' or 'autoregressive', found {s.head!r}")
        if s.head == "autoregressive" and s.horizon % stride:
            raise ValueError(
                f"head='autoregressive' generates {stride} steps (stride) at a time: "
                f"horizon={s.horizon} must be a multiple of it"
            )
        if linear_skip and s.head != "direct":
            raise ValueError("linear_skip needs head='direct' (it adds to the direct forecast)")
        q = tuple(float(v) for v in s.quantiles)
        if not all(0 < v < 1 for v in q) or any(b <= a for a, b in itertools.pairwise(q)):
            raise ValueError(f"quantiles must be ascending values in (0, 1), found {q}")
        if not 0.0 <= s.head_dropout < 1.0:
            raise ValueError(f"head_dropout must be in [0, 1), found {s.head_dropout!r}")
        if s.positional not in ("sinusoidal", "learned", "rotary"):
            raise ValueError(
                f"positional must be 'sinusoidal', 'learned' or 'rotary', found {s.positional!r}"
            )
        _stack(s)  # the Transformer's own rules: d_model / n_heads / d_ff / dropout ...

    @property
    def patch_stride(self) -> int:
        return self.stride or self.patch_len

    @property
    def n_patches(self) -> int:
        """Tokens of the context (patches aligned to its end)."""
        return (self.context_length - self.patch_len) // self.patch_stride + 1

    @property
    def transformer(self) -> TransformerConfig:
        tokens = self.n_patches + math.ceil(self.horizon / self.patch_stride) + 1
        return _stack(self, max_len=tokens)


class ForecasterSettings(StackSettings, Protocol):
    """The settings of a :class:`ForecasterConfig` that no data decides, but
    ``linear_skip``: the config's own, or those of a job section with the same names
    (:meth:`ForecasterConfig.check`)."""

    @property
    def horizon(self) -> int: ...
    @property
    def patch_len(self) -> int: ...
    @property
    def stride(self) -> int | None: ...
    @property
    def head(self) -> str: ...
    @property
    def quantiles(self) -> tuple[float, ...]: ...
    @property
    def head_dropout(self) -> float: ...
    @property
    def positional(self) -> Literal["sinusoidal", "learned", "rotary"]: ...
    @property
    def norm_first(self) -> bool: ...


def _stack(s: ForecasterSettings, max_len: int = 2048) -> TransformerConfig:
    """The decoder stack's config of ``s`` (``max_len``: tokens, which the data decides)."""
    return stack_config(s, norm_first=s.norm_first, positional=s.positional, max_len=max_len)
