"""An uploaded image checked by the reader ``mfgtx score`` uses (:func:`mfgtx.images.read_image`),
so the page calls readable exactly what batch scoring reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from _settings import MAX_IMAGE_MB, MAX_IMAGE_PIXELS

from mfgtx.images import ImageError, read_image


@dataclass(frozen=True)
class CheckedImage:
    name: str
    image: np.ndarray | None  # (H, W) grey in 0..1, or None
    message: str | None  # why the file was refused


def check_image(name: str, data: bytes) -> CheckedImage:
    """``image`` grey in 0..1, or ``message`` saying why the file is refused."""
    if len(data) > MAX_IMAGE_MB * 2**20:
        return CheckedImage(name, None, f"{len(data) / 2**20:.1f} MB is over {MAX_IMAGE_MB} MB")
    try:
        arr = read_image((name, data), mode="L", max_pixels=MAX_IMAGE_PIXELS)
    except ImageError as e:  # the reader's words, without the name of its library
        return CheckedImage(name, None, e.reason)
    return CheckedImage(name, arr.astype(np.float64) / 255.0, None)
