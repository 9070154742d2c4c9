"""What a ViT bundle reads, and how: its input specification (:class:`VitSpec`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

__all__ = ["MEAN", "STD", "VitSpec"]

#: Normalisation of the model input: ``(x - MEAN) / STD`` for pixels in [0, 1].
MEAN, STD = 0.5, 0.5


@dataclass(frozen=True)
class VitSpec:
    """What a defect ViT reads, and how: saved in its bundle (``input_spec``: version 2, or 3
    with ``views``).

    Attributes:
        image_size, mode, min_size: how every image (or tile) is read and resized.
        mean, std: the normalisation of pixels in [0, 1].
        class_names: class index -> name.
        good_class: the defect-free class's name (``p_defect`` = 1 - its probability).
        tile_size, tile_stride: full-size photos are cut into tiles of this side, this far
            apart (``None``: whole images, as every version-1 spec).
        views: an image's (or tile's) probabilities are the mean over this many of its
            views (:func:`mfgtx.images.surface_views`; 1 in bundles saved before views).
    """

    VERSION: ClassVar[int] = 3
    task: ClassVar[str] = "classification"

    image_size: int
    mode: Literal["L", "RGB"]
    min_size: int
    mean: float
    std: float
    class_names: tuple[str, ...]
    good_class: str | None
    tile_size: int | None = None
    tile_stride: int | None = None
    views: int = 1

    @property
    def tiled(self) -> bool:
        return self.tile_size is not None

    def to_dict(self) -> dict[str, Any]:
        """Version 2 when the bundle scores one view (older mfgtx reads it the same way),
        else version 3 with ``views`` (older mfgtx refuses it instead of scoring one view)."""
        state = {k: list(v) if isinstance(v, tuple) else v for k, v in self.__dict__.items()}
        if self.views == 1:
            del state["views"]
        return {"kind": "vit", "version": 2 if self.views == 1 else self.VERSION, **state}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> VitSpec:
        from mfgtx.images import VIEWS

        # version 1: whole images only; 2: and tiles; 3: and views
        if state.get("version") not in (1, 2, cls.VERSION):
            raise ValueError(
                f"input_spec version {state.get('version')!r}, expected 1 to {cls.VERSION}"
            )
        fields = {k: v for k, v in state.items() if k not in ("kind", "version")}
        views = fields.get("views", 1)
        if type(views) is not int or views not in VIEWS:
            raise ValueError(f"input_spec views {views!r}, expected one of {list(VIEWS)}")
        return cls(**{**fields, "class_names": tuple(fields["class_names"])})


# --------------------------------------------------------------------------- predictor
