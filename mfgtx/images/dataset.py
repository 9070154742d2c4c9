"""Image tensors for training: loading, surface augmentation, class weights.

Shape legend: ``N`` images, ``C`` channels (1 grey, 3 RGB), ``S`` side of the square model
input, ``K`` classes.

Images are small inspection patches, so a whole set lives in memory as one float tensor
``(N, C, S, S)`` with values in ``[0, 1]``; :class:`ImageDataset` augments on the fly.

Augmentation for surfaces (:class:`SurfaceAugment`): horizontal and vertical flips, a small
change of brightness and contrast (lighting drifts between cameras and shifts), and a random
resized crop (the defect is seldom centred). Rotations by 90 degrees are **off by default**:
on rolled steel, scratches and oxide scale run along the rolling direction, so orientation
carries class information; switch them on only where it does not.

Test-time views (:func:`surface_views`): the flips (and quarter turns) that training draws,
so a model can score an image as the mean over views it has learned to read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor
from torch.utils.data import Dataset

if TYPE_CHECKING:
    from mfgtx.images.store import StoredImages

from mfgtx.images.io import ImageError, ImageSource, read_image

__all__ = [
    "VIEWS",
    "ImageDataset",
    "SurfaceAugment",
    "class_weights",
    "load_images",
    "surface_view",
    "surface_views",
]


def load_images(
    sources: Iterable[ImageSource],
    size: int,
    *,
    mode: Literal["L", "RGB"] = "L",
    min_size: int = 8,
) -> tuple[Tensor, list[int], list[ImageError]]:
    """Read and resize images to ``(N', C, size, size)`` float32 in ``[0, 1]``.

    Bilinear resizing with antialiasing. Bad files are skipped and reported. Each image is
    decoded and resized before the next is read, so memory holds one full-size image (and
    ``sources`` may be a generator that reads each file when it is reached).

    Returns:
        ``(images, indices, errors)``: the good images, their positions in ``sources``, and
        one :class:`~mfgtx.images.ImageError` per bad file.
    """
    out, indices, errors = [], [], []
    for i, source in enumerate(sources):
        try:
            arr = read_image(source, mode=mode, min_size=min_size)
        except ImageError as e:
            errors.append(e)
            continue
        t = torch.from_numpy(arr).float().div_(255.0)
        del arr
        t = t[None] if t.dim() == 2 else t.permute(2, 0, 1)  # (C, H, W)
        if t.shape[-2:] != (size, size):
            t = F.interpolate(
                t[None], size=(size, size), mode="bilinear", antialias=True, align_corners=False
            )[0]
        out.append(t.clamp_(0.0, 1.0))
        indices.append(i)
    channels = 1 if mode == "L" else 3
    images = torch.stack(out) if out else torch.zeros(0, channels, size, size)
    return images, indices, errors


#: How many views :func:`surface_views` can give: the image itself, its flips (4) and, for
#: square images, their quarter turns (8, the dihedral group of the square).
VIEWS = (1, 4, 8)


def surface_views(images: Tensor, n: int) -> list[Tensor]:
    """The first ``n`` views of ``images`` ``(..., S, S)``: as given; flipped left-right, top-
    bottom, both (``n >= 4``: :class:`SurfaceAugment`'s flips); and those four turned a
    quarter (``n == 8``: with ``rot90``). Together they are every view training draws.

    Example:
        >>> x = torch.arange(4.0).reshape(1, 2, 2)
        >>> [v.flatten().tolist() for v in surface_views(x, 4)]
        [[0.0, 1.0, 2.0, 3.0], [1.0, 0.0, 3.0, 2.0], [2.0, 3.0, 0.0, 1.0], [3.0, 2.0, 1.0, 0.0]]
    """
    if n not in VIEWS:
        raise ValueError(f"views must be one of {list(VIEWS)}, found {n!r}")
    return [surface_view(images, k) for k in range(n)]


def surface_view(images: Tensor, k: int) -> Tensor:
    """View ``k`` (0 to 7) of :func:`surface_views`, alone (one copy in memory at a time)."""
    flip = [(), (-1,), (-2,), (-2, -1)][k % 4]
    x = images.flip(flip) if flip else images
    return torch.rot90(x, 1, dims=(-2, -1)) if k >= 4 else x


@dataclass(frozen=True)
class SurfaceAugment:
    """Random augmentation of one image ``(C, S, S)`` in ``[0, 1]``.

    Args:
        hflip, vflip: flip with probability 1/2.
        rot90: rotate by a random multiple of 90 degrees (only where orientation carries no
            class information; off by default).
        brightness: add a uniform offset in ``[-brightness, brightness]``.
        contrast: scale around the image mean by a factor in ``[1 - contrast, 1 + contrast]``.
        crop_scale: area share range of the random resized crop (``(1, 1)``: no crop).
        crop_ratio: aspect ratio range of the crop.

    Example:
        >>> aug = SurfaceAugment()
        >>> g = torch.Generator().manual_seed(0)
        >>> aug(torch.rand(1, 32, 32), g).shape
        torch.Size([1, 32, 32])
    """

    hflip: bool = True
    vflip: bool = True
    rot90: bool = False
    brightness: float = 0.1
    contrast: float = 0.1
    crop_scale: tuple[float, float] = (0.7, 1.0)
    crop_ratio: tuple[float, float] = (3 / 4, 4 / 3)

    def __post_init__(self) -> None:
        for name in ("brightness", "contrast"):
            if not 0 <= getattr(self, name) < 1:
                raise ValueError(f"{name} must be in [0, 1), found {getattr(self, name)!r}")
        lo, hi = self.crop_scale
        if not 0 < lo <= hi <= 1:
            raise ValueError(
                f"crop_scale must satisfy 0 < low <= high <= 1, found {self.crop_scale}"
            )
        if not 0 < self.crop_ratio[0] <= self.crop_ratio[1]:
            raise ValueError(f"crop_ratio must be 0 < low <= high, found {self.crop_ratio}")

    def __call__(self, image: Tensor, generator: torch.Generator | None = None) -> Tensor:
        def u(a: float = 0.0, b: float = 1.0) -> float:
            return a + (b - a) * float(torch.rand((), generator=generator))

        x = image
        S_h, S_w = x.shape[-2:]
        if self.crop_scale != (1.0, 1.0):
            area = u(*self.crop_scale) * S_h * S_w
            ratio = math.exp(u(math.log(self.crop_ratio[0]), math.log(self.crop_ratio[1])))
            h = min(S_h, max(1, round(math.sqrt(area / ratio))))
            w = min(S_w, max(1, round(math.sqrt(area * ratio))))
            top, left = int(u() * (S_h - h + 1)), int(u() * (S_w - w + 1))
            x = x[:, top : top + h, left : left + w]
            x = F.interpolate(x[None], size=(S_h, S_w), mode="bilinear", align_corners=False)[0]
        if self.hflip and u() < 0.5:
            x = x.flip(-1)
        if self.vflip and u() < 0.5:
            x = x.flip(-2)
        if self.rot90 and S_h == S_w:
            x = torch.rot90(x, int(u() * 4) % 4, dims=(-2, -1))
        if self.contrast:
            mean = x.mean()
            x = (x - mean) * u(1 - self.contrast, 1 + self.contrast) + mean
        if self.brightness:
            x = x + u(-self.brightness, self.brightness)
        return x.clamp(0.0, 1.0)


class ImageDataset(Dataset):
    """Images and labels as ``{"images": (C, S, S), "y": ()}`` samples.

    Normalisation: ``(x - mean) / std`` after augmentation (defaults map ``[0, 1]`` to
    ``[-1, 1]``). Augmentation draws from torch's global random generator, which
    :func:`mfgtx.train.fit` seeds (and DataLoader workers reseed each epoch), so every epoch
    sees new draws and a seeded run repeats.

    Args:
        images: ``(N, C, S, S)`` float in ``[0, 1]``: a tensor, or
            :class:`~mfgtx.images.StoredImages` (read an image at a time).
        labels: ``(N,)`` class indices.
        augment: a :class:`SurfaceAugment` (``None`` for validation and test).
        mean, std: normalisation.
    """

    def __init__(
        self,
        images: Tensor | StoredImages,
        labels: Sequence[int] | np.ndarray | Tensor,
        *,
        augment: SurfaceAugment | None = None,
        mean: float = 0.5,
        std: float = 0.5,
    ) -> None:
        if len(images.shape) != 4:
            raise ValueError(f"images must be (N, C, S, S), found {tuple(images.shape)}")
        y = torch.as_tensor(np.asarray(labels), dtype=torch.long)
        if y.shape != (images.shape[0],):
            raise ValueError(f"labels must be ({images.shape[0]},), found {tuple(y.shape)}")
        self.images, self.y, self.augment = images, y, augment
        self.mean, self.std = mean, std

    def __len__(self) -> int:
        return self.images.shape[0]

    def __getitem__(self, i: int) -> dict[str, Any]:
        x = self.images[i]
        if self.augment is not None:
            x = self.augment(x)
        return {"images": (x - self.mean) / self.std, "y": self.y[i]}


def class_weights(labels: Sequence[int] | np.ndarray, num_classes: int) -> tuple[float, ...]:
    """Inverse-frequency class weights with mean 1 over the classes present (rare defects
    weigh more); an absent class gets weight 1.

    Example:
        >>> class_weights([0, 0, 0, 1], 2)
        (0.5, 1.5)
    """
    counts = np.bincount(np.asarray(labels, dtype=np.int64), minlength=num_classes)
    if counts.shape[0] != num_classes:
        raise ValueError(f"labels hold classes >= num_classes={num_classes}")
    present = counts > 0
    w = np.ones(num_classes)
    w[present] = 1.0 / counts[present]
    w[present] *= present.sum() / w[present].sum()
    return tuple(float(v) for v in w)
