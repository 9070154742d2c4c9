"""Full-size inspection photos cut into square tiles, one batch at a time.

Shape legend: ``H`` height, ``W`` width of a photo (pixels), ``S`` tile side, ``n`` tiles of
one photo, ``B`` tiles of a batch, ``C`` colour channels (grey photos have none).

A camera photo of a strip or a part (say 1130 x 460 px) is far larger than the patches a
:class:`~mfgtx.models.DefectViT` looks at, and a defect covers a few hundred pixels of it. The
photo is therefore cut into tiles of :attr:`TileSpec.size` pixels, :attr:`TileSpec.stride`
apart (``stride < size`` overlaps them). Along each axis the tiles start at ``0, stride,
2 * stride, ...``; when the photo is not a whole number of strides long, one more tile is
placed flush with the far edge, so every pixel is in at least one tile and no tile hangs over
the edge (that last tile overlaps its neighbour more than the others). Tiles are numbered row
by row, left to right, and each carries its ``(top, left)`` corner in the photo.

:func:`iter_tiles` reads one photo at a time and hands out batches of at most ``batch_size``
tiles, so a folder of photos never needs all of its tiles in memory at once.
:func:`tile_index` lists every tile of a set of photos with its lot: the photo itself unless
the manifest gives lots, so that the tiles of one photo never straddle a train/test split.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from mfgtx.images.io import DEFAULT_MAX_PIXELS, ImageError, ImageSource, read_image

__all__ = ["TileBatch", "TileSpec", "cut_tiles", "iter_tiles", "tile_index"]


def _starts(length: int, size: int, stride: int) -> np.ndarray:
    """Tile starts along one axis: ``0, stride, ...`` and one flush with the far edge."""
    starts = np.arange(0, length - size + 1, stride, dtype=np.int64)
    if starts[-1] != length - size:
        starts = np.append(starts, length - size)
    return starts


@dataclass(frozen=True)
class TileSpec:
    """How photos are cut: square tiles of ``size`` pixels, ``stride`` pixels apart.

    Args:
        size: tile side in pixels (the model input, e.g. 64).
        stride: distance between neighbouring tiles; ``None`` means ``size`` (tiles touch,
            no overlap). At most ``size``, or pixels between tiles would never be looked at.

    Example:
        >>> spec = TileSpec(size=64)
        >>> spec.count(460, 1130)  # 8 rows x 18 columns, the last of each flush with the edge
        144
        >>> spec.positions(100, 150)[:, 1].tolist()  # left corners: 0, 64 and flush at 86
        [0, 64, 86, 0, 64, 86]
    """

    size: int = 64
    stride: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"size must be a positive whole number of pixels, found {self.size!r}")
        if self.stride is not None and (
            isinstance(self.stride, bool)
            or not isinstance(self.stride, int)
            or not 1 <= self.stride <= self.size
        ):
            raise ValueError(
                f"stride must be a whole number of pixels from 1 to size={self.size} (tiles "
                f"further apart would leave pixels unseen), found {self.stride!r}"
            )

    @property
    def step(self) -> int:
        """The stride in pixels (``size`` when ``stride`` is ``None``)."""
        return self.size if self.stride is None else self.stride

    def check(self, height: int, width: int, *, name: str = "image") -> None:
        """Raise :class:`~mfgtx.images.ImageError` naming ``name`` if a tile does not fit."""
        if height < self.size or width < self.size:
            raise ImageError(
                name,
                f"{width}x{height} pixels is smaller than one {self.size}x{self.size} tile; "
                "use a smaller tile size or leave the photo out",
            )

    def positions(self, height: int, width: int, *, name: str = "image") -> np.ndarray:
        """``(n, 2)`` int64 ``(top, left)`` corner of every tile, row by row.

        Raises:
            ImageError: the photo is smaller than one tile (names ``name`` and both sizes).
        """
        self.check(height, width, name=name)
        tops = _starts(height, self.size, self.step)
        lefts = _starts(width, self.size, self.step)
        grid = np.stack(np.meshgrid(tops, lefts, indexing="ij"), axis=-1)  # (rows, cols, 2)
        return grid.reshape(-1, 2)  # (n, 2)

    def count(self, height: int, width: int) -> int:
        """Number of tiles of an ``height x width`` photo."""
        self.check(height, width)
        rows = _starts(height, self.size, self.step).size
        return int(rows * _starts(width, self.size, self.step).size)


def cut_tiles(
    image: np.ndarray, spec: TileSpec, *, name: str = "image"
) -> tuple[np.ndarray, np.ndarray]:
    """All tiles of one photo.

    Args:
        image: ``(H, W)`` grey or ``(H, W, C)`` colour uint8 array.
        spec: the tiling.
        name: the photo, for error messages.

    Returns:
        ``(tiles, positions)``: ``(n, S, S)`` or ``(n, S, S, C)`` uint8 copies and their
        ``(n, 2)`` ``(top, left)`` corners.

    Example:
        >>> img = np.arange(12 * 20, dtype=np.uint8).reshape(12, 20)
        >>> tiles, pos = cut_tiles(img, TileSpec(size=8))
        >>> tiles.shape, pos.tolist()
        ((6, 8, 8), [[0, 0], [0, 8], [0, 12], [4, 0], [4, 8], [4, 12]])
        >>> bool((tiles[5] == img[4:12, 12:20]).all())
        True
    """
    if image.ndim not in (2, 3) or image.dtype != np.uint8:
        raise ValueError(
            f"{name}: expected an (H, W) or (H, W, C) uint8 image, found shape "
            f"{image.shape} of {image.dtype}"
        )
    positions = spec.positions(image.shape[0], image.shape[1], name=name)
    s = spec.size
    tiles = np.stack([image[t : t + s, left : left + s] for t, left in positions])
    return tiles, positions


@dataclass(frozen=True)
class TileBatch:
    """Up to ``batch_size`` tiles from :func:`iter_tiles`, in photo order.

    Attributes:
        tiles: ``(B, S, S)`` or ``(B, S, S, 3)`` uint8.
        image: ``(B,)`` position of each tile's photo in the ``sources`` given.
        top, left: ``(B,)`` corner of each tile in its photo.
    """

    tiles: np.ndarray
    image: np.ndarray
    top: np.ndarray
    left: np.ndarray

    def __len__(self) -> int:
        return int(self.image.shape[0])


def iter_tiles(
    sources: Iterable[ImageSource],
    spec: TileSpec,
    *,
    batch_size: int = 256,
    mode: Literal["L", "RGB"] = "L",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    errors: list[ImageError] | None = None,
) -> Iterator[TileBatch]:
    """Tiles of many photos in batches, reading one photo at a time.

    At most one decoded photo and one batch are held at a time (a batch may hold the tiles
    of several photos, and the tiles of one photo may run over two batches).

    Args:
        sources: photo paths or ``(name, bytes)`` (see :func:`~mfgtx.images.read_image`).
        spec: the tiling.
        batch_size: most tiles per batch.
        mode: ``"L"`` grey or ``"RGB"``, as :func:`~mfgtx.images.read_image`.
        max_pixels: largest accepted photo (decompression-bomb guard).
        errors: if a list, a photo that cannot be read or is smaller than a tile is appended
            to it as an :class:`~mfgtx.images.ImageError` and skipped; if ``None`` it raises.

    Yields:
        :class:`TileBatch`, each a fresh array the caller may keep.

    Example:
        >>> import io
        >>> from PIL import Image
        >>> buf = io.BytesIO()
        >>> Image.new("L", (100, 70), 9).save(buf, format="PNG")
        >>> photos = [("a.png", buf.getvalue()), ("b.png", buf.getvalue())]
        >>> [(len(b), b.image.tolist()) for b in iter_tiles(photos, TileSpec(64), batch_size=3)]
        [(3, [0, 0, 0]), (3, [0, 1, 1]), (2, [1, 1])]
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, found {batch_size!r}")
    pending: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # (tiles, image, positions)
    held = 0
    for i, source in enumerate(sources):
        name = source[0] if isinstance(source, tuple) else str(source)
        try:
            image = read_image(source, mode=mode, min_size=1, max_pixels=max_pixels)
            spec.check(image.shape[0], image.shape[1], name=name)
        except ImageError as e:
            if errors is None:
                raise
            errors.append(e)
            continue
        positions = spec.positions(image.shape[0], image.shape[1], name=name)
        start = 0
        while start < len(positions):
            take = min(batch_size - held, len(positions) - start)
            chunk = positions[start : start + take]
            s = spec.size
            tiles = np.stack([image[t : t + s, left : left + s] for t, left in chunk])
            pending.append((tiles, np.full(take, i, dtype=np.int64), chunk))
            held += take
            start += take
            if held == batch_size:
                yield _batch(pending)
                pending, held = [], 0
    if held:
        yield _batch(pending)


