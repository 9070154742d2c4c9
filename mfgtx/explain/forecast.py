"""Attention maps and the deletion test for :class:`~mfgtx.models.CausalForecaster`.

Shape legend: ``B`` batch, ``L`` context steps, ``C`` channels, ``M`` context patches.

The map is the last context position's attention over the past patches (heads per layer;
channel-independent models: averaged over the channels). Patches are removed for the
deletion test by marking their steps unobserved, which the forecaster already understands;
the watched score is the mean point forecast over the horizon.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mfgtx.explain._tokens import observed_of, unobserve_spans
from mfgtx.explain.deletion import DeletionResult, run_deletion
from mfgtx.explain.maps import AttentionMaps, summary_query
from mfgtx.models import CausalForecaster

__all__ = ["deletion", "maps"]


def _spans(model: CausalForecaster) -> Tensor:
    c = model.config
    L, P, s = c.context_length, c.patch_len, c.patch_stride
    starts = (L - P) % s + s * torch.arange(c.n_patches)  # aligned to the context's end
    return torch.stack([starts, starts + P], dim=1)  # (M, 2)


def maps(model: CausalForecaster, past: Tensor, observed: Tensor | None = None) -> AttentionMaps:
    c = model.config
    pred, weights = model.forward_with_attention(past, observed)
    B = past.shape[0]
    if c.channel_independent:  # (B*C, H, M, M) -> averaged over the channels
        weights = tuple(w.reshape(B, c.n_channels, *w.shape[1:]).mean(1) for w in weights)
    key_mask = torch.ones(B, c.n_patches, dtype=torch.bool, device=past.device)
    query, rollout, full = summary_query(weights, key_mask, first=0, how="last")
    return AttentionMaps(
        model=type(model).__name__,
        axis="past patch",
        layers=weights,
        query=query,
        rollout=rollout,
        rollout_matrix=full,
        key_mask=key_mask,
        prediction=pred,
        spans=_spans(model),
    )


def deletion(
    model: CausalForecaster,
    past: Tensor,
    importance: Tensor,
    valid: Tensor,
    *,
    observed: Tensor | None = None,
    target: int | None = None,
    fraction: float = 0.1,
    n_random: int = 10,
    seed: int = 0,
) -> DeletionResult:
    seen0 = observed_of(past, observed)
    spans = _spans(model)
    channels = slice(None) if target is None else slice(target, target + 1)
    name = "mean forecast" if target is None else f"mean forecast of channel {target}"

    def score(keep: Tensor) -> Tensor:
        seen = unobserve_spans(seen0, keep, spans)
        # a sample whose whole context got removed cannot be forecast: keep one step
        empty = ~seen.flatten(1).any(1)
        seen[empty, -1, :] = seen0[empty, -1, :]
        forecast = model(torch.where(seen, past, torch.nan), seen)  # (B, H, C)
        return forecast[..., channels].mean((1, 2))

    return run_deletion(
        score,
        importance,
        valid,
        fraction=fraction,
        n_random=n_random,
        seed=seed,
        unit="past patches",
        score_name=name,
    )
