"""Defensive image reading with Pillow: one clear error per bad file, the batch goes on.

Shape legend: ``H`` height, ``W`` width (pixels).

Inspection cameras and shared drives produce every kind of bad file: half-written JPEGs,
zero-byte placeholders, 16-bit TIFFs from a line-scan camera, palette PNGs from a report
tool, screenshots with an alpha channel, thumbnails, and now and then a huge or malicious
"decompression bomb". :func:`read_image` refuses each with an :class:`ImageError` that names
the file and the reason; :func:`read_images` reads a batch, keeps the good images and lists
the errors, so one bad file never stops batch scoring.

Accepted modes are 8-bit grey (``L``) and 8-bit colour (``RGB``; JPEG's ``YCbCr`` decodes to
it). Anything else is refused rather than guessed at: 16-bit grey needs a known intensity
range to become 8-bit, a palette may hide the defect in its colour table, and an alpha
channel has no agreed background.
"""

from __future__ import annotations

import io
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Literal

import numpy as np
from PIL import Image, UnidentifiedImageError

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "MAX_IMAGE_BYTES",
    "ImageBatch",
    "ImageError",
    "ImageSource",
    "MaskError",
    "MaskWarning",
    "read_image",
    "read_image_file",
    "read_images",
    "read_zip_member",
]

#: Largest accepted image (width x height): 64 megapixels, far above inspection patches.
DEFAULT_MAX_PIXELS = 64_000_000
#: Largest image file read, in bytes (an uncompressed 64-megapixel RGB TIFF is 192 MB):
#: checked on disk, and for a zip member by its declared and its actual size, before or
#: while reading, so a huge or mislabelled file never fills the memory.
MAX_IMAGE_BYTES = 256 * 2**20

#: A file path, or ``(name, bytes)`` for an image already in memory (a zip member, an upload).
ImageSource = str | PathLike[str] | tuple[str, bytes]

_ACCEPTED = ("L", "RGB")
_WHY_MODE = {
    "I;16": "16-bit grey: scale it to 8-bit with the camera's known range before reading",
    "I;16B": "16-bit grey: scale it to 8-bit with the camera's known range before reading",
    "I;16L": "16-bit grey: scale it to 8-bit with the camera's known range before reading",
    "I": "32-bit integer pixels: scale them to 8-bit with a known range before reading",
    "F": "floating-point pixels: scale them to 8-bit with a known range before reading",
    "P": "palette (indexed colour) image: save it as 8-bit grey or RGB",
    "PA": "palette image with alpha: save it as 8-bit grey or RGB",
    "RGBA": "RGB with an alpha channel: flatten it onto a background and save as RGB",
    "LA": "grey with an alpha channel: flatten it and save as 8-bit grey",
    "1": "1-bit (black and white) image: not an inspection image",
    "CMYK": "CMYK print image: save it as RGB",
}


class ImageError(ValueError):
    """An image file that cannot be used, with the file and the reason.

    Attributes:
        source: the file path or name.
        reason: what is wrong, in words.
    """

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(f"{source}: {reason}")
        self.source = source
        self.reason = reason


class MaskError(ImageError):
    """A mask or labelme file that cannot be used with its photo.

    Attributes:
        source: the mask or labelme file.
        photo: the photo it belongs to (``""`` when not known).
        reason: what is wrong, in words.
    """

    def __init__(self, source: str, reason: str, photo: str = "") -> None:
        super().__init__(source, reason)
        self.photo = photo
        if photo:
            self.args = (f"{source} (for photo {photo}): {reason}",)


class MaskWarning(UserWarning):
    """A mask or labelme file that is used but looks doubtful (the message says why)."""


@dataclass(frozen=True)
class ImageBatch:
    """The outcome of :func:`read_images`.

    Attributes:
        images: the good images, ``(H, W)`` or ``(H, W, 3)`` uint8 arrays, in input order.
        indices: position in the input of each good image.
        errors: one :class:`ImageError` per bad file, in input order.
    """

    images: list[np.ndarray] = field(default_factory=list)
    indices: list[int] = field(default_factory=list)
    errors: list[ImageError] = field(default_factory=list)


