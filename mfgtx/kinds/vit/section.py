"""The ``vit`` section of a job file: the ViT's settings."""

from __future__ import annotations

from mfgtx._config import section_of
from mfgtx.models import ViTConfig

__all__ = ["VitSection"]

VitSection = section_of(
    ViTConfig,
    "VitSection",
    derived=("image_size", "in_chans", "num_classes", "class_weights"),
    stand_in=lambda s: {
        "image_size": s.patch_size * 8,
        "in_chans": 1,
        "num_classes": 2,
        "class_weights": None,
        "min_defect_px": None,  # checked with the real image size when training
    },
    defaults={
        "patch_size": 8,
        "stem": "conv",
        "d_model": 64,
        "n_heads": 4,
        "n_layers": 4,
        "d_ff": 128,
        "dropout": 0.1,
    },
    module=__name__,
    doc="""The ``vit`` section of a ViT job: every field of :class:`~mfgtx.models.ViTConfig`
    but ``image_size``, ``in_chans``, ``num_classes`` and ``class_weights``, which come from
    the ``images`` section and the data. ``min_defect_px``/``source_size`` switch on the
    small-defect guard; ``strict_defect_size`` turns its warning into an error.""",
)
