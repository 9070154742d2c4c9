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


# --------------------------------------------------------------------------- whole images


def test_stored_images_read_back_exactly_as_stored_and_views_read_nothing() -> None:
    import torch

    from mfgtx.images import ImageDataset, StoredImages

    rng = torch.Generator().manual_seed(0)
    images = torch.rand(7, 3, 5, 5, generator=rng)
    stored = StoredImages((3, 5, 5))
    try:
        assert [stored.append(x) for x in images] == list(range(7))
        assert stored.shape == (7, 3, 5, 5) and torch.equal(stored[0:7], images)
        assert torch.equal(stored[3], images[3]) and torch.equal(stored[2:5], images[2:5])
        idx = np.array([6, 1, 4])
        view = stored[idx]
        assert isinstance(view, StoredImages) and len(view) == 3
        assert torch.equal(view[0:3], images[idx]) and torch.equal(view[1], images[1])
        assert torch.equal(view[np.array([True, False, True])][0:2], images[[6, 4]])
        a = ImageDataset(view, [0, 1, 0])
        b = ImageDataset(images[idx], [0, 1, 0])
        assert all(torch.equal(a[i]["images"], b[i]["images"]) for i in range(3))
        with pytest.raises(ValueError, match=r"shape \(3, 5, 5\)"):
            stored.append(torch.zeros(1, 5, 5))
        with pytest.raises(ValueError, match="view"):
            view.append(images[0])
    finally:
        stored.close()


def test_a_whole_image_job_holds_one_photo_not_every_photo(tmp_path, monkeypatch) -> None:
    import torch
    from PIL import Image

    from mfgtx.images import ImageRecords, StoredImages, load_images
    from mfgtx.kinds.vit.images import ImagesSection, prepare_images
    from mfgtx.split import SplitPlan

    rng = np.random.default_rng(0)
    decoded = 0
    for label in ("good", "pit"):
        (tmp_path / label).mkdir()
        for i in range(12):  # 24 photos of 300 x 400 px: 2.9 MB decoded
            photo = rng.integers(0, 256, (300, 400), dtype=np.uint8)
            Image.fromarray(photo).save(tmp_path / label / f"{i:02d}.png", compress_level=0)
            decoded += photo.nbytes

    def every_file_at_once(self, indices=None):
        raise AssertionError("every file read into memory at once")

    monkeypatch.setattr(ImageRecords, "read_bytes", every_file_at_once)
    section = ImagesSection(path=str(tmp_path), image_size=16)
    tracemalloc.start()
    prep = prepare_images(section, SplitPlan(test_size=0.25, val_size=0.25))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    try:
        assert peak < decoded / 4  # a few photos' worth at most, not all 24
        assert isinstance(prep.images, StoredImages) and len(prep.images) == 24
        records = ImageRecords.from_folder(tmp_path)
        sources = list(records.iter_bytes(prep.test.tolist()))
        expected, _, _ = load_images(sources, 16, mode="L")
        assert torch.equal(prep.images[prep.test][0 : len(prep.test)], expected)  # as scored
    finally:
        prep.close()
