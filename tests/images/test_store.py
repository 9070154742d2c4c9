"""PhotoStore: decoded photos in a nameless scratch file, tiles read back exactly, nothing held
in memory and nothing left on disk."""

from __future__ import annotations

import os
import tracemalloc

import numpy as np
import pytest

from mfgtx.images import PhotoStore, TileSpec, cut_tiles


@pytest.mark.parametrize("channels", [0, 3])
@pytest.mark.parametrize("block", [16, 256])  # tiles crossing strip borders, and not
def test_every_tile_is_the_slice_of_the_photo(channels: int, block: int) -> None:
    rng = np.random.default_rng(channels + block)
    shapes = [(40, 53), (24, 24), (31, 100)]
    photos = [rng.integers(0, 256, s + ((channels,) if channels else ()), dtype=np.uint8)
              for s in shapes]  # fmt: skip
    with PhotoStore(tile_size=12, block=block) as store:
        for p in photos:
            store.add(p)
        spec = TileSpec(12, 5)
        for i, p in enumerate(photos):
            tiles, pos = cut_tiles(p, spec)
            got = store.tiles(np.full(len(pos), i), pos[:, 0], pos[:, 1], 12)
            np.testing.assert_array_equal(got, tiles)
            np.testing.assert_array_equal(store.photo(i), p)
            assert store.shape(i) == p.shape


def test_a_tile_outside_its_photo_is_refused() -> None:
    with PhotoStore(tile_size=8) as store:
        store.add(np.zeros((10, 10), np.uint8))
        with pytest.raises(ValueError, match="outside photo 0"):
            store.tile(0, 5, 0, 8)


def test_photos_are_held_on_disk_not_in_memory() -> None:
    photo = np.random.default_rng(0).integers(0, 256, (500, 500), dtype=np.uint8)  # 250 kB
    with PhotoStore(tile_size=64) as store:
        tracemalloc.start()
        for _ in range(20):  # 5 MB of photos
            store.add(photo)
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert held < photo.nbytes  # less than one photo, whatever the number of photos
        assert store.nbytes == 20 * photo.nbytes


def test_the_scratch_file_has_no_name_and_goes_with_the_store(tmp_path) -> None:
    store = PhotoStore(tile_size=8, folder=str(tmp_path))
    store.add(np.ones((16, 16), np.uint8))
    assert os.listdir(tmp_path) == []  # nothing a killed job could leave behind
    fd = store._fd
    store.close()
    with pytest.raises(OSError):
        os.fstat(fd)
