"""Full-size photos for the ``vit`` kind: tiles cut on the fly, labelled from masks, split by
photo and audited (:class:`PreparedTiles`).

Shape legend: ``M`` photos, ``N`` tiles, ``S`` tile side, ``s`` model input side, ``C``
channels.

Job file: ``images.tiles: {size, stride, train_stride, balance}``
(:class:`TilesSection`) and ``images.masks: {format, path, min_defect_px, missing_ok}``
(:class:`MasksSection`). ``images.path`` is a folder of photos (searched recursively) or a
CSV manifest with ``path`` and optionally ``lot`` with ``timestamp``, and ``mask`` (a mask
file per photo, overriding the pairing rule of :func:`mfgtx.images.mask_path`; the rule's
photo folder is the manifest's deepest common folder of the photos). Tiles are never
written to disk, and the photos are never all held in memory: each is decoded once into a
:class:`~mfgtx.images.PhotoStore` (a scratch file that vanishes with the process), from which
:class:`TileDataset` reads a tile when it is drawn and every other step reads a batch of tiles
at a time (:meth:`PreparedTiles.batches`). A job's memory depends on the batch size and the
largest photo, not on how many photos there are.

* **Labels** (:func:`mfgtx.images.label_tiles`): a tile with at least ``min_defect_px`` mask
  pixels is ``defect`` (class 1), one with none ``good`` (class 0), one with a few
  *ambiguous*: left out of training and of tile metrics, still scored. A photo is defective
  when its mask holds at least ``min_defect_px`` pixels.
* **Split**: by photo (lot = the photo) unless the manifest gives lots, through
  :func:`mfgtx.images.split_images`, so the tiles of one photo never straddle two sets; the
  audit checks it on the tiles themselves (``photos_in_one_set``).
* **Rare defects** (:func:`mfgtx.images.plan_balancing`): when a class is under 5 % of the
  training tiles, each epoch draws both classes equally often (``tiles.balance: sampler``,
  the default), or the loss weighs them by inverse frequency (``weights``); logged.
* **Training tiles**: cut ``tiles.train_stride`` apart when the job sets it (overlapping
  tiles: each defect is learned at several places in the tile); validation, judging and
  scoring keep ``tiles.stride``.
* **Judging and scoring** (a photo as bad as its worst tile, each tile over its views,
  beside HOG + logistic regression): :mod:`mfgtx.kinds.vit.tile_scores`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch.utils.data import Dataset

from mfgtx.images import AMBIGUOUS, PhotoStore, TileSpec, read_manifest

__all__ = [
    "MasksSection",
    "PreparedTiles",
    "TileDataset",
    "TilesSection",
    "image_audit_report",
    "prepare_tiles",
    "tile_tensor",
]

log = logging.getLogger("mfgtx.kinds")

#: Class names of a tiled job: index 0 is good surface, 1 is a defect (any mask pixel).
TILE_CLASSES = ("good", "defect")

#: Tiles read at a time by a pass over many (scoring, features): 512 tiles of 64 px grey are
#: 2 MB of pixels and 8 MB as model input.
BATCH_TILES = 512


@dataclass(frozen=True)
class TilesSection:
    """``images.tiles``: cut each photo into ``size``-px tiles ``stride`` px apart.

    Args:
        size: tile side in pixels.
        stride: pixels between neighbouring tiles (default ``size``: tiles touch); the tiles
            that validation, judging and scoring see.
        train_stride: pixels between neighbouring *training* tiles (default ``stride``). A
            smaller step cuts overlapping training tiles, so a defect is learned at several
            places in the tile, as scoring meets it; the baselines are fitted on the same
            tiles.
        balance: how training is rebalanced when a class is under 5 % of the training
            tiles (:func:`mfgtx.images.plan_balancing`): ``sampler`` (default) draws every
            class equally often, so each batch holds defect tiles; ``weights`` keeps one
            shuffled pass and weighs the loss by inverse class frequency.
    """

    size: int = 64
    stride: int | None = None
    train_stride: int | None = None
    balance: Literal["sampler", "weights"] = "sampler"

    def __post_init__(self) -> None:
        self.spec()  # TileSpec's checks, with its messages
        if self.balance not in ("sampler", "weights"):
            raise ValueError(f"balance must be 'sampler' or 'weights', found {self.balance!r}")
        try:
            self.train_spec()
        except ValueError as e:
            raise ValueError(f"train_stride: {e}") from e

    def spec(self) -> TileSpec:
        return TileSpec(self.size, self.stride)

    def train_spec(self) -> TileSpec:
        """The tiling of the training photos (``train_stride``, else ``stride``)."""
        return TileSpec(self.size, self.stride if self.train_stride is None else self.train_stride)


@dataclass(frozen=True)
class MasksSection:
    """``images.masks``: where the defect masks are and how a tile is labelled from them.

    Args:
        format: ``png`` (a mask image per photo, 0 = good, nonzero = defect) or ``labelme``
            (polygon outlines in a labelme JSON file).
        path: the mask folder, mirroring the photo folder (required for ``png``; for
            ``labelme`` the default is beside each photo, where labelme saves them).
        min_defect_px: mask pixels that make a tile (and a photo) a defect; a tile with
            fewer but some is ambiguous and left out.
        missing_ok: a photo without a mask file is all good surface (else an error).
    """

    format: Literal["png", "labelme"] = "png"
    path: str | None = None
    min_defect_px: int = 8
    missing_ok: bool = False

    def __post_init__(self) -> None:
        if self.format == "png" and self.path is None:
            raise ValueError(
                "path: PNG masks need their own folder (e.g. masks/, mirroring the photos); "
                "labelme files may sit beside the photos"
            )
        if self.min_defect_px < 1:
            raise ValueError(f"min_defect_px must be >= 1 pixel, found {self.min_defect_px}")


# --------------------------------------------------------------------------- tensors


def tile_tensor(tiles: np.ndarray, size: int) -> torch.Tensor:
    """``(N, C, s, s)`` float32 in [0, 1] of uint8 tiles ``(N, S, S)`` or ``(N, S, S, C)``,
    resized (bilinear, antialiased, as whole images are) when ``S != s``: the one conversion
    of training, judging and scoring."""
    t = torch.from_numpy(np.ascontiguousarray(tiles)).float().div_(255.0)
    t = t[:, None] if t.dim() == 3 else t.permute(0, 3, 1, 2)  # (N, C, S, S)
    if t.shape[-1] != size:
        t = F.interpolate(t, size=(size, size), mode="bilinear", antialias=True)
    return t.clamp_(0.0, 1.0)


class TileDataset(Dataset):
    """Tiles read from a :class:`~mfgtx.images.PhotoStore` when drawn, as ``{"images", "y"}``
    samples.

    Args:
        photos: the store of the uint8 photos ``(H, W)`` or ``(H, W, C)``.
        photo, top, left: ``(N,)`` each tile's photo and corner.
        labels: ``(N,)`` classes.
        size: tile side ``S``; image_size: model input side ``s``.
        augment: a :class:`~mfgtx.images.SurfaceAugment` (``None``: none).
        mean, std: normalisation after augmentation.
    """

    def __init__(
        self,
        photos: PhotoStore,
        photo: np.ndarray,
        top: np.ndarray,
        left: np.ndarray,
        labels: np.ndarray,
        *,
        size: int,
        image_size: int,
        augment: Any = None,
        mean: float = 0.5,
        std: float = 0.5,
    ) -> None:
        self.photos, self.size, self.image_size = photos, size, image_size
        self.photo, self.top, self.left = (np.asarray(a, np.int64) for a in (photo, top, left))
        self.y = torch.as_tensor(np.asarray(labels, np.int64))
        self.augment, self.mean, self.std = augment, mean, std

    def __len__(self) -> int:
        return len(self.photo)

    def __getitem__(self, i: int) -> dict[str, Any]:
        tile = self.photos.tile(int(self.photo[i]), int(self.top[i]), int(self.left[i]), self.size)
        x = tile_tensor(tile[None], self.image_size)[0]  # (C, s, s)
        if self.augment is not None:
            x = self.augment(x)
        return {"images": (x - self.mean) / self.std, "y": self.y[i]}


# --------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Listed:
    keys: list[str]  # each photo's name relative to the folder or manifest (the output key)
    paths: list[Path]
    lines: Sequence[int | None]  # CSV line of a manifest row
    lots: list[str] | None
    times: pd.Series | None
    masks: list[Path | None]
    root: Path  # the photo folder of the mask pairing rule


def _list_photos(path: str) -> _Listed:
    from mfgtx.images import iter_image_files

    src = Path(path)
    if src.suffix.lower() != ".csv":
        try:
            found = list(iter_image_files(src))
        except ValueError as e:
            raise ValueError(f"images.path: {e}") from e
        if not found:
            raise ValueError(f"images.path: {src} holds no photo")
        keys = [k for k, _ in found]
        return _Listed(keys, [Path(p) for _, p in found], [None] * len(keys), None, None,
                       [None] * len(keys), src)  # fmt: skip
    frame, lines = read_manifest(src)
    if "path" not in frame.columns:
        raise ValueError(f"{src}: a manifest needs a 'path' column; found {list(frame.columns)}")
    for col in ("path", *(c for c in ("lot", "timestamp") if c in frame.columns)):
        empty = [ln for ln, v in zip(lines, frame[col], strict=True) if not v.strip()]
        if empty:
            raise ValueError(f"{src}: empty {col!r} on line(s) {empty[:10]}")
    again = frame["path"].duplicated().to_numpy()
    if again.any():
        raise ValueError(
            f"{src}: line(s) {[lines[i] for i in np.flatnonzero(again)][:10]} list a photo "
            "a second time; list each photo once"
        )
    if "lot" in frame.columns and "timestamp" not in frame.columns:
        raise ValueError(
            f"{src}: a 'lot' column needs a 'timestamp' column, so that the split can keep "
            "lots and time apart"
        )
    times = None
    if "timestamp" in frame.columns:
        times = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce")
        bad = [lines[i] for i in np.flatnonzero(times.isna().to_numpy())]
        if bad:
            raise ValueError(f"{src}: timestamp not ISO 8601 on line(s) {bad[:10]}")
    base = src.parent
    paths = [base / p for p in frame["path"]]
    absent = [(ln, str(p)) for ln, p in zip(lines, frame["path"], strict=True)
              if not (base / p).is_file()]  # fmt: skip
    if absent:
        raise ValueError(f"{src}: listed photo(s) do not exist, first (line, path): {absent[:5]}")
    masks: list[Path | None] = [None] * len(paths)
    if "mask" in frame.columns:
        masks = [base / m if m.strip() else None for m in frame["mask"]]
    root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    lots = list(frame["lot"]) if "lot" in frame.columns else None
    return _Listed(list(frame["path"]), paths, lines, lots, times, masks, root)


def _error(file: str, reason: str, *, lot: str | None = None, line: int | None = None) -> dict:
    return {"lot": lot, "file": file, "line": line, "column": None, "reason": reason}


@dataclass(frozen=True)
class PreparedTiles:
    """A tiled ViT job's photos, read, labelled, split and audited.

    Attributes:
        names: ``("good", "defect")``.
        spec: the tiling.
        image_size: the model input side (tiles are resized to it when they differ).
        store: the readable photos, uint8, decoded once into a scratch file
            (:class:`~mfgtx.images.PhotoStore`; :meth:`close` removes it).
        keys: their names (as ``score`` writes them).
        hashes: the sha256 of each photo's file (what the run's checkpoints are keyed by).
        image_labels: ``(M,)`` 1 where the photo is defective.
        tiles: one row per tile: ``photo`` (position in ``photos``), ``top``, ``left``,
            ``label`` (0, 1 or -1 ambiguous), ``defect_px``.
        train, val, test: photo positions of each set.
        groups: ``(M,)`` the split group of each photo (its lot, else the photo).
        errors: errors-file rows of the photos left out (unreadable photo or mask).
        split: the :class:`~mfgtx.images.ImageSplit` of the readable photos.
        audit: the lot-and-time audit (a manifest with lots), else ``None``.
        duplicates_across: byte-identical photos in two sets (0 unless a bug).
        min_defect_px: mask pixels that make a tile a defect.
        fit_tiles: with ``images.tiles.train_stride``: every photo's tiles cut that far
            apart, as ``tiles`` (what training draws from, :meth:`training_tiles`); else
            ``None`` (training draws from ``tiles``).
    """

    names: list[str]
    spec: TileSpec
    image_size: int
    store: PhotoStore
    keys: list[str]
    hashes: list[str]
    image_labels: np.ndarray
    tiles: pd.DataFrame
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    groups: np.ndarray
    errors: list[dict[str, Any]]
    split: Any
    audit: Any
    duplicates_across: int
    min_defect_px: int = 8
    fit_tiles: pd.DataFrame | None = None

    def tiles_of(self, photos: np.ndarray, *, labelled: bool = False) -> np.ndarray:
        """Tile rows of ``photos`` (only the non-ambiguous ones with ``labelled``)."""
        mask = np.isin(self.tiles["photo"].to_numpy(), np.asarray(photos))
        if labelled:
            mask &= self.tiles["label"].to_numpy() != AMBIGUOUS
        return np.flatnonzero(mask)

    def training_tiles(self) -> pd.DataFrame:
        """The labelled (non-ambiguous) tiles of the training photos that the model and the
        baselines are fitted on: cut ``train_stride`` apart (:attr:`fit_tiles`) when the job
        sets one, else the job's own tiles."""
        if self.fit_tiles is None:
            return self.tiles.iloc[self.tiles_of(self.train, labelled=True)]
        t = self.fit_tiles
        keep = np.isin(t["photo"].to_numpy(), self.train) & (t["label"].to_numpy() != AMBIGUOUS)
        return t[keep]

    def _rows(self, tiles: np.ndarray | pd.DataFrame) -> pd.DataFrame:
        return tiles if isinstance(tiles, pd.DataFrame) else self.tiles.iloc[tiles]

    def dataset(self, rows: np.ndarray | pd.DataFrame, augment: Any = None) -> TileDataset:
        """The tiles of ``rows`` (positions in :attr:`tiles`, or a frame of tiles such as
        :meth:`training_tiles`) as a :class:`TileDataset`."""
        t = self._rows(rows)
        return TileDataset(
            self.store, t["photo"].to_numpy(), t["top"].to_numpy(), t["left"].to_numpy(),
            np.maximum(t["label"].to_numpy(), 0), size=self.spec.size,
            image_size=self.image_size, augment=augment,
        )  # fmt: skip

    def cut(self, rows: np.ndarray | pd.DataFrame) -> np.ndarray:
        """uint8 tiles ``(n, S, S[, C])`` of tile ``rows`` (as :meth:`dataset` takes them),
        all at once: for a few rows; a pass over many reads :meth:`batches`."""
        t = self._rows(rows)
        return self.store.tiles(t["photo"].to_numpy(), t["top"].to_numpy(),
                                t["left"].to_numpy(), self.spec.size)  # fmt: skip

    def batches(
        self, rows: np.ndarray | pd.DataFrame, batch_size: int = BATCH_TILES
    ) -> Iterator[np.ndarray]:
        """uint8 tiles of ``rows`` in order, ``batch_size`` at a time (what a pass over many
        tiles holds at once)."""
        t = self._rows(rows)
        photo, top, left = t["photo"].to_numpy(), t["top"].to_numpy(), t["left"].to_numpy()
        for a in range(0, len(t), batch_size):
            part = slice(a, a + batch_size)
            yield self.store.tiles(photo[part], top[part], left[part], self.spec.size)

    def apply(
        self, rows: np.ndarray | pd.DataFrame, fn: Any, batch_size: int = BATCH_TILES
    ) -> np.ndarray:
        """``fn`` (uint8 tiles -> an array with one row per tile) over the tiles of ``rows``,
        a batch at a time, concatenated: only the results of every tile are held."""
        out = [np.asarray(fn(tiles)) for tiles in self.batches(rows, batch_size)]
        return np.concatenate(out) if out else np.asarray(fn(self.cut(rows)))

    def close(self) -> None:
        """Remove the scratch file of the decoded photos (also done when the process ends)."""
        self.store.close()

    def audit_report(self) -> Any:
        """Byte-identical photos in one set, every photo's tiles in one set (checked on the
        tiles of each set), and the lot-and-time checks when the manifest has lots."""
        from mfgtx.split import Check

        where: dict[int, set[str]] = {}
        for name, photos in (("train", self.train), ("val", self.val), ("test", self.test)):
            for p in self.tiles["photo"].to_numpy()[self.tiles_of(photos)]:
                where.setdefault(int(p), set()).add(name)
        split_photos = sorted(self.keys[p] for p, sets in where.items() if len(sets) > 1)
        whole = Check(
            "photos_in_one_set",
            not split_photos,
            f"the tiles of each of the {len(where)} photos lie in one set"
            if not split_photos
            else f"tiles of {len(split_photos)} photo(s) lie in two sets: {split_photos[:5]}",
        )
        return image_audit_report(self, "photo", whole)

    @property
    def counts(self) -> dict[str, int]:
        label = self.tiles["label"].to_numpy()
        out = {"train": len(self.train), "val": len(self.val), "test": len(self.test),
               "unreadable": len(self.errors)}  # fmt: skip
        for name, photos in (("train", self.train), ("val", self.val), ("test", self.test)):
            rows = self.tiles_of(photos, labelled=True)
            out[f"{name}_tiles"] = len(rows)
            out[f"{name}_defect_tiles"] = int((label[rows] == 1).sum())
        out["ambiguous_tiles"] = int((label == AMBIGUOUS).sum())
        if self.fit_tiles is not None:  # what training drew from, train_stride apart
            fit = self.training_tiles()["label"].to_numpy()
            out["train_fit_tiles"], out["train_fit_defect_tiles"] = len(fit), int((fit == 1).sum())
        return out


