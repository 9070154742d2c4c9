"""From tile scores to one decision per photo: the worst tile and where it is.

Shape legend: ``N`` tiles (of any number of photos), ``M`` photos.

A photo is as bad as its worst tile: its score is the highest P(defect) of its tiles, and
the tile that gave it says where to look. Every tile of a photo counts here, ambiguous ones
included (they are left out of training and of tile-level metrics only, see
:func:`~mfgtx.images.label_tiles`). Grade both levels with
:func:`mfgtx.metrics.detection_metrics`: tiles against the tile labels, photos against
:attr:`~mfgtx.images.TileLabels.image_is_defect`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ImageScores", "image_scores"]


@dataclass(frozen=True)
class ImageScores:
    """One row per photo (index = photo number).

    Attributes:
        score: ``(M,)`` highest tile P(defect) of each photo.
        tile: ``(M,)`` position, in the tile arrays given, of the tile that scored it (the
            first such tile on a tie).
        top, left: ``(M,)`` corner of that tile in the photo.
        n_tiles: ``(M,)`` tiles scored per photo.
    """

    score: np.ndarray
    tile: np.ndarray
    top: np.ndarray
    left: np.ndarray
    n_tiles: np.ndarray


def image_scores(
    tile_scores: object,
    image: object,
    *,
    top: object,
    left: object,
    n_images: int | None = None,
) -> ImageScores:
    """The score of every photo from the scores of its tiles.

    Args:
        tile_scores: ``(N,)`` P(defect) of each tile, in ``[0, 1]``.
        image: ``(N,)`` photo number ``0..M-1`` of each tile (as :attr:`TileBatch.image`).
        top, left: ``(N,)`` corner of each tile.
        n_images: ``M``; default ``max(image) + 1``. Every photo must have a tile, so that
            none goes unscored.

    Raises:
        ValueError: lengths differ, a score is not a probability, or a photo has no tile.

    Example (photo 0 has two tiles, photo 1 one):
        >>> s = image_scores([0.1, 0.8, 0.3], [0, 0, 1], top=[0, 0, 0], left=[0, 64, 0])
        >>> s.score.tolist(), s.tile.tolist(), s.left.tolist()
        ([0.8, 0.3], [1, 2], [64, 0])
    """
    p = np.asarray(tile_scores, dtype=np.float64)
    img = np.asarray(image)
    t, left_ = np.asarray(top), np.asarray(left)
    if p.ndim != 1 or not (img.shape == t.shape == left_.shape == p.shape):
        raise ValueError(
            f"image_scores: tile_scores {p.shape}, image {img.shape}, top {t.shape} and left "
            f"{left_.shape} must all be (N,) with one entry per tile"
        )
    if p.size and (not np.isfinite(p).all() or p.min() < 0 or p.max() > 1):
        i = int(np.flatnonzero(~np.isfinite(p) | (p < 0) | (p > 1))[0])
        raise ValueError(f"image_scores: tile {i} has P(defect) {p[i]}, not in [0, 1]")
    if p.size and (not np.issubdtype(img.dtype, np.integer) or img.min() < 0):
        raise ValueError(f"image_scores: image must hold photo numbers >= 0, found {img.dtype}")
    m = (int(img.max()) + 1 if img.size else 0) if n_images is None else int(n_images)
    if img.size and img.max() >= m:
        raise ValueError(f"image_scores: photo number {int(img.max())} >= n_images={m}")
    n_tiles = np.bincount(img.astype(np.int64), minlength=m) if img.size else np.zeros(m, int)
    if (n_tiles == 0).any():
        missing = np.flatnonzero(n_tiles == 0)
        raise ValueError(
            f"image_scores: {missing.size} photo(s) have no scored tile, first "
            f"{missing[:10].tolist()}; every photo must be scored"
        )
    # sort by photo, then score (highest first), then tile order: the first row of each photo
    order = np.lexsort((np.arange(p.size), -p, img))
    first = order[np.r_[0, np.flatnonzero(np.diff(img[order])) + 1]] if p.size else order
    return ImageScores(
        score=p[first],
        tile=first.astype(np.int64),
        top=t[first].astype(np.int64),
        left=left_[first].astype(np.int64),
        n_tiles=n_tiles.astype(np.int64),
    )
