"""Patch-by-patch generation for the forecaster's autoregressive head, with a KV cache.

Shape legend: ``B'`` sequences (``B * C`` channel-independent, else ``B``), ``B'' = B' * S``
with ``S`` sampled trajectories, ``T`` steps so far, ``L`` context length, ``P`` patch
length, ``s`` stride (steps generated per patch), ``k`` channels per token, ``Cp``/``F``
past-observed/known-future covariates, ``D`` ``d_model``.

Each step runs the decoder on the newest position only (the cache keeps the keys and values
of the earlier ones), reads the next ``s`` steps from the head (their mean, or a Gaussian
draw around it) and appends them as observed values. All of it in the model's normalised
units; the forecaster maps the result back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch
from torch import Tensor

from mfgtx.models.forecaster_heads import NextPatchHead
from mfgtx.nn import Decoder, KVCache

__all__ = ["Embed", "generate_patches"]

#: ``(values, observed, past_cov, future_cov, context) -> tokens (B'', N, D)``: the
#: forecaster's patch embedding of a sequence aligned to its end.
Embed = Callable[[Tensor, Tensor, Tensor | None, Tensor | None, Any], Tensor]


def _repeat(t: Tensor | None, n: int) -> Tensor | None:
    return None if t is None else t.repeat_interleave(n, 0)


@torch.no_grad()
def generate_patches(
    decoder: Decoder,
    head: NextPatchHead,
    embed: Embed,
    values: Tensor,
    observed: Tensor,
    past_cov: Tensor | None,
    future_cov: Tensor | None,
    context: NamedTuple | None,
    *,
    steps: int,
    patch_len: int,
    num_samples: int = 0,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Generate ``steps`` patches after the context ``values (B', L, k)``.

    Args:
        decoder: the causal stack; head: the next-patch head (with a scale for sampling).
        embed: the patch embedding (see :data:`Embed`).
        values, observed: the normalised context and its observed mask ``(B', L, k)``.
        past_cov: ``(B', L, Cp)`` or ``None``; future_cov: ``(B', L + steps * s, F)`` or
            ``None``.
        context: the causally normalised context tokens (a tuple of tensors, each repeated
            per sample) or ``None``.
        steps: patches to generate; patch_len: ``P``.
        num_samples: 0 greedy (the mean of every step), ``S > 0`` sampled trajectories.
        use_cache: one new position per step; ``False`` recomputes the whole sequence.
        generator: random numbers for sampling.

    Returns:
        ``(B'', steps * s, k)`` generated steps, normalised; with samples, row
        ``b' * S + sample``.
    """
    P, s, start = patch_len, head.stride, values.shape[1]
    pc, fc = past_cov, future_cov
    if num_samples:
        values, observed = (t.repeat_interleave(num_samples, 0) for t in (values, observed))
        pc, fc = _repeat(pc, num_samples), _repeat(fc, num_samples)
        if context is not None:
            context = type(context)(*(t.repeat_interleave(num_samples, 0) for t in context))
    cache: KVCache | None = decoder.new_cache() if use_cache else None
    emb = embed(values, observed, pc, fc, context)  # (B'', N, D)
    for i in range(steps):
        h = decoder(emb, cache=cache).output[:, -1:]  # (B'', 1, D)
        mean, scale = head(h)  # (B'', 1, s, k)
        step = mean[:, 0]
        if num_samples:
            assert scale is not None  # sampling is refused for a head without a scale
            noise = torch.randn(step.shape, generator=generator, dtype=step.dtype)
            step = step + scale[:, 0] * noise.to(step.device)
        values = torch.cat([values, step], dim=1)
        observed = torch.cat([observed, torch.ones_like(step)], dim=1)
        if i == steps - 1:
            break
        if use_cache:  # only the newest patch: [T - P, T), its covariates [T - P, T + s)
            T = values.shape[1]
            fut = None if fc is None else fc[:, T - P : T + s]
            cov = None if pc is None else pc[:, T - P :]
            emb = embed(values[:, -P:], observed[:, -P:], cov, fut, None)
        else:
            emb = embed(values, observed, pc, fc, context)
    return values[:, start:]  # (B'', steps*s, k)
