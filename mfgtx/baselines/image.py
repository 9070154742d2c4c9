"""Baselines for image classification: the majority class and HOG features + logistic regression.

Shape legend: ``N`` images, ``S`` side of the square grey image, ``K`` classes.

A defect ViT is compared with these on exactly its own split. The learned one reads
histograms of oriented gradients (Dalal and Triggs 2005), written here in numpy (no
scikit-image): unsigned gradient orientation in ``bins`` bins per ``cell x cell`` cell,
linearly interpolated between the two nearest bins, L2-Hys normalised over 2 x 2-cell blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["HOG_CHUNK", "HogLogistic", "MajorityImageClass", "hog_features"]


#: Images turned into HOG features at a time: the gradients of a chunk are a few arrays of
#: its pixels in float64, so memory depends on this, not on how many images there are.
HOG_CHUNK = 256


def hog_features(images: np.ndarray, cell: int = 16, bins: int = 9) -> np.ndarray:
    """HOG features ``(N, (S/cell - 1)^2 * 4 * bins)`` of grey images ``(N, S, S)`` in [0, 1],
    :data:`HOG_CHUNK` images at a time.

    Example:
        >>> hog_features(np.zeros((2, 32, 32))).shape  # 2x2 cells -> one 2x2 block
        (2, 36)
    """
    if np.ndim(images) != 3 or np.shape(images)[1] != np.shape(images)[2]:
        raise ValueError(f"images must be (N, S, S) grey, found {np.shape(images)}")
    n, s, _ = np.shape(images)
    c = s // cell
    if c < 2:
        raise ValueError(f"images of {s} px hold fewer than 2 cells of {cell} px on a side")
    out = np.empty((n, (c - 1) ** 2 * 4 * bins))
    for a in range(0, n, HOG_CHUNK):
        out[a : a + HOG_CHUNK] = _hog(np.asarray(images[a : a + HOG_CHUNK], np.float64), cell, bins)
    return out


def _hog(x: np.ndarray, cell: int, bins: int) -> np.ndarray:
    """:func:`hog_features` of one chunk ``(n, S, S)`` float64."""
    n, s, _ = x.shape
    c = s // cell
    gx = np.zeros_like(x)
    gy = np.zeros_like(x)
    gx[:, :, 1:-1] = x[:, :, 2:] - x[:, :, :-2]
    gy[:, 1:-1, :] = x[:, 2:, :] - x[:, :-2, :]
    mag = np.hypot(gx, gy)
    pos = (np.rad2deg(np.arctan2(gy, gx)) % 180.0) / (180.0 / bins)  # fractional bin
    lo = np.floor(pos).astype(np.int64) % bins
    hi = (lo + 1) % bins
    w_hi = pos - np.floor(pos)
    e = c * cell  # pixels that fall in whole cells
    cell_id = ((np.arange(e)[:, None] // cell) * c + np.arange(e)[None, :] // cell).ravel()
    size = c * c * bins
    hist = np.zeros((n, size))
    for i in range(n):
        m = mag[i, :e, :e].ravel()
        w = w_hi[i, :e, :e].ravel()
        hist[i] = np.bincount(cell_id * bins + lo[i, :e, :e].ravel(), m * (1 - w), size)
        hist[i] += np.bincount(cell_id * bins + hi[i, :e, :e].ravel(), m * w, size)
    hist = hist.reshape(n, c, c, bins)
    blocks = np.concatenate(
        [hist[:, :-1, :-1], hist[:, 1:, :-1], hist[:, :-1, 1:], hist[:, 1:, 1:]], axis=-1
    )  # (N, c-1, c-1, 4*bins)
    blocks = blocks / np.sqrt((blocks**2).sum(-1, keepdims=True) + 1e-6)
    blocks = np.minimum(blocks, 0.2)
    blocks = blocks / np.sqrt((blocks**2).sum(-1, keepdims=True) + 1e-6)
    return blocks.reshape(n, -1)


def _grey(images: np.ndarray) -> np.ndarray:
    """``(N, S, S)`` grey from ``(N, S, S)`` or ``(N, C, S, S)`` images in [0, 1]."""
    x = np.asarray(images, dtype=np.float64)
    return x.mean(axis=1) if x.ndim == 4 else x


class MajorityImageClass:
    """Always the most frequent training class (probability 1)."""

    name = "MajorityClass"

    def fit(
        self, images: np.ndarray, labels: Sequence[int], num_classes: int
    ) -> MajorityImageClass:
        counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=num_classes)
        self.num_classes_, self.class_ = num_classes, int(counts.argmax())
        return self

    def predict_proba(self, images: np.ndarray) -> np.ndarray:
        p = np.zeros((len(images), self.num_classes_))
        p[:, self.class_] = 1.0
        return p


class HogLogistic:
    """HOG features (:func:`hog_features`, ``cell`` px cells) + standardisation + multinomial
    logistic regression with balanced class weights (rare defects count).

    Example:
        >>> rng = np.random.default_rng(0)
        >>> flat = rng.random((20, 32, 32)) * 0.1
        >>> stripes = flat.copy(); stripes[:, :, ::4] += 0.8
        >>> x = np.concatenate([flat, stripes]); y = [0] * 20 + [1] * 20
        >>> float((HogLogistic(cell=8).fit(x, y, 2).predict_proba(x).argmax(1) == y).mean())
        1.0
    """

    def __init__(self, cell: int = 16, bins: int = 9, C: float = 0.1) -> None:
        self.cell, self.bins, self.C = cell, bins, C

    @property
    def name(self) -> str:
        return "HOG + logistic regression"

    def features(self, images: np.ndarray) -> np.ndarray:
        """The HOG features this baseline reads, of ``(N, S, S)`` grey or ``(N, C, S, S)``
        images (a caller with many images turns them into features a batch at a time and
        fits on those: :meth:`fit_features`)."""
        if np.ndim(images) == 3:
            return hog_features(images, self.cell, self.bins)
        chunks = range(0, max(len(images), 1), HOG_CHUNK)  # one (empty) chunk of no images
        return np.concatenate(
            [hog_features(_grey(images[a : a + HOG_CHUNK]), self.cell, self.bins) for a in chunks]
        )

    def fit(self, images: np.ndarray, labels: Sequence[int], num_classes: int) -> HogLogistic:
        return self.fit_features(self.features(images), labels, num_classes)

    def fit_features(
        self, features: np.ndarray, labels: Sequence[int], num_classes: int
    ) -> HogLogistic:
        """:meth:`fit` on features already taken (:meth:`features`)."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        y = np.asarray(labels, dtype=np.int64)
        self.num_classes_ = num_classes
        self.model_ = make_pipeline(
            StandardScaler(),
            LogisticRegression(C=self.C, class_weight="balanced", max_iter=2000),
        ).fit(features, y)
        return self

    def predict_proba(self, images: np.ndarray) -> np.ndarray:
        p = self.model_.predict_proba(self.features(images))
        out = np.zeros((len(p), self.num_classes_))
        out[:, self.model_.classes_] = p  # classes absent from training keep probability 0
        return out
