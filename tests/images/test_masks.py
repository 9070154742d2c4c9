"""Defect masks: the pairing rule, PNG masks checked against their photo, tiles labelled."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from mfgtx.images import (
    AMBIGUOUS,
    MaskError,
    TileSpec,
    label_tiles,
    mask_path,
    read_mask,
)


@pytest.fixture
def plant(tmp_path: Path) -> Path:
    (tmp_path / "images" / "coil7").mkdir(parents=True)
    (tmp_path / "masks" / "coil7").mkdir(parents=True)
    return tmp_path


def read(plant: Path, shape=(4, 6), **kw) -> np.ndarray:
    kw.setdefault("format", "png")
    kw.setdefault("masks_root", plant / "masks")
    return read_mask(plant / "images/coil7/0003.jpg", shape, images_root=plant / "images", **kw)


def test_pairing_rule_mirrors_the_photo_folder(plant: Path) -> None:
    photo = plant / "images/coil7/0003.jpg"
    png = mask_path(photo, images_root=plant / "images", masks_root=plant / "masks")
    assert png == plant / "masks/coil7/0003.png"
    js = mask_path(photo, images_root=plant / "images", format="labelme")
    assert js == plant / "images/coil7/0003.json"  # labelme: beside the photo by default
    with pytest.raises(ValueError, match="PNG masks need their own folder"):
        mask_path(photo, images_root=plant / "images")
    with pytest.raises(ValueError, match=r"would be the photo itself"):
        mask_path(plant / "images/a.png", images_root=plant / "images", masks_root=plant / "images")
    with pytest.raises(ValueError, match="is not inside the photo folder"):
        mask_path(plant / "other/a.png", images_root=plant / "images", masks_root=plant / "masks")
    with pytest.raises(ValueError, match="format must be 'png' or 'labelme', found 'coco'"):
        mask_path(photo, images_root=plant / "images", format="coco")  # type: ignore[arg-type]


def test_binary_masks_in_every_usual_encoding(plant: Path) -> None:
    truth = np.zeros((4, 6), bool)
    truth[1:3, 2:5] = True
    target = plant / "masks/coil7/0003.png"
    for image in (
        Image.fromarray(truth),  # 1-bit
        Image.fromarray(truth.astype(np.uint8) * 255),  # 0 / 255 grey
        Image.fromarray(truth.astype(np.uint8) * 7).convert("P"),  # palette indices
    ):
        image.save(target)
        got = read(plant)
        assert got.dtype == np.uint8 and np.array_equal(got, truth.astype(np.uint8))


def test_class_index_masks_keep_their_values_and_refuse_unknown_ones(plant: Path) -> None:
    m = np.zeros((4, 6), np.uint8)
    m[0, 0], m[3, 5] = 1, 2
    Image.fromarray(m).save(plant / "masks/coil7/0003.png")
    assert np.array_equal(read(plant, classes={"pit": 1, "scratch": 2}), m)
    assert read(plant).max() == 1  # one defect class
    with pytest.raises(MaskError, match=r"pixel value\(s\) \[2\] \(1 pixels\) are not a class"):
        read(plant, classes={"pit": 1})


def test_wrong_size_missing_and_lossy_masks_name_mask_and_photo(plant: Path) -> None:
    photo = str(plant / "images/coil7/0003.jpg")
    mask = plant / "masks/coil7/0003.png"
    with pytest.raises(MaskError, match="no such mask file") as e:
        read(plant)
    assert e.value.source == str(mask) and e.value.photo == photo and photo in str(e.value)
    assert read(plant, missing_ok=True).tolist() == np.zeros((4, 6)).tolist()
    Image.new("L", (5, 4)).save(mask)
    with pytest.raises(MaskError, match=r"mask is 5x4 pixels but the photo is 6x4") as e:
        read(plant)
    assert str(mask) in str(e.value) and photo in str(e.value)
    Image.new("L", (6, 4)).save(mask, format="JPEG")
    with pytest.raises(MaskError, match="a JPEG file: masks must be PNG"):
        read(plant)
    Image.new("RGB", (6, 4)).save(mask)
    with pytest.raises(MaskError, match="mode 'RGB': save the mask as 8-bit grey"):
        read(plant)
    mask.write_bytes(b"\x89PNG\r\n\x1a\n garbage")
    with pytest.raises(MaskError, match="not a readable PNG mask"):
        read(plant)


def test_manifest_mask_overrides_the_rule_and_labelme_goes_through_read_mask(plant: Path) -> None:
    other = plant / "elsewhere.png"
    Image.fromarray(np.eye(4, 6, dtype=np.uint8)).save(other)
    assert read(plant, mask_file=other).sum() == 4
    shapes = [{"label": "pit", "shape_type": "rectangle", "points": [[1, 1], [2, 2]]}]
    (plant / "images/coil7/0003.json").write_text(
        json.dumps({"imageHeight": 4, "imageWidth": 6, "shapes": shapes})
    )
    m = read(plant, format="labelme", masks_root=None, classes={"pit": 3})
    assert m.sum() == 4 * 3 and m[1, 1] == 3
    with pytest.raises(MaskError, match=r"but the photo is 7x4"):
        read(plant, shape=(4, 7), format="labelme", masks_root=None)


# ---------------------------------------------------------------------- tile labels


def test_tile_labels_by_hand() -> None:
    # 8 x 12 photo, 4-px tiles: a 2 x 3 grid
    m = np.zeros((8, 12), np.uint8)
    m[0, 0:2] = 1  # 2 px in tile 0: ambiguous with min 3
    m[1:3, 5:7] = 1  # 4 px of class 1 in tile 1
    m[3, 7] = 2  # ... and 1 px of class 2 in tile 1: class 1 has more
    m[4:6, 8:10] = 2  # tile 5: 4 px class 2 ...
    m[6:8, 8:10] = 1  # ... and 4 px class 1: a tie goes to the lower class
    t = label_tiles(m, TileSpec(4), min_defect_px=3)
    assert t.defect_px.tolist() == [2, 5, 0, 0, 0, 8]
    assert t.labels.tolist() == [AMBIGUOUS, 1, 0, 0, 0, 1]
    assert (t.n_good, t.n_defect, t.n_ambiguous) == (3, 2, 1)
    assert t.keep.tolist() == [False, True, True, True, True, True]
    assert t.top.tolist() == [0, 0, 0, 4, 4, 4] and t.left.tolist() == [0, 4, 8] * 2
    assert t.image_defect_px == 15 and t.image_is_defect
    # min_defect_px=1: nothing is ambiguous
    assert label_tiles(m, TileSpec(4), min_defect_px=1).n_ambiguous == 0


def test_overlapping_and_flush_tiles_count_shared_pixels_in_each() -> None:
    m = np.zeros((6, 10), np.uint8)
    m[2:4, 5] = 1  # column 5 lies in the tiles at left 2 (cols 2-5) and 4 (cols 4-7)
    t = label_tiles(m, TileSpec(4, 2), min_defect_px=2)
    lefts = t.left[t.top == 2]
    assert lefts.tolist() == [0, 2, 4, 6]
    assert t.defect_px[t.top == 2].tolist() == [0, 2, 2, 0]
    pairs = zip(t.top, t.left, strict=True)
    brute = [int(m[a : a + 4, b : b + 4].astype(bool).sum()) for a, b in pairs]
    assert t.defect_px.tolist() == brute


def test_random_masks_match_a_brute_force_count() -> None:
    rng = np.random.default_rng(3)
    m = (rng.random((37, 53)) < 0.02).astype(np.uint8) * rng.integers(1, 4, (37, 53)).astype(
        np.uint8
    )
    t = label_tiles(m, TileSpec(8, 5), min_defect_px=2)
    for i, (a, b) in enumerate(zip(t.top, t.left, strict=True)):
        tile = m[a : a + 8, b : b + 8]
        n = int((tile > 0).sum())
        assert t.defect_px[i] == n
        if n == 0:
            assert t.labels[i] == 0
        elif n < 2:
            assert t.labels[i] == AMBIGUOUS
        else:
            counts = np.bincount(tile[tile > 0], minlength=4)
            assert t.labels[i] == int(np.argmax(counts))


def test_tile_label_inputs_are_checked() -> None:
    m = np.zeros((8, 8), np.uint8)
    for bad in (0, 65, 2.0, True):
        with pytest.raises(ValueError, match="min_defect_px must be"):
            label_tiles(m, TileSpec(8), min_defect_px=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mask must be an"):
        label_tiles(m.astype(bool), TileSpec(8), min_defect_px=1)
    small = label_tiles(np.zeros((8, 8), np.uint8), TileSpec(8), min_defect_px=4)
    assert not small.image_is_defect and small.labels.tolist() == [0]
