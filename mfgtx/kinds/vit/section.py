"""The ``vit`` section of a job file: the ViT's settings, its training loss's and its
small-defect guard's, each with its one default (the model config's, the loss's, the guard's).

A key of the section reaches the model in two typed hops: :func:`mfgtx.jobs.load_config`
builds :class:`VitSection` from the job file, and :meth:`VitSection.model_config` builds the
:class:`~mfgtx.models.ViTConfig` from it and what the data decides (image size, channels,
classes), checking it with the section's :class:`~mfgtx.models.DefectSizeGuard`;
:class:`~mfgtx.models.DefectViT` is built from that config and :meth:`VitSection.loss` (the
label smoothing and the data's class weights).

Example:
    >>> section = VitSection(d_model=32, n_layers=2, d_ff=64, label_smoothing=0.1)
    >>> config = section.model_config(image_size=64, in_chans=1, num_classes=3)
    >>> config.patch_size, config.d_model, config.grid
    (8, 32, 8)
    >>> section.loss(class_weights=(1.0, 1.0, 2.0))
    ClassLoss(class_weights=(1.0, 1.0, 2.0), label_smoothing=0.1)
    >>> VitSection(patch_size=12)
    Traceback (most recent call last):
    ...
    ValueError: stem='conv' halves the image per layer: patch_size must be a power of two, found 12
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from mfgtx._config import default_of
from mfgtx.models import ClassLoss, DefectSizeGuard, ViTConfig

__all__ = ["VitSection"]


@dataclass(frozen=True)
class VitSection:
    """The ``vit`` section of a ViT job: the settings of :class:`~mfgtx.models.ViTConfig`
    (same names, same meaning) but ``image_size``, ``in_chans`` and ``num_classes``, which
    come from the ``images`` section and the data; ``label_smoothing`` of the training loss
    (:class:`~mfgtx.models.ClassLoss`, whose class weights come from the data); and the
    small-defect guard (:class:`~mfgtx.models.DefectSizeGuard`): ``min_defect_px`` /
    ``source_size`` switch it on, ``strict_defect_size`` turns its warning into an error.

    Each key's default is that of the class it reaches (:func:`~mfgtx._config.default_of`,
    written once in :class:`~mfgtx.models.ViTConfig`, :class:`~mfgtx.models.ClassLoss` or
    :class:`~mfgtx.models.DefectSizeGuard`), sized for plant image sets of a few hundred
    images (a conv stem, 8-pixel patches, 4 layers of width 64). The ViT's rules that no data
    decides (``d_model`` divisible by ``n_heads``, a power-of-two ``patch_size`` for the conv
    stem ...), the loss's and the guard's refuse a value when the job file is read (the model
    config's own :meth:`~mfgtx.models.ViTConfig.check`, the loss's and the guard's own
    checks); :meth:`model_config` checks the values again beside the image size they must
    fit.
    """

    patch_size: int = default_of(ViTConfig, "patch_size")
    d_model: int = default_of(ViTConfig, "d_model")
    n_heads: int = default_of(ViTConfig, "n_heads")
    n_layers: int = default_of(ViTConfig, "n_layers")
    d_ff: int = default_of(ViTConfig, "d_ff")
    dropout: float = default_of(ViTConfig, "dropout")
    drop_path: float = default_of(ViTConfig, "drop_path")
    stem: Literal["linear", "conv"] = default_of(ViTConfig, "stem")
    stem_channels: int = default_of(ViTConfig, "stem_channels")
    pooling: Literal["cls", "mean"] = default_of(ViTConfig, "pooling")
    positional: Literal["learned", "sinusoidal"] = default_of(ViTConfig, "positional")
    label_smoothing: float = default_of(ClassLoss, "label_smoothing")
    min_defect_px: float | None = default_of(DefectSizeGuard, "min_defect_px")
    source_size: int | None = default_of(DefectSizeGuard, "source_size")
    strict_defect_size: bool = default_of(DefectSizeGuard, "strict_defect_size")

    def __post_init__(self) -> None:
        # the ViT's, the loss's and the guard's own rules, refused when the job file is read
        ViTConfig.check(self)
        self.loss()
        self.guard()

    def model_config(self, *, image_size: int, in_chans: int, num_classes: int) -> ViTConfig:
        """The :class:`~mfgtx.models.ViTConfig` of this section and the data's values, checked
        by the small-defect guard (a :class:`~mfgtx.models.DefectSizeWarning`, or an error
        with ``strict_defect_size``) and the loss settings.

        Raises:
            ValueError: a setting the model cannot take, or that does not fit the data
                (naming the field and the value).
        """
        config = ViTConfig(
            image_size=image_size,
            patch_size=self.patch_size,
            in_chans=in_chans,
            num_classes=num_classes,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            drop_path=self.drop_path,
            stem=self.stem,
            stem_channels=self.stem_channels,
            pooling=self.pooling,
            positional=self.positional,
        )
        self.guard().check(config)
        return config

    def guard(self) -> DefectSizeGuard:
        """The small-defect guard of this section's keys.

        Raises:
            ValueError: a setting the guard cannot take (naming the field and the value).
        """
        return DefectSizeGuard(
            min_defect_px=self.min_defect_px,
            source_size=self.source_size,
            strict_defect_size=self.strict_defect_size,
        )

    def loss(self, class_weights: tuple[float, ...] | None = None) -> ClassLoss:
        """The training loss: this section's label smoothing and the data's class weights.

        Raises:
            ValueError: a setting the loss cannot take (naming the field and the value).
        """
        return ClassLoss(class_weights=class_weights, label_smoothing=self.label_smoothing)
