"""Does the map fall on the known defect region? A data-set-level sanity figure.

Shape legend: ``B`` images, ``h, w`` map and mask height and width.

Where the ground-truth defect region is known (sample_data's synthetic defects come with
masks), two scores: the pointing game (does the map's maximum fall inside the region?) and
the AUROC of map values as a detector of region pixels (1 = the map ranks every region pixel
above every background pixel, 0.5 = chance). Report them over a data set, never as a verdict
on one image: a map can sit on the defect while the model decides from elsewhere, which is
what the deletion test checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from torch import Tensor

__all__ = ["OverlapScore", "overlap_score"]


@dataclass(frozen=True)
class OverlapScore:
    """Map-vs-region agreement over a set of images.

    Attributes:
        pointing_game: share of images whose map maximum lies in the region (when several
            pixels tie for the maximum, the share of them inside counts).
        auroc: mean over images of the AUROC of map values for region pixels.
        images: images scored (those with a region that is neither empty nor everything).
        skipped: images left out for that reason.
    """

    pointing_game: float
    auroc: float
    images: int
    skipped: int


def _auroc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Mann-Whitney AUROC with ties counted half."""
    order = scores.argsort(kind="mergesort")
    ranks = np.empty(len(scores), dtype=np.float64)
    sorted_scores = scores[order]
    # average ranks over ties
    _, first, counts = np.unique(sorted_scores, return_index=True, return_counts=True)
    avg = first + (counts - 1) / 2.0 + 1.0
    ranks[order] = np.repeat(avg, counts)
    n_pos = int(positive.sum())
    n_neg = len(scores) - n_pos
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def overlap_score(maps: Tensor | np.ndarray, masks: Tensor | np.ndarray) -> OverlapScore:
    """Pointing game and AUROC of attention maps against known defect regions.

    Args:
        maps: ``(B, h, w)`` maps (e.g. :meth:`AttentionMaps.upsampled` of the rollout).
        masks: ``(B, h, w)`` region masks, non-zero = defect, the same size as the maps.

    Example:
        >>> m = torch.zeros(1, 4, 4); m[0, 1, 1] = 1.0
        >>> overlap_score(m, m > 0)
        OverlapScore(pointing_game=1.0, auroc=1.0, images=1, skipped=0)
    """
    a = maps.detach().cpu().numpy() if isinstance(maps, Tensor) else np.asarray(maps)
    r = masks.detach().cpu().numpy() if isinstance(masks, Tensor) else np.asarray(masks)
    if a.ndim != 3 or a.shape != r.shape:
        raise ValueError(
            f"maps and masks must both be (B, h, w) of one shape, found {a.shape} and {r.shape}"
        )
    if not np.isfinite(a).all():
        raise ValueError("maps hold NaN or infinite values")
    hits, aurocs, skipped = [], [], 0
    for m, region in zip(a.astype(np.float64), r != 0, strict=True):
        if not region.any() or region.all():
            skipped += 1
            continue
        flat, pos = m.ravel(), region.ravel()
        hits.append(float(pos[flat == flat.max()].mean()))  # ties share the credit
        aurocs.append(_auroc(flat, pos))
    if not aurocs:
        raise ValueError(
            f"no image has a defect region that is neither empty nor whole ({skipped})"
        )
    return OverlapScore(float(np.mean(hits)), float(np.mean(aurocs)), len(aurocs), skipped)
