"""The ``vit`` kind: a :class:`~mfgtx.models.DefectViT` on labelled inspection images.

Shape legend: ``N`` images, ``C`` channels, ``S`` image side, ``K`` classes.

Job file: the ``images`` section (:class:`ImagesSection`, in :mod:`mfgtx.kinds.vit.images`:
where the images are and how they are read) and the ``vit`` section (:data:`VitSection`: the
ViT's config minus image size, channels, classes and class weights, which come from
``images`` and the data). Images
(a folder per class, a ``.zip`` of one, or a CSV manifest with lots and times) -> split (by
lot and time through :mod:`mfgtx.split` when the manifest has lots, stratified otherwise;
byte-identical files always in one set) -> fit, checkpoint chosen on the validation images ->
temperature and the flag threshold on P(defect) = 1 - P(good class) -> compared with the
majority class and HOG + logistic regression fitted on the training and validation images.

Output rows: one per image: ``image`` (its path relative to the scored folder, zip or
manifest; the key), ``bundle_id``, ``predicted`` (class index), ``predicted_class``, ``p_<name>``
per class (its folder name), and with a good class ``p_defect`` and ``decision`` (``defect`` or
``good`` at the threshold).

Modules, one concept each: :mod:`~mfgtx.kinds.vit.section` (the ``vit`` job-file section),
:mod:`~mfgtx.kinds.vit.spec` (what a bundle reads), :mod:`~mfgtx.kinds.vit.images` (the
``images`` section and the image set it prepares), :mod:`~mfgtx.kinds.vit.tiles` (full-size
photos cut into tiles), :mod:`~mfgtx.kinds.vit.tile_scores` (judging and scoring tiled
photos), :mod:`~mfgtx.kinds.vit.reading` (reading the images to score),
:mod:`~mfgtx.kinds.vit.predictor`, :mod:`~mfgtx.kinds.vit.report` (the comparison with the
image baselines) and :mod:`~mfgtx.kinds.vit.kind` (training and judging; registers ``vit``).
"""

from __future__ import annotations

from mfgtx.kinds.vit.images import ImagesSection, PreparedImages, image_records, prepare_images
from mfgtx.kinds.vit.kind import VIT, FittedTiles, VitKind
from mfgtx.kinds.vit.predictor import VitExplanation, VitPredictor
from mfgtx.kinds.vit.report import compare_images
from mfgtx.kinds.vit.section import VitSection
from mfgtx.kinds.vit.spec import MEAN, STD, VitSpec
from mfgtx.kinds.vit.tiles import TILE_CLASSES, MasksSection, PreparedTiles, TilesSection

__all__ = [
    "MEAN",
    "STD",
    "TILE_CLASSES",
    "VIT",
    "FittedTiles",
    "ImagesSection",
    "MasksSection",
    "PreparedImages",
    "PreparedTiles",
    "TilesSection",
    "VitExplanation",
    "VitKind",
    "VitPredictor",
    "VitSection",
    "VitSpec",
    "compare_images",
    "image_records",
    "prepare_images",
]