def _tile_frame(photo: int, labelled: Any) -> pd.DataFrame:
    """The rows of :attr:`PreparedTiles.tiles` of one photo's :class:`TileLabels`."""
    return pd.DataFrame({"photo": photo, "top": labelled.top, "left": labelled.left,
                         "label": labelled.labels, "defect_px": labelled.defect_px})  # fmt: skip


@dataclass
class _Read:
    """What :func:`prepare_tiles` keeps of each usable photo, read one at a time."""

    store: PhotoStore
    keys: list[str] = field(default_factory=list)
    hashes: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    kept: list[int] = field(default_factory=list)  # positions in the listing
    parts: list[pd.DataFrame] = field(default_factory=list)
    fit_parts: list[pd.DataFrame] | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)


def prepare_tiles(images: Any, plan: Any, *, seed: int = 0) -> PreparedTiles:
    """Read, label and split a tiled ViT job's photos as ``train vit`` does.

    A photo (or its mask) that cannot be used is left out and listed in
    :attr:`PreparedTiles.errors`, naming the file. The photos are decoded one at a time into
    the result's :attr:`~PreparedTiles.store`; close it (:meth:`PreparedTiles.close`) when
    done, or let the process end.

    Raises:
        ValueError: a bad manifest or folder, shares outside (0, 1), a set left empty.
        DataError: no photo could be used.
    """
    if images.masks is None:
        raise ValueError("images.masks: a tiled job needs masks to label its tiles")
    spec, train_spec = images.tiles.spec(), images.tiles.train_spec()
    listed = _list_photos(images.path)
    read = _Read(PhotoStore(spec.size), fit_parts=[] if train_spec != spec else None)
    try:
        _read_photos(listed, images, spec, train_spec, read)
        return _split(listed, images, plan, seed, spec, read)
    except BaseException:
        read.store.close()
        raise


