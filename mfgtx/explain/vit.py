"""Attention maps and the deletion test for :class:`~mfgtx.models.DefectViT`.

Shape legend: ``B`` images, ``C`` channels, ``H``/``W`` image size, ``P`` patch size,
``h``/``w`` patch grid, ``M = h*w`` patches.

The map is the CLS token's attention over the patches (mean pooling: the mean of the patch
rows), per layer and head, and the attention rollout over the patches, upsampled to the
image with :meth:`AttentionMaps.upsampled`. For the deletion test a patch is removed by
setting its pixels to the image's mean (per channel), so no stronger edge is invented.
"""

from __future__ import annotations

import torch
from torch import Tensor

from mfgtx.explain.deletion import DeletionResult, run_deletion
from mfgtx.explain.maps import AttentionMaps, summary_query
from mfgtx.models import DefectViT

__all__ = ["deletion", "maps"]


def maps(model: DefectViT, images: Tensor) -> AttentionMaps:
    c = model.config
    logits, weights = model.forward_with_attention(images)
    B, H, W = images.shape[0], images.shape[-2], images.shape[-1]
    h, w = H // c.patch_size, W // c.patch_size
    first = 1 if c.pooling == "cls" else 0
    key_mask = torch.ones(B, first + h * w, dtype=torch.bool, device=images.device)
    query, rollout, full = summary_query(weights, key_mask, first=first, how=c.pooling)
    if c.pooling == "cls":  # the CLS row's weight on patches; rollout renormalised over them
        rollout = rollout / rollout.sum(-1, keepdim=True).clamp(min=1e-12)
    return AttentionMaps(
        model=type(model).__name__,
        axis="image patch",
        layers=weights,
        query=query,
        rollout=rollout,
        rollout_matrix=full,
        key_mask=key_mask[:, first:],
        prediction=logits,
        grid=(h, w),
        image_size=(H, W),
    )


def deletion(
    model: DefectViT,
    images: Tensor,
    importance: Tensor,
    valid: Tensor,
    *,
    target: int | None = None,
    fraction: float = 0.1,
    n_random: int = 10,
    seed: int = 0,
) -> DeletionResult:
    c = model.config
    P = c.patch_size
    h, w = images.shape[-2] // P, images.shape[-1] // P
    fill = images.mean(dim=(-2, -1), keepdim=True).expand_as(images)  # (B, C, H, W)
    full = model(images)
    cls = full.argmax(-1) if target is None else torch.full_like(full[:, 0], target).long()
    name = "predicted class probability" if target is None else f"probability of class {target}"

    def score(keep: Tensor) -> Tensor:
        grid = keep.view(-1, 1, h, w).to(images.dtype)  # (B, 1, h, w)
        pixels = grid.repeat_interleave(P, -2).repeat_interleave(P, -1)  # (B, 1, H, W)
        out = model(images * pixels + fill * (1 - pixels))
        return out.softmax(-1).gather(1, cls[:, None])[:, 0]

    return run_deletion(
        score,
        importance,
        valid,
        fraction=fraction,
        n_random=n_random,
        seed=seed,
        unit="patches",
        score_name=name,
    )
