"""Decoded photos kept on disk, not in memory, and read back one tile at a time.

Shape legend: ``H`` height, ``W`` width of a photo, ``C`` channels (grey photos have none),
``S`` tile side, ``n`` tiles read at once.

A tiled job visits every tile of every photo many times (each epoch draws the training tiles
at random; validation, threshold choice and judging score the others), so decoding a PNG per
tile is far too slow, and keeping every decoded photo in memory makes the job's memory grow
with the number and size of the photos (200 photos of 2900 x 1000 px RGB hold 1.7 GB).
:class:`PhotoStore` decodes each photo once into a scratch file and reads a tile back with one
or two ``pread`` calls, so the process holds one tile (or one batch) at a time; the operating
system's page cache, which is not the process's memory, keeps the file fast to read.

The file has no name (``tempfile.TemporaryFile``, ``O_TMPFILE`` on Linux): it disappears when
the store is closed or the process ends, however it ends, so a killed job leaves nothing
behind. It lies in ``folder`` (default: ``TMPDIR``, else the system's temporary folder) and
needs ``H * W * C`` bytes per photo there. Forked worker processes (a ``DataLoader`` with
workers) read it through the same descriptor.

:class:`StoredImages` does the same for whole images resized to one size (a ViT job without
tiles): each image once into a scratch file, read back a batch at a time.

Layout: each photo is stored as vertical strips of ``block`` columns (``block >= S``), each
strip row by row, so the ``S`` rows of a tile are one contiguous read in one strip (or two
when the tile crosses a strip border).
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PhotoStore", "StoredImages"]


@dataclass(frozen=True)
class _Photo:
    offset: int  # where its first strip starts in the file
    height: int
    width: int
    channels: int  # 0 for (H, W) grey


class PhotoStore:
    """Photos decoded once into a scratch file; tiles read back by position.

    Args:
        tile_size: the largest tile side ``S`` that will be read (sets the strip width).
        folder: where the scratch file lies (``None``: ``TMPDIR`` or the system default).
        block: strip width in pixels (at least ``tile_size``).

    Example:
        >>> store = PhotoStore(tile_size=8)
        >>> img = np.arange(20 * 30, dtype=np.uint8).reshape(20, 30)
        >>> store.add(img)
        0
        >>> bool((store.tile(0, 4, 22, 8) == img[4:12, 22:30]).all())
        True
        >>> store.tiles([0, 0], [0, 12], [0, 3], 8).shape
        (2, 8, 8)
        >>> store.close()
    """

    def __init__(self, tile_size: int, *, folder: str | None = None, block: int = 256) -> None:
        if tile_size < 1:
            raise ValueError(f"tile_size must be >= 1 pixel, found {tile_size}")
        self.block = max(int(block), int(tile_size))
        self.tile_size = int(tile_size)
        self.folder = folder or tempfile.gettempdir()
        self._file = tempfile.TemporaryFile(dir=self.folder, prefix="mfgtx-photos-")
        self._fd = self._file.fileno()
        self._photos: list[_Photo] = []
        self._end = 0

    def __len__(self) -> int:
        return len(self._photos)

    @property
    def nbytes(self) -> int:
        """Bytes of decoded photos in the scratch file."""
        return self._end

    def shape(self, photo: int) -> tuple[int, ...]:
        """``(H, W)`` or ``(H, W, C)`` of a stored photo."""
        p = self._photos[photo]
        return (p.height, p.width) + ((p.channels,) if p.channels else ())

    def add(self, image: np.ndarray) -> int:
        """Store a uint8 photo ``(H, W)`` or ``(H, W, C)``; returns its number.

        Raises:
            OSError: the scratch folder is full (the message names it and the space needed).
        """
        if image.dtype != np.uint8 or image.ndim not in (2, 3):
            raise ValueError(f"expected an (H, W) or (H, W, C) uint8 photo, found {image.shape} "
                             f"of {image.dtype}")  # fmt: skip
        h, w = image.shape[:2]
        photo = _Photo(self._end, h, w, image.shape[2] if image.ndim == 3 else 0)
        parts = [np.ascontiguousarray(image[:, a : a + self.block])
                 for a in range(0, w, self.block)]  # fmt: skip
        at = self._end
        try:
            for part in parts:  # (H, b[, C]) strip by strip
                data = part.tobytes()
                written = 0
                while written < len(data):
                    written += os.pwrite(self._fd, data[written:], at + written)
                at += len(data)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise OSError(
                    e.errno,
                    f"no space left in {self.folder} for the decoded photos ({at / 2**20:.0f} MB "
                    f"so far, {image.nbytes / 2**20:.1f} MB for this one); point TMPDIR at a "
                    "folder with room for every photo's pixels",
                ) from e
            raise
        self._photos.append(photo)
        self._end = at
        return len(self._photos) - 1

    def tile(self, photo: int, top: int, left: int, size: int) -> np.ndarray:
        """The ``size`` x ``size`` tile at ``(top, left)``: ``(S, S)`` or ``(S, S, C)``."""
        p = self._photos[photo]
        if (
            size > self.block
            or top < 0
            or left < 0
            or top + size > p.height
            or (left + size > p.width)
        ):
            raise ValueError(f"tile {size} px at ({top}, {left}) lies outside photo {photo} "
                             f"({p.width}x{p.height})")  # fmt: skip
        c = max(p.channels, 1)
        first, last = left // self.block, (left + size - 1) // self.block
        parts = []
        for b in range(first, last + 1):
            a = b * self.block
            width = min(self.block, p.width - a)
            start = p.offset + (a * p.height + top * width) * c  # strips are H x width
            data = os.pread(self._fd, size * width * c, start)
            strip = np.frombuffer(data, np.uint8).reshape(size, width, c)
            lo, hi = max(left - a, 0), min(left + size - a, width)
            parts.append(strip[:, lo:hi])
        out = parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)
        return np.ascontiguousarray(out if p.channels else out[..., 0])

    def tiles(
        self, photo: Sequence[int] | np.ndarray, top: Sequence[int] | np.ndarray,
        left: Sequence[int] | np.ndarray, size: int,
    ) -> np.ndarray:  # fmt: skip
        """``(n, S, S[, C])`` tiles at ``(photo[i], top[i], left[i])``."""
        cols = (np.asarray(photo), np.asarray(top), np.asarray(left))
        if not len(cols[0]):
            c = self._photos[0].channels if self._photos else 0
            return np.zeros((0, size, size) + ((c,) if c else ()), np.uint8)
        return np.stack([self.tile(int(p), int(t), int(lf), size)
                         for p, t, lf in zip(*cols, strict=True)])  # fmt: skip

    def photo(self, photo: int) -> np.ndarray:
        """A whole stored photo (for a figure or a test; a job reads tiles)."""
        p = self._photos[photo]
        c = max(p.channels, 1)
        strips, a = [], 0
        while a < p.width:
            width = min(self.block, p.width - a)
            start = p.offset + a * p.height * c
            data = os.pread(self._fd, p.height * width * c, start)
            strips.append(np.frombuffer(data, np.uint8).reshape(p.height, width, c))
            a += width
        out = np.concatenate(strips, axis=1)
        return np.ascontiguousarray(out if p.channels else out[..., 0])

    def close(self) -> None:
        """Remove the scratch file (also done when the process ends)."""
        self._file.close()

    def __enter__(self) -> PhotoStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class StoredImages:
    """Images of one size ``(N, C, S, S)`` float32 kept in a scratch file, not in memory.

    A whole-image ViT job resizes every image once (:func:`mfgtx.images.load_images`) and
    appends it here; training, validation, the threshold, the report and its baselines then
    read a batch at a time, so the job holds one batch, not every image (10,000 RGB images of
    224 px are 6 GB as float32). Pixels are kept exactly as resized (float32), so what a job
    judges is what scoring computes. The file is nameless, as :class:`PhotoStore`'s.

    Indexing: ``images[i]`` is one image ``(C, S, S)`` and ``images[a:b]`` a batch
    ``(n, C, S, S)``, both tensors read from the file; ``images[idx]`` with an array of
    positions is a view of those images (nothing is read), as a set of a job is passed on.

    Example:
        >>> import torch
        >>> images = StoredImages((1, 4, 4))
        >>> for k in range(3):
        ...     _ = images.append(torch.full((1, 4, 4), float(k)))
        >>> later = images[np.array([2, 0])]
        >>> later.shape, later[0:2][:, 0, 0, 0].tolist()
        ((2, 1, 4, 4), [2.0, 0.0])
        >>> images.close()
    """

    ndim = 4

    def __init__(self, item_shape: Sequence[int], *, folder: str | None = None) -> None:
        self.item_shape = tuple(int(v) for v in item_shape)
        self._item_bytes = int(np.prod(self.item_shape)) * 4
        self.folder = folder or tempfile.gettempdir()
        self._file = tempfile.TemporaryFile(dir=self.folder, prefix="mfgtx-images-")
        self._count = 0
        self._positions: np.ndarray | None = None  # a view's images; None: all, in order

    def append(self, image: Any) -> int:
        """Store one image ``(C, S, S)`` (a float tensor or array); returns its position."""
        if self._positions is not None:
            raise ValueError("a view of stored images cannot take new images")
        data = np.ascontiguousarray(np.asarray(image, dtype=np.float32))
        if data.shape != self.item_shape:
            raise ValueError(f"expected an image of shape {self.item_shape}, found {data.shape}")
        raw, at = data.tobytes(), self._count * self._item_bytes
        try:
            written = 0
            while written < len(raw):
                written += os.pwrite(self._file.fileno(), raw[written:], at + written)
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise OSError(
                    e.errno,
                    f"no space left in {self.folder} for the resized images ({at / 2**20:.0f} MB "
                    "so far); point TMPDIR at a folder with room for them",
                ) from e
            raise
        self._count += 1
        return self._count - 1

    def _all(self) -> np.ndarray:
        return np.arange(self._count) if self._positions is None else self._positions

    def __len__(self) -> int:
        return self._count if self._positions is None else len(self._positions)

    @property
    def shape(self) -> tuple[int, ...]:
        return (len(self), *self.item_shape)

    @property
    def nbytes(self) -> int:
        """Bytes of pixels these images hold (in the file, not in memory)."""
        return len(self) * self._item_bytes

    def _read(self, positions: np.ndarray) -> Any:
        import torch

        out = np.empty((len(positions), *self.item_shape), np.float32)
        fd, size = self._file.fileno(), self._item_bytes
        for k, p in enumerate(positions):
            out[k] = np.frombuffer(os.pread(fd, size, int(p) * size), np.float32).reshape(
                self.item_shape
            )
        return torch.from_numpy(out)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, (int, np.integer)):
            return self._read(self._all()[[int(key)]])[0]
        if isinstance(key, slice):
            return self._read(self._all()[key])
        idx = np.asarray(key)
        if idx.dtype == bool:
            idx = np.flatnonzero(idx)
        if idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer):
            raise TypeError(f"index stored images by a position, a slice or positions, not {key!r}")
        view = object.__new__(StoredImages)
        view.item_shape, view._item_bytes, view.folder = (
            self.item_shape, self._item_bytes, self.folder
        )  # fmt: skip
        view._file, view._count, view._positions = self._file, self._count, self._all()[idx]
        return view

    def close(self) -> None:
        """Remove the scratch file (also done when the process ends); views of it end too."""
        self._file.close()
