"""Defect masks of full-size photos: which file, read how, and what each tile is.

Shape legend: ``H`` height, ``W`` width of a photo (pixels), ``n`` tiles of one photo.

**Mask values.** A mask is an ``(H, W)`` uint8 array the size of its photo: ``0`` is good
surface and a nonzero pixel is defect. With one defect class any nonzero value counts as
defect (a 1-bit or 0/255 PNG both work). With several classes the pixel value is the class:
``k`` = defect class ``k`` (``1..255``), ``0`` = background, and ``classes`` maps each class
name to its value.

**Pairing rule** (:func:`mask_path`): the mask of a photo has the photo's path relative to
the photo folder, under the mask folder, with the suffix ``.png`` (PNG mask) or ``.json``
(labelme)::

    images/coil_07/0003.jpg  ->  masks/coil_07/0003.png      (format "png")
    images/coil_07/0003.jpg  ->  images/coil_07/0003.json    (format "labelme": labelme saves
                                                               the JSON beside the photo)

A manifest that names the mask of each photo overrides the rule. A missing mask is an error
naming both files, unless ``missing_ok`` says that an unannotated photo is all good surface.

**Tiles** (:func:`label_tiles`): a tile with at least ``min_defect_px`` defect pixels is a
defect tile, of the class with the most pixels in it (the lowest class on a tie); a tile with
none is good; a tile with ``0 < count < min_defect_px`` is *ambiguous* (a sliver of a defect
at its edge that no one can see at that size) and left out of training and scoring, and
counted so that the report can say how many were.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

from mfgtx.images.io import MaskError
from mfgtx.images.labelme import rasterise, read_labelme
from mfgtx.images.tiles import TileSpec

__all__ = ["AMBIGUOUS", "MaskFormat", "TileLabels", "label_tiles", "mask_path", "read_mask"]

#: Label of a tile left out because only a sliver of defect touches it.
AMBIGUOUS = -1

MaskFormat = Literal["png", "labelme"]
_SUFFIX = {"png": ".png", "labelme": ".json"}


def mask_path(
    photo: str | PathLike[str],
    *,
    images_root: str | PathLike[str],
    masks_root: str | PathLike[str] | None = None,
    format: MaskFormat = "png",
) -> Path:
    """Where the mask of ``photo`` is, by the pairing rule of the module docstring.

    Args:
        photo: the photo's path (under ``images_root``).
        images_root: the photo folder.
        masks_root: the mask folder; ``None`` means ``images_root`` for labelme files and
            is an error for PNG masks (a mask must not sit where it could be taken for a photo).
        format: ``"png"`` or ``"labelme"``.

    Example:
        >>> mask_path("images/c7/0003.jpg", images_root="images", masks_root="masks").as_posix()
        'masks/c7/0003.png'
        >>> mask_path("images/c7/0003.jpg", images_root="images", format="labelme").as_posix()
        'images/c7/0003.json'
    """
    if format not in _SUFFIX:
        raise ValueError(f"format must be 'png' or 'labelme', found {format!r}")
    photo, images_root = Path(photo), Path(images_root)
    if masks_root is None:
        if format == "png":
            raise ValueError("PNG masks need their own folder: give masks_root (e.g. 'masks')")
        masks_root = images_root
    try:
        relative = photo.relative_to(images_root)
    except ValueError as e:
        raise ValueError(f"photo {photo} is not inside the photo folder {images_root}") from e
    found = Path(masks_root) / relative.with_suffix(_SUFFIX[format])
    if found == photo:
        raise ValueError(f"the mask of {photo} would be the photo itself; keep masks apart")
    return found


def _read_png_mask(
    path: Path, photo: str, shape: tuple[int, int], classes: Mapping[str, int] | None
) -> np.ndarray:
    h, w = shape
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                if img.size != (w, h):
                    raise MaskError(
                        str(path),
                        f"mask is {img.size[0]}x{img.size[1]} pixels but the photo is {w}x{h}",
                        photo,
                    )
                if img.format != "PNG":
                    raise MaskError(
                        str(path),
                        f"a {img.format} file: masks must be PNG (lossy formats smear the "
                        "defect edge into noise that would count as defect)",
                        photo,
                    )
                if img.mode not in ("1", "L", "P"):
                    raise MaskError(
                        str(path),
                        f"mode {img.mode!r}: save the mask as 8-bit grey (L) or 1-bit, with 0 = "
                        "good and nonzero = defect (or the class number)",
                        photo,
                    )
                arr = np.array(img, dtype=np.uint8)  # "P": palette indices, not colours
    except MaskError:
        raise
    except FileNotFoundError as e:
        raise MaskError(str(path), "no such mask file (see the pairing rule)", photo) from e
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as e:
        raise MaskError(str(path), f"not a readable PNG mask ({e})", photo) from e
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise MaskError(str(path), f"decompression bomb refused ({e})", photo) from e
    if classes is None:
        return (arr != 0).astype(np.uint8)
    allowed = np.zeros(256, dtype=bool)
    allowed[[0, *classes.values()]] = True
    bad = ~allowed[arr]
    if bad.any():
        values = sorted(set(np.unique(arr[bad]).tolist()))
        raise MaskError(
            str(path),
            f"pixel value(s) {values[:10]} ({int(bad.sum())} pixels) are not a class; "
            f"expected 0 (good) or one of {dict(classes)}",
            photo,
        )
    return arr


def read_mask(
    photo: str | PathLike[str],
    photo_shape: tuple[int, int],
    *,
    format: MaskFormat,
    images_root: str | PathLike[str],
    masks_root: str | PathLike[str] | None = None,
    classes: Mapping[str, int] | None = None,
    mask_file: str | PathLike[str] | None = None,
    missing_ok: bool = False,
) -> np.ndarray:
    """The ``(H, W)`` uint8 defect mask of one photo (values as in the module docstring).

    Args:
        photo: the photo's path.
        photo_shape: its ``(H, W)``; the mask (or labelme ``imageHeight``/``imageWidth``)
            must match.
        format: ``"png"`` or ``"labelme"``.
        images_root, masks_root: folders of the pairing rule (:func:`mask_path`).
        classes: defect class name -> mask value ``1..255``; ``None``: one defect class
            (every nonzero pixel, every labelme shape, is ``1``).
        mask_file: the mask named by a manifest (overrides the pairing rule).
        missing_ok: a photo without mask file is all good surface, instead of an error.

    Raises:
        MaskError: naming the mask and the photo: missing, wrong size, not PNG, a value or a
            label that is not a class, or anything :func:`~mfgtx.images.read_labelme`
            refuses.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     root = Path(folder)
        ...     (root / "masks").mkdir()
        ...     painted = np.array([[0, 255, 0], [0, 0, 0]], np.uint8)
        ...     Image.fromarray(painted).save(root / "masks/a.png")
        ...     read_mask(root / "images/a.png", (2, 3), format="png",
        ...               images_root=root / "images", masks_root=root / "masks")
        array([[0, 1, 0],
               [0, 0, 0]], dtype=uint8)
    """
    if mask_file is not None:
        path = Path(mask_file)
        if format not in _SUFFIX:
            raise ValueError(f"format must be 'png' or 'labelme', found {format!r}")
    else:
        path = mask_path(photo, images_root=images_root, masks_root=masks_root, format=format)
    h, w = (int(v) for v in photo_shape)
    if not path.is_file():
        if missing_ok:
            return np.zeros((h, w), dtype=np.uint8)
        raise MaskError(str(path), "no such mask file (see the pairing rule)", str(photo))
    if format == "png":
        return _read_png_mask(path, str(photo), (h, w), classes)
    doc = read_labelme(path, photo=str(photo), photo_shape=(h, w))
    return rasterise(doc.shapes, h, w, classes, source=f"{path} (for photo {photo})")


@dataclass(frozen=True)
class TileLabels:
    """What each tile of one photo is, from its mask.

    Attributes:
        labels: ``(n,)`` int64: ``0`` good, ``k >= 1`` defect of class ``k``,
            :data:`AMBIGUOUS` (``-1``) left out.
        defect_px: ``(n,)`` defect pixels in each tile (any class).
        top, left: ``(n,)`` corner of each tile (as :meth:`TileSpec.positions`).
        min_defect_px: the rule used.
        image_defect_px: defect pixels of the whole photo.
    """

    labels: np.ndarray
    defect_px: np.ndarray
    top: np.ndarray
    left: np.ndarray
    min_defect_px: int
    image_defect_px: int

    @property
    def image_is_defect(self) -> bool:
        """The photo's truth: at least ``min_defect_px`` defect pixels in all (a defect cut
        into slivers by tile edges still makes its photo defective)."""
        return self.image_defect_px >= self.min_defect_px

    @property
    def keep(self) -> np.ndarray:
        """``(n,)`` bool: tiles that are not ambiguous."""
        return self.labels != AMBIGUOUS

    @property
    def n_good(self) -> int:
        return int((self.labels == 0).sum())

    @property
    def n_defect(self) -> int:
        return int((self.labels > 0).sum())

    @property
    def n_ambiguous(self) -> int:
        return int((self.labels == AMBIGUOUS).sum())


def _tile_sums(binary: np.ndarray, top: np.ndarray, left: np.ndarray, s: int) -> np.ndarray:
    """Pixels set in each ``s x s`` tile, from one integral image."""
    ii = np.zeros((binary.shape[0] + 1, binary.shape[1] + 1), dtype=np.int64)
    ii[1:, 1:] = binary.cumsum(axis=0, dtype=np.int64).cumsum(axis=1)
    return ii[top + s, left + s] - ii[top, left + s] - ii[top + s, left] + ii[top, left]


def label_tiles(
    mask: np.ndarray, spec: TileSpec, *, min_defect_px: int, name: str = "image"
) -> TileLabels:
    """Label every tile of a photo from its ``(H, W)`` mask (rule in the module docstring).

    Args:
        mask: ``(H, W)`` uint8, ``0`` good, ``k`` defect class ``k``.
        spec: the tiling (the same as the photo's).
        min_defect_px: defect pixels that make a tile a defect tile, ``1..size**2``.
        name: the photo, for error messages.

    Example (8 x 12 photo, 4-px tiles, a 2-px defect of class 1 and a 6-px one of class 2):
        >>> m = np.zeros((8, 12), np.uint8)
        >>> m[0, 0:2] = 1
        >>> m[5:7, 9:12] = 2
        >>> t = label_tiles(m, TileSpec(4), min_defect_px=3)
        >>> t.labels.tolist(), t.defect_px.tolist(), t.n_ambiguous
        ([-1, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 6], 1)
    """
    if isinstance(min_defect_px, bool) or not isinstance(min_defect_px, int):
        raise ValueError(f"min_defect_px must be a whole number, found {min_defect_px!r}")
    if not 1 <= min_defect_px <= spec.size**2:
        raise ValueError(
            f"min_defect_px must be from 1 to {spec.size**2} (the pixels of a tile), "
            f"found {min_defect_px}"
        )
    if mask.ndim != 2 or mask.dtype != np.uint8:
        raise ValueError(
            f"{name}: mask must be an (H, W) uint8 array, found {mask.shape} {mask.dtype}"
        )
    positions = spec.positions(mask.shape[0], mask.shape[1], name=name)
    top, left = positions[:, 0], positions[:, 1]
    defect_px = _tile_sums(mask != 0, top, left, spec.size)
    labels = np.zeros(len(positions), dtype=np.int64)
    best = np.zeros(len(positions), dtype=np.int64)
    for k in np.unique(mask[mask != 0]).tolist():  # ascending: a tie keeps the lower class
        count = _tile_sums(mask == k, top, left, spec.size)
        better = count > best
        labels[better], best[better] = k, count[better]
    labels[(defect_px > 0) & (defect_px < min_defect_px)] = AMBIGUOUS
    total = int(np.count_nonzero(mask))
    return TileLabels(labels, defect_px, top.copy(), left.copy(), min_defect_px, total)
