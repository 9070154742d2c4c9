"""Train / validation / test splits of images that keep duplicates, lots and time apart.

Shape legend: ``N`` images.

* **With lots** (and timestamps): :class:`mfgtx.split.LotTimeSplit` on one "window" per image
  (``start = end = timestamp``), so whole lots go to one set and later lots are tested.
* **Without lots**: a stratified random split with a fixed seed (each class keeps about the
  same share in every set).

In both cases byte-identical files (same SHA-256) form one group that lands in one set: a
duplicate pair split across train and test would be graded on an image the model trained on.
With lots, a duplicate shared by two lots merges those lots into one group (a warning says
so: it usually means a file was copied into the wrong lot folder).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from mfgtx.images.records import ImageRecords
from mfgtx.split import LotTimeSplit, SplitSets

__all__ = ["DuplicateWarning", "ImageSplit", "duplicate_groups", "split_images"]


class DuplicateWarning(UserWarning):
    """Byte-identical images in different lots (their lots are kept together)."""


@dataclass(frozen=True)
class ImageSplit:
    """Image positions of each set (sorted ``int64``).

    Attributes:
        train, val, test: the three sets (``val`` empty when ``val_size=0``).
        purged: images left out by the lot-and-time rules (see
            :class:`mfgtx.split.LotTimeSplit`); always empty for stratified splits.
        method: ``"lot_time"`` or ``"stratified"``.
        groups: ``(N,)`` group id of each image (duplicates, and lots, share one).
        lot_sets: the :class:`mfgtx.split.SplitSets` behind a ``"lot_time"`` split.
    """

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    purged: np.ndarray
    method: Literal["lot_time", "stratified"]
    groups: np.ndarray
    lot_sets: SplitSets | None = None

    def __post_init__(self) -> None:
        # writable copies: torch warns when a tensor is indexed with a read-only array (the
        # arrays of SplitSets are read-only)
        for name in ("train", "val", "test", "purged", "groups"):
            object.__setattr__(self, name, np.array(getattr(self, name), dtype=np.int64))


def _union_find(keys: Sequence[Sequence[Any]]) -> np.ndarray:
    """Group ids ``(N,)``: items sharing any key (per key column) get one group."""
    n = len(keys[0])
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for column in keys:
        first: dict[Any, int] = {}
        for i, k in enumerate(column):
            j = first.setdefault(k, i)
            ri, rj = find(i), find(j)
            if ri != rj:
                parent[max(ri, rj)] = min(ri, rj)
    roots = np.array([find(i) for i in range(n)])
    return np.unique(roots, return_inverse=True)[1].astype(np.int64)


def duplicate_groups(
    hashes: Sequence[str] | np.ndarray, labels: Sequence[int] | np.ndarray, names: Sequence[str]
) -> np.ndarray:
    """Group id per image, byte-identical files sharing one.

    Raises:
        ValueError: two identical files carry different labels (the message names them).

    Example:
        >>> duplicate_groups(["a", "b", "a"], [0, 1, 0], ["x.png", "y.png", "z.png"]).tolist()
        [0, 1, 0]
    """
    groups = _union_find([list(hashes)])
    label = np.asarray(labels)
    for g in np.unique(groups):
        members = np.flatnonzero(groups == g)
        if len(set(label[members].tolist())) > 1:
            raise ValueError(
                "byte-identical images carry different labels: "
                + ", ".join(f"{names[i]} (label {label[i]})" for i in members[:6])
            )
    return groups


def _stratified(
    groups: np.ndarray, labels: np.ndarray, test_size: float, val_size: float, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    assigned = np.zeros(len(labels), dtype=np.int64)  # 0 train, 1 val, 2 test
    for c in np.unique(labels):
        ids = np.unique(groups[labels == c])
        rng.shuffle(ids)
        sizes = np.array([(groups == g).sum() for g in ids])
        n = sizes.sum()
        targets = ((2, test_size * n), (1, val_size * n))
        start = 0
        for code, target in targets:
            taken = 0
            while start < len(ids) and taken + sizes[start] / 2 <= target:
                assigned[groups == ids[start]] = code
                taken += sizes[start]
                start += 1
    train, val, test = (np.flatnonzero(assigned == k) for k in (0, 1, 2))
    return train, val, test


def split_images(
    records: ImageRecords,
    *,
    test_size: float = 0.2,
    val_size: float = 0.0,
    seed: int = 0,
    gap: Any = "0s",
    hashes: Sequence[str] | None = None,
) -> ImageSplit:
    """Split ``records`` into train, validation and test sets (see the module docstring).

    Args:
        records: the images.
        test_size, val_size: share of images (stratified) or of lots (lot and time), in
            ``[0, 1)``; ``test_size > 0``.
        seed: shuffling seed of the stratified split (the lot split has no randomness).
        gap: embargo between sets for the lot split (see :class:`mfgtx.split.LotTimeSplit`).
        hashes: precomputed :meth:`ImageRecords.content_hashes` (read from the files if
            ``None``).

    Raises:
        ValueError: bad sizes, identical files with different labels, or too few lots.
    """
    if not 0 < test_size < 1 or not 0 <= val_size < 1 or test_size + val_size >= 1:
        raise ValueError(
            f"test_size must be in (0, 1), val_size in [0, 1) and their sum below 1; found "
            f"test_size={test_size!r}, val_size={val_size!r}"
        )
    known = records.content_hashes() if hashes is None else np.asarray(hashes, dtype=object)
    if len(known) != len(records):
        raise ValueError(f"hashes has {len(known)} entries for {len(records)} images")
    labels = records.labels
    dup = duplicate_groups(known, labels, records.names)
    if not records.has_lots:
        groups = dup
        train, val, test = _stratified(groups, labels, test_size, val_size, seed)
        empty = np.zeros(0, dtype=np.int64)
        return ImageSplit(train, val, test, empty, "stratified", groups)
    lots = records.frame["lot"].astype(str).to_numpy()
    groups = _union_find([list(known), list(lots)])
    merged = [sorted(set(lots[groups == g].tolist())) for g in np.unique(groups)]
    merged = [m for m in merged if len(m) > 1]
    if merged:
        warnings.warn(
            f"byte-identical images in different lots: {', '.join(map(str, merged[:10]))}"
            f"{' ...' if len(merged) > 10 else ''}; each bracket of lots is kept in one set",
            DuplicateWarning,
            stacklevel=2,
        )
    t = records.frame["timestamp"]
    windows = pd.DataFrame({"lot": [f"g{g}" for g in groups], "start": t, "end": t})
    sets = next(
        LotTimeSplit(1, test_size=test_size, val_size=val_size, gap=gap).split_sets(windows)
    )
    return ImageSplit(sets.train, sets.val, sets.test, sets.purged, "lot_time", groups, sets)