def _read_at_most(f: Any, size: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``f``, expected to hold ``size``: the buffer asked for
    is the expected size (``read(limit + 1)`` would ask for ``limit`` bytes for every small
    file), and more only when the file holds more than it said."""
    data = f.read(size + 1)
    if len(data) > size:  # it grew, or its size was not what it declared
        data += f.read(limit + 1 - len(data))
    return data


def read_image_file(path: str | PathLike[str], *, limit: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of an image file, refusing one larger than ``limit`` before reading it.

    Raises:
        ImageError: the file cannot be read, is not a regular file, or is too large.
    """
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            raise ImageError(str(path), "is not a regular file")
        size = path.stat().st_size
        if size > limit:
            raise ImageError(
                str(path), f"{size / 2**20:,.0f} MB is larger than an image file may be "
                f"({limit / 2**20:,.0f} MB); refused before reading"
            )  # fmt: skip
        with path.open("rb") as f:
            data = _read_at_most(f, size, limit)
    except OSError as e:
        raise ImageError(str(path), f"cannot be read ({e.strerror or e})") from e
    if len(data) > limit:
        raise ImageError(str(path), f"grew past {limit / 2**20:,.0f} MB while it was read")
    return data


def read_zip_member(archive: Any, name: str, *, limit: int = MAX_IMAGE_BYTES) -> bytes:
    """The bytes of member ``name`` of an open :class:`zipfile.ZipFile`, refusing one whose
    declared or actual size is over ``limit`` (a zip bomb) without inflating it whole.

    Raises:
        ImageError: the member is missing, damaged or too large.
    """
    import zipfile

    label = f"{archive.filename}:{name}"
    try:
        info = archive.getinfo(name)
        if info.file_size > limit:
            raise ImageError(
                label, f"inflates to {info.file_size / 2**20:,.0f} MB, more than an image "
                f"file may be ({limit / 2**20:,.0f} MB); refused before inflating"
            )  # fmt: skip
        with archive.open(info) as f:
            data = _read_at_most(f, info.file_size, limit)
    except KeyError as e:
        raise ImageError(label, "is not in the zip file") from e
    except (OSError, zipfile.BadZipFile, EOFError, ValueError) as e:
        raise ImageError(label, f"cannot be read from the zip file ({e})") from e
    if len(data) > limit:
        raise ImageError(label, f"inflates past {limit / 2**20:,.0f} MB; refused")
    return data


def _name_and_bytes(source: ImageSource) -> tuple[str, bytes]:
    if isinstance(source, tuple):
        name, data = source
        return str(name), bytes(data)
    return str(source), read_image_file(source)


def read_image(
    source: ImageSource,
    *,
    mode: Literal["L", "RGB"] = "L",
    min_size: int = 8,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> np.ndarray:
    """Read one image as a uint8 array, refusing anything doubtful with an :class:`ImageError`.

    Args:
        source: a path, or ``(name, bytes)``.
        mode: ``"L"`` returns ``(H, W)`` grey, ``"RGB"`` returns ``(H, W, 3)``. Grey files
            are replicated to RGB and RGB files converted to grey (ITU-R 601 luma) as asked.
        min_size: smallest accepted width and height in pixels.
        max_pixels: largest accepted ``width * height``; checked from the header before any
            pixel is decoded (decompression-bomb guard, whatever ``PIL.Image.MAX_IMAGE_PIXELS``
            says).

    Raises:
        ImageError: unreadable, not an image, truncated or corrupt, too large, too small, or
            an unexpected mode (16-bit, palette, alpha, ...).

    Example:
        >>> buf = io.BytesIO()
        >>> Image.new("L", (32, 24), 128).save(buf, format="PNG")
        >>> read_image(("patch.png", buf.getvalue())).shape
        (24, 32)
        >>> try:
        ...     read_image(("cut.png", buf.getvalue()[:40]))
        ... except ImageError as e:
        ...     print(e.source, "-", e.reason)
        cut.png - not an image file that can be read (damaged, or not PNG, JPEG, TIFF...)
    """
    if mode not in _ACCEPTED:
        raise ValueError(f"mode must be 'L' or 'RGB', found {mode!r}")
    name, data = _name_and_bytes(source)
    if not data:
        raise ImageError(name, "empty file (0 bytes)")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                w, h = img.size
                if w * h > max_pixels:
                    raise ImageError(
                        name,
                        f"{w}x{h} = {w * h} pixels exceeds max_pixels={max_pixels} "
                        "(possible decompression bomb); refused before decoding",
                    )
                if img.mode not in _ACCEPTED:
                    why = _WHY_MODE.get(img.mode, "only 8-bit grey (L) and RGB are accepted")
                    raise ImageError(name, f"unexpected mode {img.mode!r}: {why}")
                if w < min_size or h < min_size:
                    raise ImageError(
                        name, f"{w}x{h} pixels is smaller than min_size={min_size} on a side"
                    )
                img.load()
                arr = np.asarray(img.convert(mode) if img.mode != mode else img)
    except ImageError:
        raise
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as e:
        raise ImageError(name, f"decompression bomb refused ({e})") from e
    except UnidentifiedImageError as e:
        raise ImageError(
            name, "not an image file that can be read (damaged, or not PNG, JPEG, TIFF...)"
        ) from e
    except (OSError, SyntaxError, ValueError, EOFError) as e:
        raise ImageError(name, f"truncated or corrupt image data ({e})") from e
    return np.array(arr, dtype=np.uint8, order="C")  # a writable copy


def read_images(
    sources: Iterable[ImageSource] | Sequence[ImageSource],
    *,
    mode: Literal["L", "RGB"] = "L",
    min_size: int = 8,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> ImageBatch:
    """Read many images; bad files become entries of :attr:`ImageBatch.errors`.

    Arguments as for :func:`read_image`. Only :class:`ImageError` is collected; a programming
    error (a wrong argument) still raises.

    Example:
        >>> buf = io.BytesIO()
        >>> Image.new("RGBA", (16, 16)).save(buf, format="PNG")
        >>> good = io.BytesIO()
        >>> Image.new("L", (16, 16)).save(good, format="PNG")
        >>> batch = read_images([("a.png", good.getvalue()), ("b.png", buf.getvalue())])
        >>> batch.indices, [e.source for e in batch.errors]
        ([0], ['b.png'])
    """
    batch = ImageBatch()
    for i, source in enumerate(sources):
        try:
            img = read_image(source, mode=mode, min_size=min_size, max_pixels=max_pixels)
        except ImageError as e:
            batch.errors.append(e)
            continue
        batch.images.append(img)
        batch.indices.append(i)
    return batch