def _read_photos(
    listed: _Listed, images: Any, spec: TileSpec, train_spec: TileSpec, read: _Read
) -> None:
    """Read, check and label every listed photo, one at a time, into ``read``."""
    import hashlib

    from mfgtx.images import ImageError, label_tiles, read_image, read_image_file, read_mask

    masks = images.masks
    masks_root = Path(masks.path) if masks.path is not None else None
    for i, (key, path) in enumerate(zip(listed.keys, listed.paths, strict=True)):
        lot = listed.lots[i] if listed.lots is not None else None
        try:
            data = read_image_file(path)
            photo = read_image((str(path), data), mode=images.mode, min_size=images.min_size)
            spec.check(photo.shape[0], photo.shape[1], name=str(path))
            mask = read_mask(
                path, photo.shape[:2], format=masks.format, images_root=listed.root,
                masks_root=masks_root, mask_file=listed.masks[i], missing_ok=masks.missing_ok,
            )  # fmt: skip
        except ImageError as e:
            photo_of = getattr(e, "photo", "")
            why = f"{e.reason} (mask of photo {photo_of}); photo left out" if photo_of else e.reason
            read.errors.append(_error(e.source, why, lot=lot, line=listed.lines[i]))
            log.warning("photo left out: %s: %s", e.source, why)
            continue
        except ValueError as e:  # the pairing rule cannot place the mask
            read.errors.append(_error(str(path), str(e), lot=lot, line=listed.lines[i]))
            continue
        labelled = label_tiles(mask, spec, min_defect_px=masks.min_defect_px, name=str(path))
        n = read.store.add(photo)
        read.parts.append(_tile_frame(n, labelled))
        if read.fit_parts is not None:
            at = label_tiles(mask, train_spec, min_defect_px=masks.min_defect_px, name=str(path))
            read.fit_parts.append(_tile_frame(n, at))
        read.keys.append(key)
        read.hashes.append(hashlib.sha256(data).hexdigest())
        read.labels.append(int(labelled.image_is_defect))
        read.kept.append(i)


