"""Attention maps and the deletion test for :class:`~mfgtx.models.SensorEncoder`.

Shape legend: ``B`` batch, ``T`` time steps, ``C`` sensors, ``M`` input tokens.

Tokens are removed the way the model already understands: their values are marked missing
(observed = False), so nothing out of distribution such as a zero or a mean is invented.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mfgtx.explain._tokens import observed_of, unobserve_spans
from mfgtx.explain.deletion import DeletionResult, run_deletion
from mfgtx.explain.maps import AttentionMaps, summary_query
from mfgtx.models import SensorEncoder

__all__ = ["deletion", "maps"]


def _spans(model: SensorEncoder, length: int) -> Tensor | None:
    c = model.config
    if c.tokens == "sensor":
        return None
    start = (length - c.patch_len) % c.patch_stride  # patches are aligned to the end
    n = c.n_patches(length)
    starts = start + c.patch_stride * torch.arange(n)
    return torch.stack([starts, starts + c.patch_len], dim=1)  # (M, 2)


def _axis(model: SensorEncoder) -> str:
    c = model.config
    if c.tokens == "sensor":
        return "sensor"
    return "time step" if c.patch_len == 1 else "patch"


def maps(model: SensorEncoder, x: Tensor, mask: Tensor | None = None) -> AttentionMaps:
    c = model.config
    pred, weights, key_mask = model.forward_with_attention(x, mask)
    if c.channel_independent:  # per-sensor maps, averaged over the sensors
        B, C = x.shape[0], c.n_channels
        weights = tuple(w.reshape(B, C, *w.shape[1:]).mean(1) for w in weights)
        key_mask = key_mask.reshape(B, C, -1).any(1)
    first = 1 if c.pooling == "cls" else 0
    query, rollout, full = summary_query(weights, key_mask, first=first, how=c.pooling)
    return AttentionMaps(
        model=type(model).__name__,
        axis=_axis(model),
        layers=weights,
        query=query,
        rollout=rollout,
        rollout_matrix=full,
        key_mask=key_mask[:, first:],
        prediction=pred,
        spans=_spans(model, x.shape[1]),
    )


def deletion(
    model: SensorEncoder,
    x: Tensor,
    importance: Tensor,
    valid: Tensor,
    *,
    mask: Tensor | None = None,
    target: int | None = None,
    fraction: float = 0.1,
    n_random: int = 10,
    seed: int = 0,
) -> DeletionResult:
    c = model.config
    observed = observed_of(x, mask)
    spans = _spans(model, x.shape[1])
    full = model(x, observed)
    if c.task == "classification":
        cls = full.argmax(-1) if target is None else torch.full_like(full[:, 0], target).long()
        name = "predicted class probability" if target is None else f"probability of class {target}"

        def pick(out: Tensor) -> Tensor:
            return out.softmax(-1).gather(1, cls[:, None])[:, 0]
    else:
        k = 0 if target is None else target
        name = "prediction" if c.n_outputs == 1 else f"prediction {k}"

        def pick(out: Tensor) -> Tensor:
            return out[:, k]

    def score(keep: Tensor) -> Tensor:
        if spans is None:  # sensor tokens: token m is sensor m, for the whole window
            return pick(model(x, observed & keep[:, None, :]))
        return pick(model(x, unobserve_spans(observed, keep, spans)))

    unit = {"sensor": "sensors", "time step": "time steps", "patch": "patches"}
    return run_deletion(
        score,
        importance,
        valid,
        fraction=fraction,
        n_random=n_random,
        seed=seed,
        unit=unit[_axis(model)],
        score_name=name,
    )