def _batch(parts: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> TileBatch:
    tiles = np.concatenate([p[0] for p in parts])
    image = np.concatenate([p[1] for p in parts])
    positions = np.concatenate([p[2] for p in parts])
    return TileBatch(tiles, image, positions[:, 0].copy(), positions[:, 1].copy())


def tile_index(
    names: Sequence[str],
    shapes: Sequence[tuple[int, int]],
    spec: TileSpec,
    *,
    lots: Sequence[str] | None = None,
) -> pd.DataFrame:
    """One row per tile of every photo: ``image``, ``name``, ``lot``, ``top``, ``left``.

    The frame says which tiles exist without cutting any; join tile labels or scores to it on
    ``(image, top, left)``. ``lot`` is the photo's name unless ``lots`` gives one lot per
    photo (a coil, a batch, a shift from the manifest): split on it so that the tiles of one
    photo, which overlap and share its lighting, never land in both train and test.

    Args:
        names: one name per photo (its path), used as the default lot.
        shapes: ``(height, width)`` of each photo.
        spec: the tiling.
        lots: one lot per photo, or ``None``.

    Raises:
        ValueError: lengths differ, a name or lot is empty, or two photos share a name.
        ImageError: a photo is smaller than one tile.

    Example:
        >>> t = tile_index(["a.png", "b.png"], [(64, 100), (64, 64)], TileSpec(64))
        >>> t[["image", "lot", "top", "left"]].values.tolist()
        [[0, 'a.png', 0, 0], [0, 'a.png', 0, 36], [1, 'b.png', 0, 0]]
    """
    names = [str(n) for n in names]
    if len(shapes) != len(names) or (lots is not None and len(lots) != len(names)):
        got = "" if lots is None else f", {len(lots)} lots"
        raise ValueError(
            f"tile_index needs one shape (and lot) per photo: {len(names)} names, "
            f"{len(shapes)} shapes{got}"
        )
    lot_of = names if lots is None else [str(lot) for lot in lots]
    for what, values in (("name", names), ("lot", lot_of)):
        empty = [i for i, v in enumerate(values) if not v.strip() or v == "nan"]
        if empty:
            raise ValueError(f"photo(s) at position(s) {empty[:10]} have an empty {what}")
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if seen.setdefault(n, i) != i:
            raise ValueError(f"photos {seen[n]} and {i} have the same name {n!r}")
    parts = []
    for i, (name, (h, w)) in enumerate(zip(names, shapes, strict=True)):
        pos = spec.positions(int(h), int(w), name=name)
        parts.append(
            pd.DataFrame(
                {"image": i, "name": name, "lot": lot_of[i], "top": pos[:, 0], "left": pos[:, 1]}
            )
        )
    columns = {"image": "int64", "name": object, "lot": object, "top": "int64", "left": "int64"}
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in columns.items()})
    return pd.concat(parts, ignore_index=True).astype(columns)
