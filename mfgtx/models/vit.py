"""Vision Transformer for defect image patches (surface inspection), built on :mod:`mfgtx.nn`.

Shape legend: ``B`` batch, ``C`` image channels (1 grey, 3 RGB), ``H``/``W`` image height and
width, ``P`` ``patch_size``, ``h``/``w`` patch grid (``H/P``, ``W/P``), ``N = h*w`` patch
tokens, ``D`` ``d_model``, ``K`` classes.

An image ``(B, C, H, W)`` becomes ``N`` tokens of width ``D``: either by a linear map of each
``P x P`` patch (``stem="linear"``, ViT) or by a small convolutional stem of stride-2 3x3
convolutions (``stem="conv"``, Xiao et al. 2021, "Early convolutions help transformers see
better"), which trains far better from scratch on a few thousand images. Positions are a
learned table (bicubically resampled when the patch grid differs from the configured one) or
a fixed 2-D sine-cosine code (half of ``D`` for rows, half for columns, evaluated at
fractional positions so another image size spans the same range). A class token or the mean
of the patch tokens feeds a linear head.

Stochastic depth (Huang et al. 2016) is the encoder's own (``TransformerConfig.drop_path``,
:class:`mfgtx.nn.DropPath`): in training, whole blocks are skipped per sample with probability
rising linearly from 0 (first block) to ``drop_path`` (last block); the residual update of a
kept block is scaled by ``1 / (1 - p)``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, cast

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models._settings import StackSettings, stack_config
from mfgtx.models.loss import ClassLoss
from mfgtx.nn import Encoder, EncoderBlock, StackOutput, TransformerConfig, init_weights

__all__ = ["DefectSizeGuard", "DefectSizeWarning", "DefectViT", "ViTConfig", "resized_defect_px"]


class DefectSizeWarning(UserWarning):
    """The smallest defect of interest shrinks below what one patch token can carry."""


def resized_defect_px(min_defect_px: float, source_size: int, image_size: int) -> float:
    """Side in model pixels of a defect of ``min_defect_px`` source pixels after resizing.

    >>> resized_defect_px(6, source_size=512, image_size=128)
    1.5
    """
    return float(min_defect_px) * image_size / source_size


def _check_defect_size(
    min_defect_px: float,
    source_size: int,
    image_size: int,
    patch_size: int,
    strict: bool,
    stacklevel: int,
) -> None:
    side = resized_defect_px(min_defect_px, source_size, image_size)
    if side * 2 >= patch_size:
        return
    msg = (
        f"a defect of {min_defect_px:g} px in {source_size} px images resized to "
        f"{image_size} px is {side:.3g} px, less than half a patch ({patch_size} px / 2): it "
        f"fills under a quarter of its patch token and can vanish in the texture. Use a larger "
        f"image_size (>= {math.ceil(patch_size * source_size / (2 * min_defect_px))}), a smaller "
        "patch_size, or crop tiles instead of resizing"
    )
    if strict:
        raise ValueError(msg)
    warnings.warn(msg, DefectSizeWarning, stacklevel=stacklevel)


@dataclass(frozen=True)
class ViTConfig:
    """Configuration of a :class:`DefectViT`.

    Args:
        image_size: side of the (square) training images; other sizes that are multiples of
            ``patch_size`` are accepted at run time (positions are interpolated).
        patch_size: side ``P`` of a patch token; a power of two for ``stem="conv"``.
        in_chans: 1 (grey) or 3 (RGB).
        num_classes: classes ``K`` (>= 2).
        d_model, n_heads, n_layers, d_ff: the Transformer encoder (Pre-LN, GELU).
        dropout: dropout on embeddings, residuals and feed-forward.
        drop_path: stochastic depth rate of the last block, in ``[0, 1)``.
        stem: ``"linear"`` (patchify) or ``"conv"`` (stride-2 3x3 convolutions with
            BatchNorm and ReLU, then a 1x1 convolution to ``d_model``).
        stem_channels: width of the first convolution of the conv stem (doubled at each
            stride-2 step, capped at ``d_model``).
        pooling: ``"cls"`` token or ``"mean"`` of the patch tokens.
        positional: ``"learned"`` or ``"sinusoidal"`` (2-D; needs ``d_model % 4 == 0``).

    The training loss (class weights, label smoothing: :class:`~mfgtx.models.ClassLoss`,
    given to :class:`DefectViT`) and the small-defect guard (:class:`DefectSizeGuard`, which
    checks a config against the data) are not part of the config: they do not shape the model.

    The defaults of the model's settings are the ``vit`` section's of a job file
    (:class:`mfgtx.kinds.VitSection` takes them from here), sized for plant image sets of a
    few hundred images: a conv stem, 8-pixel patches, 4 layers of width 64 with 4 heads,
    ``d_ff`` 128, dropout 0.1. A ViT-Tiny names its values, as in the example below.

    Example:
        >>> cfg = ViTConfig(image_size=224, patch_size=16, in_chans=1, num_classes=6,
        ...                 d_model=192, n_heads=3, n_layers=12, d_ff=768, dropout=0.0,
        ...                 stem="linear")  # ViT-Tiny
        >>> cfg.grid, cfg.n_patches
        (14, 196)
        >>> ViTConfig(image_size=100, patch_size=16)
        Traceback (most recent call last):
        ...
        ValueError: image_size=100 is not a multiple of patch_size=16
    """

    image_size: int = 224
    patch_size: int = 8
    in_chans: int = 1
    num_classes: int = 6
    d_model: int = 64
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 128
    dropout: float = 0.1
    drop_path: float = 0.0
    stem: Literal["linear", "conv"] = "conv"
    stem_channels: int = 24
    pooling: Literal["cls", "mean"] = "cls"
    positional: Literal["learned", "sinusoidal"] = "learned"

    #: keys that configs saved by earlier versions hold and that no longer shape the model
    #: (the training loss's and the small-defect guard's): dropped when such a bundle loads
    RETIRED_KEYS: ClassVar[frozenset[str]] = frozenset(
        {"class_weights", "label_smoothing", "min_defect_px", "source_size", "strict_defect_size"}
    )

    def __post_init__(self) -> None:
        for name in ("image_size", "num_classes"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        if self.in_chans not in (1, 3):
            raise ValueError(f"in_chans must be 1 (grey) or 3 (RGB), found {self.in_chans!r}")
        if self.num_classes < 2:
            raise ValueError(f"num_classes must be >= 2, found {self.num_classes}")
        ViTConfig.check(self, image_size=self.image_size)

    @staticmethod
    def check(settings: ViTSettings, *, image_size: int | None = None) -> None:
        """Refuse settings the ViT cannot take whatever the data: each field's range and the
        rules between fields that no data decides; with ``image_size``, also that it is a
        multiple of ``patch_size`` (the channels and classes are checked by the config).

        The config calls it, and so does a ViT job's ``vit`` section
        (:class:`mfgtx.kinds.VitSection`, same names) when the job file is read: one copy of
        each rule, refused before any image is read.

        Raises:
            ValueError: naming the field, its value and what is expected.

        Example:
            >>> ViTConfig(d_model=30, n_heads=4)
            Traceback (most recent call last):
            ...
            ValueError: d_model=30 is not divisible by n_heads=4
        """
        s = settings
        for name in ("patch_size", "stem_channels"):
            v = getattr(s, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        if image_size is not None and image_size % s.patch_size:
            raise ValueError(
                f"image_size={image_size} is not a multiple of patch_size={s.patch_size}"
            )
        if s.stem not in ("linear", "conv"):
            raise ValueError(f"stem must be 'linear' or 'conv', found {s.stem!r}")
        if s.stem == "conv" and s.patch_size & (s.patch_size - 1):
            raise ValueError(
                f"stem='conv' halves the image per layer: patch_size must be a power of two, "
                f"found {s.patch_size}"
            )
        if s.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', found {s.pooling!r}")
        if s.positional not in ("learned", "sinusoidal"):
            raise ValueError(
                f"positional must be 'learned' or 'sinusoidal', found {s.positional!r}"
            )
        if s.positional == "sinusoidal" and s.d_model % 4:
            raise ValueError(
                f"2-D sinusoidal positions need d_model divisible by 4, found {s.d_model}"
            )
        if not 0.0 <= s.drop_path < 1.0:
            raise ValueError(f"drop_path must be in [0, 1), found {s.drop_path!r}")
        _stack(s)  # the Transformer's own rules: d_model / n_heads / d_ff / dropout ...

    @property
    def grid(self) -> int:
        """Patches per side at ``image_size``."""
        return self.image_size // self.patch_size

    @property
    def n_patches(self) -> int:
        return self.grid**2

    @property
    def transformer(self) -> TransformerConfig:
        return _stack(self)


class ViTSettings(StackSettings, Protocol):
    """The settings of a :class:`ViTConfig` that no data decides: the config's own, or those
    of a job section with the same names (:meth:`ViTConfig.check`)."""

    @property
    def patch_size(self) -> int: ...
    @property
    def drop_path(self) -> float: ...
    @property
    def stem(self) -> str: ...
    @property
    def stem_channels(self) -> int: ...
    @property
    def pooling(self) -> str: ...
    @property
    def positional(self) -> str: ...


def _stack(s: ViTSettings) -> TransformerConfig:
    """The encoder stack's config of ``s`` (Pre-LN, GELU; the model adds 2-D positions)."""
    return stack_config(
        s,
        activation="gelu",
        norm_first=True,
        positional="none",  # the model adds 2-D positions itself
        layer_norm_eps=1e-6,
        drop_path=s.drop_path,
    )


