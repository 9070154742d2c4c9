"""From the forecaster's inputs to its tokens: checks, RevIN (causal for the context tokens
of the autoregressive head), the channel layout and the patch embedding.

Shape legend: ``B`` batch, ``L`` context length, ``T`` steps of a sequence, ``C`` forecast
channels, ``P`` patch length, ``s`` stride, ``N`` patches (tokens), ``D`` ``d_model``,
``Cp``/``F`` past-observed/known-future covariates. ``B' = B * C`` (channel-independent) or
``B``, ``k = 1`` or ``C`` channels per token.

See :mod:`mfgtx.models.forecaster` for the leakage rules these tokens keep: past-observed
covariates read as unavailable after the context, the normalisation never sees the horizon,
and each context token is normalised with the context up to the end of its patch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models.forecaster_config import ForecasterConfig
from mfgtx.models.forecaster_inputs import checked_covariates, observed_mask
from mfgtx.models.revin import InstanceStats, instance_stats, normalize, prefix_stats

__all__ = [
    "Context",
    "Layout",
    "PatchEmbedding",
    "Series",
    "normalised",
    "position_stats",
    "prepare",
]


class Context(NamedTuple):
    """Causal RevIN of the context's ``N`` tokens (autoregressive head): token ``j`` in the
    units of the context up to the end of its patch."""

    patches: Tensor  # (B', N, P, k) patch values in each token's units, 0 where missing
    mean: Tensor  # (B', N, 1, k) the statistics that undo them
    std: Tensor  # (B', N, 1, k)


class Series(NamedTuple):
    """Normalised inputs as token sequences, each ``(B', T, ·)``."""

    values: Tensor  # (B', L, k) normalised, 0 where missing
    observed: Tensor  # (B', L, k) float 0/1
    past_cov: Tensor | None  # (B', L, Cp)
    future_cov: Tensor | None  # (B', L + future, F)
    stats: InstanceStats  # (B, 1, C)
    context: Context | None  # causal RevIN of the context tokens, autoregressive head only


@dataclass(frozen=True)
class Layout:
    """How ``(B, T, C)`` series become sequences: one per channel (channel-independent,
    ``B' = B * C``, ``k = 1``) or one per sample (``B' = B``, ``k = C``).

    Example:
        >>> lay = Layout(n_channels=3, channel_independent=True)
        >>> x = torch.randn(2, 5, 3)
        >>> lay.to_series(x).shape, torch.equal(lay.from_series(lay.to_series(x), 2), x)
        (torch.Size([6, 5, 1]), True)
    """

    n_channels: int
    channel_independent: bool

    @classmethod
    def of(cls, config: ForecasterConfig) -> Layout:
        return cls(config.n_channels, config.channel_independent)

    def to_series(self, x: Tensor) -> Tensor:
        """``(B, T, C)`` -> ``(B', T, k)``."""
        B, T, C = x.shape
        if not self.channel_independent:
            return x
        return x.permute(0, 2, 1).reshape(B * C, T, 1)  # (B*C, T, 1)

    def from_series(self, y: Tensor, B: int) -> Tensor:
        """``(B', T, k, ...)`` -> ``(B, T, C, ...)``."""
        if not self.channel_independent:
            return y
        y = y.reshape(B, self.n_channels, *y.shape[1:])  # (B, C, T, 1, ...)
        return y.squeeze(3).movedim(1, 2)  # (B, T, C, ...)

    def tokens_to_series(self, x: Tensor) -> Tensor:
        """``(B, N, P, C)`` -> ``(B', N, P, k)``."""
        if not self.channel_independent:
            return x
        B, N, P, C = x.shape
        return x.permute(0, 3, 1, 2).reshape(B * C, N, P, 1)  # (B*C, N, P, 1)


def normalised(
    config: ForecasterConfig, past: Tensor, observed: Tensor | None
) -> tuple[Tensor, Tensor, InstanceStats]:
    """``past (B, L, C)`` in the model's units (RevIN or as given; 0 where missing), the
    observed mask and the statistics that undo it."""
    L, C = config.context_length, config.n_channels
    if past.dim() != 3 or tuple(past.shape[1:]) != (L, C):
        raise ValueError(
            f"past must have shape (B, context_length={L}, n_channels={C}), found "
            f"{tuple(past.shape)}"
        )
    B = past.shape[0]
    seen = observed_mask(past, observed)
    stats = (
        instance_stats(past, seen)
        if config.revin
        else InstanceStats(
            torch.zeros(B, 1, C, dtype=past.dtype, device=past.device),
            torch.ones(B, 1, C, dtype=past.dtype, device=past.device),
        )
    )
    return torch.where(seen, normalize(past, stats), past.new_zeros(())), seen, stats


def _causal_context(
    config: ForecasterConfig, past: Tensor, seen: Tensor, stats: InstanceStats
) -> Context | None:
    """Causal RevIN of the context tokens (autoregressive head with ``revin``), else None.

    Token ``j`` covers steps ``[e_j - P, e_j)``; its values are normalised with the
    statistics of the observed context steps ``[0, e_j)``. The last token ends at ``L``
    and takes the whole context's ``stats``, exactly as generation does.
    """
    c = config
    if c.head != "autoregressive" or not c.revin:
        return None
    L, P, s, N = c.context_length, c.patch_len, c.patch_stride, c.n_patches
    start = (L - P) % s
    mean, std = stats  # (B, 1, C): the last token sees the whole context
    if N > 1:  # the earlier tokens: statistics of the context up to their patch's end
        ends = start + P + s * torch.arange(N - 1, device=past.device)  # (N-1,)
        early = prefix_stats(past, seen, ends)  # (B, N-1, C) each
        mean, std = torch.cat([early.mean, mean], dim=1), torch.cat([early.std, std], dim=1)
    raw = torch.where(seen, past, past.new_zeros(()))[:, start:]  # (B, L', C)
    patches = raw.unfold(1, P, s).transpose(-1, -2)  # (B, N, P, C)
    ok = seen[:, start:].unfold(1, P, s).transpose(-1, -2)  # (B, N, P, C)
    patches = torch.where(ok, (patches - mean[:, :, None]) / std[:, :, None], 0.0)
    layout = Layout.of(c)
    return Context(
        layout.tokens_to_series(patches),
        layout.tokens_to_series(mean[:, :, None]),  # (B', N, 1, k)
        layout.tokens_to_series(std[:, :, None]),
    )


def prepare(
    config: ForecasterConfig,
    past: Tensor,
    observed: Tensor | None,
    past_covariates: Tensor | None,
    future_covariates: Tensor | None,
    future: int,
) -> Series:
    """Check and normalise the inputs; ``future`` steps of known-future inputs needed."""
    c = config
    L = c.context_length
    values, seen, stats = normalised(c, past, observed)
    B = past.shape[0]
    pc = checked_covariates("past_covariates", past_covariates, c.n_past_covariates, B, L)
    fc = checked_covariates(
        "future_covariates", future_covariates, c.n_future_covariates, B, L + future
    )
    if c.channel_independent:  # every channel's sequence gets the sample's covariates
        pc, fc = (None if t is None else t.repeat_interleave(c.n_channels, 0) for t in (pc, fc))
    context = _causal_context(c, past, seen, stats)
    layout = Layout.of(c)
    observed = layout.to_series(seen.to(past.dtype))
    return Series(layout.to_series(values), observed, pc, fc, stats, context)


def position_stats(config: ForecasterConfig, x: Series, n: int) -> tuple[Tensor, Tensor]:
    """Centre and spread ``(B', n, 1, k)`` that map position ``j``'s outputs back: the
    context token's own (causal RevIN), the whole context's for every later position."""
    layout = Layout.of(config)
    mean = layout.to_series(x.stats.mean)[:, :, None]  # (B', 1, 1, k)
    std = layout.to_series(x.stats.std)[:, :, None]
    mean, std = mean.expand(-1, n, -1, -1), std.expand(-1, n, -1, -1)
    if x.context is None:
        return mean, std
    m = min(n, x.context.mean.shape[1])
    return (
        torch.cat([x.context.mean[:, :m], mean[:, m:]], dim=1),
        torch.cat([x.context.std[:, :m], std[:, m:]], dim=1),
    )


class PatchEmbedding(nn.Linear):
    """Tokens ``(B', N, D)`` of the patches of a ``(B', T, k)`` sequence, aligned to its end.

    Each token reads its patch's values, which of them were observed, the past-observed
    covariates with a flag saying they are available, and the known-future covariates of the
    patch and of the ``s`` steps it predicts. A :class:`torch.nn.Linear`, so the
    forecaster's state-dict keys stay ``embed.weight`` and ``embed.bias``.

    Args:
        config: the forecaster's :class:`~mfgtx.models.ForecasterConfig`.

    Example:
        >>> c = ForecasterConfig(n_channels=2, context_length=16, horizon=4, patch_len=4,
        ...                      d_model=8, n_heads=2)
        >>> PatchEmbedding(c)(torch.zeros(6, 16, 1), torch.ones(6, 16, 1), None, None).shape
        torch.Size([6, 4, 8])
    """

    def __init__(self, config: ForecasterConfig) -> None:
        c = config
        k = 1 if c.channel_independent else c.n_channels
        P, s = c.patch_len, c.patch_stride
        per_step = 2 * k + (c.n_past_covariates + 1 if c.n_past_covariates else 0)
        super().__init__(P * per_step + (P + s) * c.n_future_covariates, c.d_model)
        self.patch_len, self.stride = P, s

    # a Linear that reads the whole token recipe, not one tensor
    def forward(  # type: ignore[override]  # takes the token recipe, not one tensor
        self,
        values: Tensor,
        observed: Tensor,
        past_cov: Tensor | None,
        future_cov: Tensor | None,
        context: Context | None = None,
    ) -> Tensor:
        """``past_cov (B', T_c, Cp)`` covers the first ``T_c <= T`` steps (the context); later
        steps read as unavailable. ``future_cov`` covers at least ``T + s`` steps. With a
        ``context`` (the sequence starts with the whole context), the context's tokens take
        its causally normalised patch values instead of ``values``."""
        P, s = self.patch_len, self.stride
        Bp, T, k = values.shape
        start = (T - P) % s
        parts = [values, observed]
        if past_cov is not None:
            known = past_cov.shape[1]
            avail = torch.zeros(Bp, T, 1, dtype=values.dtype, device=values.device)
            avail[:, :known] = 1.0
            cov = F.pad(past_cov[:, :T], (0, 0, 0, max(T - known, 0)))  # (B', T, Cp)
            parts += [cov, avail]
        steps = torch.cat(parts, dim=-1)[:, start:]  # (B', T', f)
        patches = steps.unfold(1, P, s).transpose(-1, -2)  # (B', N, P, f)
        if context is not None:
            n = context.patches.shape[1]
            vals = torch.cat([context.patches, patches[:, n:, :, :k]], dim=1)  # (B', N, P, k)
            patches = torch.cat([vals, patches[..., k:]], dim=-1)
        feats = [patches.flatten(2)]  # (B', N, P*f)
        if future_cov is not None:
            fut = future_cov[:, start : T + s].unfold(1, P + s, s)  # (B', N, F, P+s)
            feats.append(fut.transpose(-1, -2).flatten(2))  # (B', N, (P+s)*F)
        return super().forward(torch.cat(feats, dim=-1))  # (B', N, D)
