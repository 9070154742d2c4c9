"""Pieces the per-model modules of mfgtx.explain share: observed values, removed tokens."""

from __future__ import annotations

import torch
from torch import Tensor


def observed_of(x: Tensor, mask: Tensor | None) -> Tensor:
    """``(B, T, C)`` bool: observed values (``mask`` if given) that are not NaN."""
    return ~torch.isnan(x) if mask is None else mask.bool() & ~torch.isnan(x)


def unobserve_spans(seen: Tensor, keep: Tensor, spans: Tensor) -> Tensor:
    """A copy of ``seen (B, T, C)`` with the steps of every token not kept marked missing.

    ``keep (B, M)`` says which tokens stay; ``spans (M, 2)`` holds each token's steps.
    """
    seen = seen.clone()
    for m, (start, stop) in enumerate(spans.tolist()):
        seen[~keep[:, m], start:stop, :] = False
    return seen
