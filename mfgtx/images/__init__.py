"""mfgtx.images: defect image patches, read defensively, split without leaks, augmented.

* :func:`read_image` / :func:`read_images`: Pillow with a decompression-bomb limit and a
  clear :class:`ImageError` per bad file (truncated, corrupt, 16-bit, palette, alpha, tiny);
  a batch keeps its good images.
* :class:`ImageRecords`: a folder-per-class layout (directory or ``.zip``) or a CSV manifest
  with ``path``, ``label`` and optionally ``lot`` and ``timestamp``.
* :func:`split_images`: lot-and-time split through :mod:`mfgtx.split` when lots are known,
  stratified otherwise; byte-identical files always share a set.
* :func:`load_images`, :class:`ImageDataset`, :class:`SurfaceAugment`, :func:`class_weights`:
  tensors for :func:`mfgtx.train.fit` and :class:`mfgtx.models.DefectViT`.
"""

from mfgtx.images.dataset import ImageDataset, SurfaceAugment, class_weights, load_images
from mfgtx.images.io import (
    DEFAULT_MAX_PIXELS,
    MAX_IMAGE_BYTES,
    ImageBatch,
    ImageError,
    ImageSource,
    read_image,
    read_image_file,
    read_images,
    read_zip_member,
)
from mfgtx.images.records import IMAGE_SUFFIXES, ImageRecords
from mfgtx.images.split import DuplicateWarning, ImageSplit, duplicate_groups, split_images

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "DuplicateWarning",
    "ImageBatch",
    "ImageDataset",
    "ImageError",
    "ImageRecords",
    "ImageSource",
    "ImageSplit",
    "SurfaceAugment",
    "class_weights",
    "duplicate_groups",
    "load_images",
    "read_image",
    "read_image_file",
    "read_images",
    "read_zip_member",
    "split_images",
]
