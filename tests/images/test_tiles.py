"""Tiles of full-size photos: the grid covers every pixel, batches are lazy, lots follow photos."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from mfgtx.images import ImageError, TileSpec, cut_tiles, iter_tiles, tile_index
from mfgtx.images import tiles as tiles_module


def png_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"size": 0}, "size must be a positive whole number of pixels, found 0"),
        ({"size": 64.0}, "size must be a positive whole number of pixels, found 64.0"),
        ({"size": True}, "size must be"),
        ({"size": 64, "stride": 65}, r"stride must be .* from 1 to size=64 .* found 65"),
        ({"size": 64, "stride": 0}, "stride must be"),
        ({"size": 64, "stride": 32.5}, "stride must be"),
    ],
)
def test_spec_is_validated_naming_the_field(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TileSpec(**kwargs)


def test_spec_is_frozen() -> None:
    spec = TileSpec(64, 32)
    with pytest.raises(AttributeError):
        spec.size = 32  # type: ignore[misc]
    assert spec.step == 32 and TileSpec(48).step == 48


def test_full_size_photo_grid_is_flush_with_both_far_edges() -> None:
    pos = TileSpec(64).positions(460, 1130)
    tops, lefts = np.unique(pos[:, 0]), np.unique(pos[:, 1])
    assert tops.tolist() == [0, 64, 128, 192, 256, 320, 384, 396]  # 396 = 460 - 64
    assert lefts[:3].tolist() == [0, 64, 128] and lefts[-2:].tolist() == [1024, 1066]
    assert len(pos) == 8 * 18 == TileSpec(64).count(460, 1130)
    # row by row, left to right
    assert pos[:2].tolist() == [[0, 0], [0, 64]] and pos[18].tolist() == [64, 0]
    # an exact multiple gets no extra tile; an overlapping stride keeps the same rule
    assert TileSpec(64).count(128, 192) == 6
    assert np.unique(TileSpec(64, 48).positions(64, 200)[:, 1]).tolist() == [0, 48, 96, 136]


@settings(max_examples=60, deadline=None)
@given(
    size=st.integers(1, 40),
    stride_frac=st.floats(0.05, 1.0),
    extra_h=st.integers(0, 90),
    extra_w=st.integers(0, 90),
)
def test_every_pixel_is_covered_and_no_tile_leaves_the_photo(
    size: int, stride_frac: float, extra_h: int, extra_w: int
) -> None:
    stride = max(1, round(size * stride_frac))
    h, w = size + extra_h, size + extra_w
    pos = TileSpec(size, stride).positions(h, w)
    covered = np.zeros((h, w), dtype=int)
    for top, left in pos:
        assert 0 <= top <= h - size and 0 <= left <= w - size
        covered[top : top + size, left : left + size] += 1
    assert (covered >= 1).all()
    assert len({tuple(p) for p in pos.tolist()}) == len(pos)  # no tile twice


def test_photo_smaller_than_a_tile_names_the_file_and_both_sizes() -> None:
    with pytest.raises(
        ImageError, match=r"line3/0007\.png: 50x40 pixels is smaller than one 64x64"
    ):
        TileSpec(64).positions(40, 50, name="line3/0007.png")
    with pytest.raises(ImageError, match=r"small\.png: 70x30 pixels is smaller than one 64x64"):
        list(iter_tiles([("small.png", png_bytes(np.zeros((30, 70), np.uint8)))], TileSpec(64)))


def test_cut_tiles_of_grey_and_rgb_are_the_pixels_at_their_positions() -> None:
    rng = np.random.default_rng(0)
    grey = rng.integers(0, 256, (70, 150), dtype=np.uint8)
    tiles, pos = cut_tiles(grey, TileSpec(32, 24))
    assert tiles.shape == (len(pos), 32, 32) and tiles.dtype == np.uint8
    for tile, (top, left) in zip(tiles, pos, strict=True):
        assert np.array_equal(tile, grey[top : top + 32, left : left + 32])
    rgb = rng.integers(0, 256, (40, 50, 3), dtype=np.uint8)
    tiles, pos = cut_tiles(rgb, TileSpec(32))
    assert tiles.shape == (4, 32, 32, 3)
    assert np.array_equal(tiles[3], rgb[8:40, 18:50])
    tiles[0, 0, 0] = 0 if rgb[0, 0, 0] else 1
    assert tiles[0, 0, 0, 0] != rgb[0, 0, 0]  # copies, not views of the photo
    with pytest.raises(ValueError, match="expected an .* uint8 image"):
        cut_tiles(grey.astype(np.float32), TileSpec(32))


def test_iter_tiles_batches_across_photos_and_matches_cut_tiles(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    photos = [rng.integers(0, 256, (100, 130), dtype=np.uint8) for _ in range(3)]
    paths = []
    for i, p in enumerate(photos):
        paths.append(tmp_path / f"{i}.png")
        Image.fromarray(p).save(paths[-1])
    spec = TileSpec(64, 48)
    batches = list(iter_tiles(paths, spec, batch_size=5))
    assert [len(b) for b in batches] == [5] * 3 + [3]  # 6 tiles per photo, 18 in all
    assert all(b.tiles.shape[1:] == (64, 64) for b in batches)
    image = np.concatenate([b.image for b in batches])
    assert image.tolist() == [0] * 6 + [1] * 6 + [2] * 6
    for i, p in enumerate(photos):
        expect, pos = cut_tiles(p, spec)
        got = np.concatenate([b.tiles[b.image == i] for b in batches])
        top = np.concatenate([b.top[b.image == i] for b in batches])
        left = np.concatenate([b.left[b.image == i] for b in batches])
        assert np.array_equal(got, expect)
        assert np.array_equal(np.stack([top, left], 1), pos)


def test_iter_tiles_holds_one_photo_at_a_time(monkeypatch) -> None:
    """The next photo is read only once the tiles of the last one went out in a batch."""
    reads: list[str] = []
    real = tiles_module.read_image

    def counting(source, **kw):
        reads.append(source[0])
        return real(source, **kw)

    monkeypatch.setattr(tiles_module, "read_image", counting)
    photo = png_bytes(np.zeros((64, 128), np.uint8))  # 2 tiles each
    sources = ((f"p{i}.png", photo) for i in range(4))  # a generator: nothing listed ahead
    it = iter_tiles(sources, TileSpec(64), batch_size=2)
    first = next(it)
    assert first.image.tolist() == [0, 0] and reads == ["p0.png"]
    next(it)
    assert reads == ["p0.png", "p1.png"]


def test_bad_photos_are_collected_or_raised() -> None:
    good = png_bytes(np.zeros((64, 64), np.uint8))
    sources = [("a.png", good), ("broken.png", b"not an image"), ("b.png", good)]
    with pytest.raises(ImageError, match="broken.png"):
        list(iter_tiles(sources, TileSpec(64)))
    errors: list[ImageError] = []
    batches = list(iter_tiles(sources, TileSpec(64), errors=errors))
    assert [e.source for e in errors] == ["broken.png"]
    assert np.concatenate([b.image for b in batches]).tolist() == [0, 2]
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        next(iter_tiles(sources, TileSpec(64), batch_size=0))


def test_tile_index_lot_is_the_photo_unless_lots_are_given() -> None:
    spec = TileSpec(64)
    names = ["c1/a.png", "c1/b.png", "c2/a.png"]
    shapes = [(64, 128), (128, 64), (64, 64)]
    by_photo = tile_index(names, shapes, spec)
    assert by_photo["image"].tolist() == [0, 0, 1, 1, 2]
    assert by_photo.groupby("image")["lot"].nunique().eq(1).all()
    assert by_photo["lot"].tolist() == ["c1/a.png"] * 2 + ["c1/b.png"] * 2 + ["c2/a.png"]
    by_coil = tile_index(names, shapes, spec, lots=["coil1", "coil1", "coil2"])
    assert by_coil["lot"].tolist() == ["coil1"] * 4 + ["coil2"]
    assert by_coil[["top", "left"]].values.tolist() == [[0, 0], [0, 64], [0, 0], [64, 0], [0, 0]]
    with pytest.raises(ValueError, match="3 names, 2 shapes"):
        tile_index(names, shapes[:2], spec)
    with pytest.raises(ValueError, match="empty lot"):
        tile_index(names, shapes, spec, lots=["coil1", " ", "coil2"])
    with pytest.raises(ValueError, match="photos 0 and 1 have the same name 'x.png'"):
        tile_index(["x.png", "x.png"], shapes[:2], spec)
    with pytest.raises(ImageError, match="tiny.png: 10x10 pixels"):
        tile_index(["tiny.png"], [(10, 10)], spec)
    assert tile_index([], [], spec).columns.tolist() == ["image", "name", "lot", "top", "left"]
