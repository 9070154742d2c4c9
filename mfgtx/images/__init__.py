"""mfgtx.images: defect images read defensively, tiled, masked, split without leaks, augmented.

* :func:`read_image` / :func:`read_images`: Pillow with a decompression-bomb limit and a
  clear :class:`ImageError` per bad file (truncated, corrupt, 16-bit, palette, alpha, tiny);
  a batch keeps its good images.
* :class:`ImageRecords`: a folder-per-class layout (directory or ``.zip``) or a CSV manifest
  with ``path``, ``label`` and optionally ``lot`` and ``timestamp``.
* :func:`split_images`: lot-and-time split through :mod:`mfgtx.split` when lots are known,
  stratified otherwise; byte-identical files always share a set.
* :func:`load_images`, :class:`ImageDataset`, :class:`SurfaceAugment`, :func:`class_weights`:
  tensors for :func:`mfgtx.train.fit` and :class:`mfgtx.models.DefectViT`;
  :func:`surface_views`: the flips and quarter turns training draws, for test-time views.
* Full-size photos: :class:`TileSpec`, :func:`cut_tiles`, :func:`iter_tiles` and
  :func:`tile_index` cut them into tiles (lot = the photo unless the manifest says);
  :class:`PhotoStore` keeps decoded photos in a scratch file and reads tiles back, so a job
  holds one batch of tiles, never every photo;
  :func:`mask_path`, :func:`read_mask` (PNG or labelme, :func:`read_labelme`,
  :func:`rasterise`) and :func:`label_tiles` say which tiles are defects;
  :func:`image_scores` turns tile scores into one score per photo (its worst tile);
  :func:`plan_balancing` rebalances training when a class is under 5 % of the tiles.
"""

from mfgtx.images.balance import RARE_SHARE, Balancing, plan_balancing
from mfgtx.images.dataset import (
    VIEWS,
    ImageDataset,
    SurfaceAugment,
    class_weights,
    load_images,
    surface_view,
    surface_views,
)
from mfgtx.images.io import (
    DEFAULT_MAX_PIXELS,
    MAX_IMAGE_BYTES,
    ImageBatch,
    ImageError,
    ImageSource,
    MaskError,
    MaskWarning,
    read_image,
    read_image_file,
    read_images,
    read_zip_member,
)
from mfgtx.images.labelme import (
    MAX_LABELME_BYTES,
    MAX_POINTS,
    MAX_SHAPES,
    LabelmeFile,
    LabelmeShape,
    defect_classes,
    rasterise,
    read_labelme,
)
from mfgtx.images.masks import (
    AMBIGUOUS,
    MaskFormat,
    TileLabels,
    label_tiles,
    mask_path,
    read_mask,
)
from mfgtx.images.records import IMAGE_SUFFIXES, MAX_MANIFEST_BYTES, ImageRecords, read_manifest
from mfgtx.images.scores import ImageScores, image_scores
from mfgtx.images.sources import iter_image_files, read_listed
from mfgtx.images.split import DuplicateWarning, ImageSplit, duplicate_groups, split_images
from mfgtx.images.store import PhotoStore, StoredImages
from mfgtx.images.tiles import TileBatch, TileSpec, cut_tiles, iter_tiles, tile_index

__all__ = [
    "AMBIGUOUS",
    "DEFAULT_MAX_PIXELS",
    "IMAGE_SUFFIXES",
    "MAX_IMAGE_BYTES",
    "MAX_LABELME_BYTES",
    "MAX_MANIFEST_BYTES",
    "MAX_POINTS",
    "MAX_SHAPES",
    "RARE_SHARE",
    "VIEWS",
    "Balancing",
    "DuplicateWarning",
    "ImageBatch",
    "ImageDataset",
    "ImageError",
    "ImageRecords",
    "ImageScores",
    "ImageSource",
    "ImageSplit",
    "LabelmeFile",
    "LabelmeShape",
    "MaskError",
    "MaskFormat",
    "MaskWarning",
    "PhotoStore",
    "StoredImages",
    "SurfaceAugment",
    "TileBatch",
    "TileLabels",
    "TileSpec",
    "class_weights",
    "cut_tiles",
    "defect_classes",
    "duplicate_groups",
    "image_scores",
    "iter_image_files",
    "iter_tiles",
    "label_tiles",
    "load_images",
    "mask_path",
    "plan_balancing",
    "rasterise",
    "read_image",
    "read_image_file",
    "read_images",
    "read_labelme",
    "read_listed",
    "read_manifest",
    "read_mask",
    "read_zip_member",
    "split_images",
    "surface_view",
    "surface_views",
    "tile_index",
]
