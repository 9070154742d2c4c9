"""The ``images`` section of a ViT job and the image set it prepares: every labelled image
read, split by lot and time (or stratified) with byte-identical files kept in one set, and
audited (:class:`PreparedImages`); full-size photos go to :mod:`mfgtx.kinds.vit.tiles`.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd

from mfgtx.images import VIEWS, StoredImages
from mfgtx.kinds.vit.tiles import (
    TILE_CLASSES,
    MasksSection,
    PreparedTiles,
    TilesSection,
    image_audit_report,
)
from mfgtx.split import SplitPlan

__all__ = ["ImagesSection", "PreparedImages", "image_records", "prepare_images"]

log = logging.getLogger("mfgtx.kinds")


@dataclass(frozen=True)
class ImagesSection:
    """Labelled images for ``train vit``, and how every image is read.

    Args:
        path: a folder with one sub-folder per class (or a ``.zip`` of one), or a CSV
            manifest (``path``, ``label``, optional ``lot`` and ``timestamp``; with lots the
            split keeps lots and time apart).
        subdir: the folder inside a ``.zip`` that holds the class folders.
        image_size: side of the square model input; every image is resized to it.
        mode: ``L`` (grey) or ``RGB``.
        min_size: smallest accepted image side in pixels (smaller files are refused).
        augment: surface augmentation while training (flips, brightness and contrast,
            random resized crops).
        rot90: also rotate by 90 degrees (only where orientation carries no class cue).
        good_class: the defect-free class; its complement is the flagged P(defect) whose
            threshold comes from ``calibration.cost_ratio`` (none: no threshold).
        tiles: full-size photos: cut each into tiles (:class:`TilesSection`); the model
            reads one tile (resized to ``image_size`` if the sizes differ) and a photo is as
            bad as its worst tile. ``path`` is then a folder of photos or a manifest with
            ``path`` (and ``lot`` with ``timestamp``, ``mask``), no ``label``.
        masks: with ``tiles``: the defect masks that label the tiles (:class:`MasksSection`);
            the classes are ``good`` and ``defect``.
        views: score each image (or tile) as the mean of its class probabilities over this
            many views (:func:`mfgtx.images.surface_views`, the views training draws): 1 (as
            read, default), 4 (and flipped) or 8 (and turned a quarter: needs ``rot90``).
            Each view is one more model pass, so scoring takes that many times longer; the
            threshold is chosen on validation scores taken the same way.
    """

    path: str
    subdir: str = ""
    image_size: int = 64
    mode: Literal["L", "RGB"] = "L"
    min_size: int = 8
    augment: bool = True
    rot90: bool = False
    good_class: str | None = None
    tiles: TilesSection | None = None
    masks: MasksSection | None = None
    views: int = 1

    def __post_init__(self) -> None:
        if self.image_size < 8:
            raise ValueError(f"image_size must be >= 8 pixels, found {self.image_size}")
        if self.min_size < 1:
            raise ValueError(f"min_size must be >= 1, found {self.min_size}")
        if self.views not in VIEWS:
            raise ValueError(
                f"views must be 1 (as read), 4 (and flipped) or 8 (and turned a quarter), "
                f"found {self.views!r}"
            )
        if self.views > 1 and not self.augment:
            raise ValueError(
                f"views={self.views}: flipped views are only read well by a model that trained "
                "on flips (augment: true); without augment use views: 1"
            )
        if self.views == 8 and not self.rot90:
            raise ValueError(
                "views=8 turns each image a quarter, which this model never saw in training "
                "(rot90: false); use views: 4 (flips only), or rot90: true where orientation "
                "carries no defect cue"
            )
        if (self.tiles is None) != (self.masks is None):
            raise ValueError(
                "tiles and masks go together: full-size photos are cut into tiles (tiles: "
                "{size, stride}) that their masks label (masks: {format, min_defect_px})"
            )
        if self.tiles is not None and self.masks is not None:
            if self.masks.min_defect_px > self.tiles.size**2:
                raise ValueError(
                    f"masks.min_defect_px={self.masks.min_defect_px} is more pixels than a "
                    f"{self.tiles.size}x{self.tiles.size} tile holds"
                )
            if self.good_class not in (None, TILE_CLASSES[0]):
                raise ValueError(
                    f"good_class: a tiled job's classes are {list(TILE_CLASSES)} (from the "
                    f"masks); found {self.good_class!r}"
                )
            if self.subdir:
                raise ValueError("subdir: a tiled job reads a folder of photos or a manifest")

    @property
    def is_manifest(self) -> bool:
        return self.path.lower().endswith(".csv")


def image_records(images: ImagesSection) -> Any:
    """The :class:`~mfgtx.images.ImageRecords` of an ``images`` section.

    Raises:
        ValueError: the folder, zip or manifest cannot be read as labelled images.
    """
    from mfgtx.images import ImageRecords

    if images.is_manifest:
        return ImageRecords.from_manifest(images.path)
    return ImageRecords.from_folder(images.path, subdir=images.subdir)


@dataclass(frozen=True)
class PreparedImages:
    """A ViT job's images, read, split and audited.

    Attributes:
        names: class names (index = label).
        images: the readable images ``(N', C, S, S)`` in [0, 1], resized, in a scratch file
            (:class:`~mfgtx.images.StoredImages`: ``images[idx]`` is a view of a set,
            ``images[a:b]`` a batch read as a tensor); :meth:`close` removes the file.
        labels: ``(N',)`` their classes.
        train, val, test: positions into ``images``.
        groups: ``(N',)`` the split group of each image: its lot (a manifest with lots),
            else one per distinct file (byte-identical files share one).
        errors: one :class:`~mfgtx.images.ImageError` per unreadable file (left out).
        split: the :class:`~mfgtx.images.ImageSplit` over every listed file.
        audit: the lot-and-time audit (a manifest with lots), else ``None``.
        duplicates_across: byte-identical files in two sets (0 unless a bug).
        hashes: ``(N',)`` the sha256 of each readable image's file.
    """

    names: list[str]
    images: StoredImages
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    groups: np.ndarray
    errors: list[Any]
    split: Any
    audit: Any
    duplicates_across: int
    hashes: list[str]

    def audit_report(self) -> Any:
        """The split's :class:`~mfgtx.split.AuditReport`: byte-identical files kept in one set,
        plus the lot-and-time checks when the manifest has lots."""
        return image_audit_report(self, "file")

    def close(self) -> None:
        """Remove the resized images' scratch file (as :meth:`PreparedTiles.close`)."""
        self.images.close()

    @property
    def counts(self) -> dict[str, int]:
        return {
            "train": len(self.train),
            "val": len(self.val),
            "test": len(self.test),
            "unreadable": len(self.errors),
        }


def prepare_images(
    images: ImagesSection, plan: SplitPlan, *, seed: int = 0
) -> PreparedImages | PreparedTiles:
    """Read ``images`` and split them as ``train vit`` does (the same seed gives the same
    split, so ``evaluate`` judges a bundle on its own test images). With ``images.tiles``:
    the photos, their tiles and tile labels (:func:`mfgtx.kinds.vit.tiles.prepare_tiles`).

    Raises:
        ValueError: shares that are not in (0, 1), an unknown good class, a set left empty.
        DataError: no image could be read.
    """
    from mfgtx.data import DataError

    if images.tiles is not None:
        from mfgtx.kinds.vit.tiles import prepare_tiles

        return prepare_tiles(images, plan, seed=seed)
    from mfgtx.images import split_images

    test_size, val_size = plan.test_size, plan.val_size
    if not (0 < test_size < 1 and 0 < val_size < 1):
        raise ValueError(
            f"split: train vit takes test_size and val_size as shares of the images in (0, 1), "
            f"found {test_size} and {val_size}"
        )
    records = image_records(images)
    names = list(records.class_names)
    if images.good_class is not None and images.good_class not in names:
        raise ValueError(
            f"images.good_class: {images.good_class!r} is not a class of {images.path} "
            f"(classes: {names})"
        )
    loaded, kept, errors, hashes = _load_one_at_a_time(records, images)
    try:  # the scratch file goes with any error
        split = split_images(
            records, test_size=test_size, val_size=val_size, seed=seed, gap=plan.gap, hashes=hashes
        )
        for err in errors:
            log.warning("image left out: %s", err)
        if not kept:
            raise DataError(f"{images.path}: none of the {len(records)} images could be read")
        position = np.full(len(records), -1, dtype=np.int64)
        position[np.asarray(kept)] = np.arange(len(kept))
        sets = (split.train, split.val, split.test)
        train, val, test = (position[s][position[s] >= 0] for s in sets)
        for set_name, idx in (("training", train), ("validation", val), ("test", test)):
            if len(idx) == 0:
                raise ValueError(f"split: the {set_name} set has no image")
        audit_report = None
        if split.lot_sets is not None:  # lots and times: the same leakage audit as sensor windows
            from mfgtx.split import audit

            t = records.frame["timestamp"]
            frame = pd.DataFrame({"lot": records.frame["lot"].astype(str), "start": t, "end": t})
            audit_report = audit(frame, split.lot_sets, strict=False, unit="image")
        return PreparedImages(
            names=names,
            images=loaded,
            labels=records.labels[np.asarray(kept)],
            train=train,
            val=val,
            test=test,
            groups=split.groups[np.asarray(kept)],
            errors=list(errors),
            split=split,
            audit=audit_report,
            duplicates_across=_duplicates_across(split, hashes),
            hashes=[hashes[i] for i in kept],
        )
    except BaseException:
        loaded.close()
        raise


def _load_one_at_a_time(
    records: Any, images: ImagesSection
) -> tuple[StoredImages, list[int], list[Any], list[str]]:
    """Every listed image read, hashed, resized and stored a file at a time, so that memory
    holds one file and one image whatever their number: ``(stored, positions of the readable
    ones, one ImageError per other, sha256 of every file)``."""
    from mfgtx.images import load_images

    channels = 1 if images.mode == "L" else 3
    stored = StoredImages((channels, images.image_size, images.image_size))
    kept: list[int] = []
    errors: list[Any] = []
    hashes: list[str] = []
    try:
        for i, source in enumerate(records.iter_bytes()):
            hashes.append(hashlib.sha256(source[1]).hexdigest())
            one, ok, bad = load_images(
                [source], images.image_size, mode=images.mode, min_size=images.min_size
            )
            errors.extend(bad)
            if ok:
                stored.append(one[0])
                kept.append(i)
    except BaseException:
        stored.close()
        raise
    return stored, kept, errors, hashes


def _duplicates_across(split: Any, hashes: list[str]) -> int:
    """Byte-identical files that ended up in two different sets (0 unless a bug)."""
    where: dict[str, set[str]] = {}
    for name, idx in (("train", split.train), ("val", split.val), ("test", split.test)):
        for i in idx:
            where.setdefault(hashes[int(i)], set()).add(name)
    return sum(1 for sets in where.values() if len(sets) > 1)