def _conv_stem(c: ViTConfig) -> nn.Sequential:
    """``(B, C, H, W) -> (B, D, H/P, W/P)`` with log2(P) stride-2 3x3 convs, then a 1x1 conv."""
    layers: list[nn.Module] = []
    width_in, width = c.in_chans, min(c.stem_channels, c.d_model)
    for _ in range(int(math.log2(c.patch_size))):
        layers += [
            nn.Conv2d(width_in, width, 3, stride=2, padding=1, bias=False),
            nn.BatchNorm2d(width),
            nn.ReLU(inplace=True),
        ]
        width_in, width = width, min(width * 2, c.d_model)
    layers.append(nn.Conv2d(width_in, c.d_model, 1))
    return nn.Sequential(*layers)


def sincos_2d(h: int, w: int, d_model: int, *, grid: int, base: float = 10000.0) -> Tensor:
    """2-D sine-cosine positions ``(h*w, D)``, rows first, at positions scaled to ``grid``.

    A grid of another size than ``grid`` is placed on the same range (positions
    ``i * grid / h``), which is the interpolation of the continuous code.
    """
    quarter = d_model // 4
    freq = base ** (-torch.arange(quarter, dtype=torch.float64) / quarter)  # (D/4,)
    rows = torch.arange(h, dtype=torch.float64) * (grid / h)  # (h,)
    cols = torch.arange(w, dtype=torch.float64) * (grid / w)  # (w,)
    r = rows[:, None] * freq[None]  # (h, D/4)
    q = cols[:, None] * freq[None]  # (w, D/4)
    r = torch.cat([r.sin(), r.cos()], 1)[:, None].expand(h, w, d_model // 2)  # (h, w, D/2)
    q = torch.cat([q.sin(), q.cos()], 1)[None].expand(h, w, d_model // 2)  # (h, w, D/2)
    return torch.cat([r, q], -1).reshape(h * w, d_model).float()  # (N, D)


@dataclass(frozen=True)
class DefectSizeGuard:
    """The small-defect guard: does the smallest defect of interest survive resizing?

    Args:
        min_defect_px: side in source pixels of the smallest defect that must stay
            detectable (``None``: no check).
        source_size: side in pixels of the images before they are resized to the model's
            ``image_size`` (default ``image_size``: no resizing).
        strict_defect_size: raise instead of warning when the guard fails.

    Small-defect rule: a defect of ``min_defect_px`` source pixels is
    ``min_defect_px * image_size / source_size`` pixels after resizing. It must be at least
    half a patch side (``>= patch_size / 2``), so that it covers at least a quarter of the
    pixels of the patch token that holds it; otherwise :meth:`check` raises a
    :class:`DefectSizeWarning` (``ValueError`` with ``strict_defect_size=True``). The conv stem
    sees single pixels in its first layers but still summarises each ``P x P`` area in one
    token, so the same rule applies to both stems.

    Example:
        >>> guard = DefectSizeGuard(min_defect_px=6, source_size=512, strict_defect_size=True)
        >>> try:
        ...     guard.check(ViTConfig(image_size=128, patch_size=16))
        ... except ValueError as e:
        ...     print(str(e).split(",")[0])
        a defect of 6 px in 512 px images resized to 128 px is 1.5 px
    """

    min_defect_px: float | None = None
    source_size: int | None = None
    strict_defect_size: bool = False

    def __post_init__(self) -> None:
        if self.source_size is not None and (
            not isinstance(self.source_size, int) or self.source_size < 1
        ):
            raise ValueError(f"source_size must be a positive integer, found {self.source_size!r}")
        if self.min_defect_px is not None and not self.min_defect_px > 0:
            raise ValueError(f"min_defect_px must be positive, found {self.min_defect_px!r}")

    def check(self, config: ViTConfig) -> None:
        """Warn (or raise, when strict) if the smallest defect is under half a patch of
        ``config`` after resizing; nothing when ``min_defect_px`` is ``None``.

        Raises:
            ValueError: with ``strict_defect_size``, the defect is too small.
        """
        if self.min_defect_px is None:
            return
        _check_defect_size(
            self.min_defect_px,
            self.source_size or config.image_size,
            config.image_size,
            config.patch_size,
            self.strict_defect_size,
            stacklevel=3,  # the warning names the line that called check
        )


class DefectViT(nn.Module):
    """Vision Transformer classifying defect image patches.

    Args:
        config: a :class:`ViTConfig`.
        loss: the training loss (class weights, label smoothing); default: plain
            cross-entropy. It shapes training only: a bundle keeps the config, not the loss.

    ``forward(images (B, C, H, W)) -> logits (B, K)``; ``H`` and ``W`` must be multiples of
    ``patch_size``. For :func:`mfgtx.train.fit`, batches are dicts with ``"images"`` and
    ``"y"`` (class index), as made by :class:`mfgtx.images.ImageDataset`.

    Example:
        >>> cfg = ViTConfig(image_size=32, patch_size=8, num_classes=3, d_model=16,
        ...                 n_heads=2, n_layers=2, d_ff=32, stem="conv")
        >>> model = DefectViT(cfg).eval()
        >>> model(torch.randn(2, 1, 32, 32)).shape
        torch.Size([2, 3])
        >>> model(torch.randn(2, 1, 48, 64)).shape     # another size: positions interpolated
        torch.Size([2, 3])
    """

    #: how :mod:`mfgtx.explain` draws its attention maps (the ``vit`` module there)
    explained_as = "vit"

    #: tensors that bundles saved by earlier versions hold and this model no longer has
    #: (the class weights, now the training loss's): ignored when such a bundle loads
    RETIRED_TENSORS: ClassVar[frozenset[str]] = frozenset({"class_weights"})

    def __init__(self, config: ViTConfig, *, loss: ClassLoss | None = None) -> None:
        super().__init__()
        self.config = c = config
        self.class_loss = loss or ClassLoss()  # how it trains; not saved
        weights = self.class_loss.class_weights
        if weights is not None and len(weights) != c.num_classes:
            raise ValueError(
                f"class_weights needs one positive weight per class ({c.num_classes}), "
                f"found {weights}"
            )
        if c.stem == "conv":
            self.stem: nn.Module = _conv_stem(c)
            # Channels-last kernels: oneDNN then runs the stem's convolutions, BatchNorm and
            # ReLU in NHWC, a quarter less time for the stem's forward and backward on the
            # 2-core CPU (issue 23). State-dict keys and values are unchanged.
            self.stem.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # stubs omit memory_format
        else:
            self.stem = nn.Conv2d(c.in_chans, c.d_model, c.patch_size, stride=c.patch_size)
        self.pos = (
            nn.Parameter(torch.zeros(1, c.n_patches, c.d_model))
            if c.positional == "learned"
            else None
        )
        self.cls = nn.Parameter(torch.zeros(1, 1, c.d_model)) if c.pooling == "cls" else None
        self.encoder = Encoder(c.transformer)  # initialises itself
        self.head = nn.Linear(c.d_model, c.num_classes)
        init_weights(self.head, n_layers=c.n_layers)
        if self.pos is not None:
            nn.init.normal_(self.pos, std=0.02)
        if self.cls is not None:
            nn.init.normal_(self.cls, std=0.02)

    @property
    def drop_rates(self) -> tuple[float, ...]:
        """Drop-path probability of each encoder block, from 0 to ``config.drop_path``."""
        return tuple(cast(EncoderBlock, block).drop_path.p for block in self.encoder.blocks)

    def positions(self, h: int, w: int) -> Tensor:
        """Position code ``(1, h*w, D)`` for an ``h x w`` patch grid."""
        c = self.config
        if self.pos is None:
            return sincos_2d(h, w, c.d_model, grid=c.grid).to(self.head.weight)[None]
        if (h, w) == (c.grid, c.grid):
            return self.pos
        table = self.pos.reshape(1, c.grid, c.grid, c.d_model).permute(0, 3, 1, 2)  # (1,D,g,g)
        table = F.interpolate(table, size=(h, w), mode="bicubic", align_corners=False)
        return table.permute(0, 2, 3, 1).reshape(1, h * w, c.d_model)  # (1, N, D)

    def tokens(self, images: Tensor) -> Tensor:
        """Images ``(B, C, H, W)`` -> position-coded patch tokens ``(B, N, D)``."""
        c = self.config
        if images.dim() != 4 or images.shape[1] != c.in_chans:
            raise ValueError(
                f"images must have shape (B, C={c.in_chans}, H, W), found {tuple(images.shape)}"
            )
        H, W = images.shape[-2:]
        if H % c.patch_size or W % c.patch_size:
            raise ValueError(
                f"image height and width must be multiples of patch_size={c.patch_size}, "
                f"found {H}x{W}"
            )
        x = self.stem(images)  # (B, D, h, w)
        h, w = x.shape[-2:]
        x = x.flatten(2).transpose(1, 2)  # (B, N, D)
        return x + self.positions(h, w)

    def _encode(self, images: Tensor, *, need_weights: bool = False) -> StackOutput:
        """Encoded tokens ``(B, N', D)``, the CLS token first when there is one."""
        x = self.tokens(images)  # (B, N, D)
        if self.cls is not None:
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1)  # (B, 1+N, D)
        return self.encoder(x, need_weights=need_weights)

    def _pool(self, x: Tensor) -> Tensor:
        """``(B, N', D) -> (B, D)``: the CLS token or the mean of the patch tokens."""
        return x[:, 0] if self.cls is not None else x.mean(1)

    def features(self, images: Tensor) -> Tensor:
        """Pooled image summaries ``(B, D)`` (input of the head)."""
        return self._pool(self._encode(images).output)

    def forward_with_attention(self, images: Tensor) -> tuple[Tensor, tuple[Tensor, ...]]:
        """Logits (as :meth:`forward`) and per-layer attention weights ``(B, heads, N', N')``
        from one pass on the explicit attention path (``N' = 1 + N`` with a CLS token, which
        comes first). Meant for eval mode: in training mode dropout and stochastic depth
        apply as in :meth:`forward`."""
        out = self._encode(images, need_weights=True)
        return self.head(self._pool(out.output)), out.weights or ()

    def forward(self, images: Tensor) -> Tensor:
        """Images ``(B, C, H, W)`` -> logits ``(B, K)``."""
        return self.head(self.features(images))

    # ------------------------------------------------------------------ training protocol

    def predict(self, batch: dict[str, Any]) -> Tensor:
        return self(batch["images"])

    def loss(self, batch: dict[str, Any]) -> Tensor:
        logits = self(batch["images"]).float()
        return self.class_loss(logits, batch["y"].long().view(-1))