def _split(
    listed: _Listed, images: Any, plan: Any, seed: int, spec: TileSpec, read: _Read
) -> PreparedTiles:
    """The :class:`PreparedTiles` of the photos ``read``: split by photo (or lot), audited."""
    from mfgtx.data import DataError
    from mfgtx.images import ImageRecords, split_images

    keys, hashes, kept = read.keys, read.hashes, read.kept
    if not keys:
        raise DataError(f"{images.path}: none of the {len(listed.keys)} photos could be used")
    image_labels = np.asarray(read.labels, dtype=np.int64)
    frame = pd.DataFrame({"path": keys, "label": image_labels})
    if listed.lots is not None and listed.times is not None:
        frame["lot"] = [listed.lots[i] for i in kept]
        frame["timestamp"] = listed.times.iloc[kept].to_numpy()
    records = ImageRecords(frame=frame, class_names=TILE_CLASSES, root=Path(images.path).parent)
    test_size, val_size = plan.test_size, plan.val_size
    if not (0 < test_size < 1 and 0 < val_size < 1):
        raise ValueError(
            f"split: train vit takes test_size and val_size as shares of the photos (or lots) "
            f"in (0, 1), found {test_size} and {val_size}"
        )
    split = split_images(
        records, test_size=test_size, val_size=val_size, seed=seed, gap=plan.gap, hashes=hashes
    )
    for set_name, idx in (
        ("training", split.train),
        ("validation", split.val),
        ("test", split.test),
    ):
        if len(idx) == 0:
            raise ValueError(f"split: the {set_name} set has no photo")
    audit_report = None
    if split.lot_sets is not None:
        from mfgtx.split import audit

        t = frame["timestamp"]
        lots = pd.DataFrame({"lot": frame["lot"].astype(str), "start": t, "end": t})
        audit_report = audit(lots, split.lot_sets, strict=False, unit="photo")
    where: dict[str, set[str]] = {}
    for name, idx in (("train", split.train), ("val", split.val), ("test", split.test)):
        for i in idx:
            where.setdefault(hashes[int(i)], set()).add(name)
    return PreparedTiles(
        names=list(TILE_CLASSES),
        spec=spec,
        image_size=images.image_size,
        store=read.store,
        keys=keys,
        hashes=hashes,
        image_labels=image_labels,
        tiles=pd.concat(read.parts, ignore_index=True),
        train=split.train,
        val=split.val,
        test=split.test,
        groups=split.groups,
        errors=read.errors,
        split=split,
        audit=audit_report,
        duplicates_across=sum(1 for s in where.values() if len(s) > 1),
        min_defect_px=images.masks.min_defect_px,
        fit_tiles=None if read.fit_parts is None else pd.concat(read.fit_parts, ignore_index=True),
    )


# --------------------------------------------------------------------------- audit


def image_audit_report(prep: Any, unit: str, *checks: Any) -> Any:
    r"""The :class:`~mfgtx.split.AuditReport` of a split image set ``prep`` (whole images or
    tiled photos): byte-identical ``unit``\ s kept in one set, then ``checks``, then the
    lot-and-time audit's checks when the manifest has lots."""
    from mfgtx.split import AuditReport, Check

    n = prep.duplicates_across
    dup = Check(
        "duplicates_together",
        n == 0,
        f"byte-identical {unit}s share one set"
        if n == 0
        else f"{n} byte-identical {unit}(s) appear in two sets: the test set is not unseen",
    )
    audit = prep.audit
    summary = dict(audit.summary) if audit is not None else {}
    summary.update(method=prep.split.method, images=prep.counts)
    return AuditReport(
        (dup, *checks, *(audit.checks if audit is not None else ())),
        summary,
        not_checked=audit.not_checked if audit is not None else (),
    )
