"""labelme files: hand-computed rasterisation, and every kind of untrusted input refused."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from mfgtx.images import (
    LabelmeShape,
    MaskError,
    MaskWarning,
    defect_classes,
    rasterise,
    read_labelme,
)
from mfgtx.images import labelme as labelme_module


def doc(shapes: list[dict], h: int = 8, w: int = 8, **extra) -> bytes:
    return json.dumps({"imageHeight": h, "imageWidth": w, "shapes": shapes, **extra}).encode()


def poly(points, label: str = "pit", kind: str | None = "polygon") -> dict:
    return {"label": label, "points": [list(p) for p in points], "shape_type": kind}


def drawn(points, kind: str = "polygon", h: int = 8, w: int = 8) -> set[tuple[int, int]]:
    """(row, col) of the pixels the rasteriser sets."""
    mask = rasterise([LabelmeShape("pit", kind, tuple(points))], h, w)
    return {(int(r), int(c)) for r, c in np.argwhere(mask)}


# ---------------------------------------------------------------------- rasterisation


def test_axis_aligned_square_polygon_covers_its_corner_pixels_and_between() -> None:
    expect = {(r, c) for r in (1, 2) for c in (1, 2, 3)}  # 2 rows x 3 columns
    assert drawn([(1, 1), (3, 1), (3, 2), (1, 2)]) == expect
    # fractional vertices go to the pixel that contains them (floor): the same 6 pixels
    assert drawn([(1.9, 1.2), (3.99, 1.0), (3.5, 2.7), (1.0, 2.0)]) == expect
    # a rectangle shape with its corners in either order
    assert drawn([(3, 2), (1, 1)], "rectangle") == expect
    assert drawn([(1.5, 2.9), (3.2, 1.1)], "rectangle") == expect


def test_right_triangle_includes_its_hypotenuse() -> None:
    # corners on pixels (0, 0), (4, 0), (0, 4): every pixel with row + col <= 4, i.e. 15
    assert drawn([(0, 0), (4, 0), (0, 4)]) == {(r, c) for r in range(5) for c in range(5 - r)}


def test_triangle_with_slanted_edges_by_hand() -> None:
    # apex (4, 5), base from (2, 1) to (6, 1). Row y spans x in [2 + (y-1)/2, 6 - (y-1)/2]:
    # y=1: 2..6, y=2: [2.5, 5.5] -> 3..5, y=3: 3..5, y=4: [3.5, 4.5] -> 4, y=5: 4
    expect = {(1, c) for c in range(2, 7)} | {(r, c) for r in (2, 3) for c in (3, 4, 5)}
    expect |= {(4, 4), (5, 4)}
    assert drawn([(6, 1), (2, 1), (4, 5)]) == expect


def test_polygon_partly_outside_the_photo_is_clipped() -> None:
    assert drawn([(-2, -2), (3, -2), (3, 3), (-2, 3)], h=5, w=5) == {
        (r, c) for r in range(4) for c in range(4)
    }


def test_vertices_go_to_the_pixel_that_holds_them_also_left_of_the_photo() -> None:
    # floor, not truncation toward zero: x = -1.5 lies in pixel column -2
    fractional = drawn([(-1.5, 0.2), (3.7, 0.0), (-1.5, 4.5)], h=5, w=5)
    assert fractional == drawn([(-2, 0), (3, 0), (-2, 4)], h=5, w=5)
    assert fractional != drawn([(-1, 0), (3, 0), (-1, 4)], h=5, w=5)


def test_circle_is_a_round_symmetric_disc_in_its_pixel_box() -> None:
    pixels = drawn([(5.5, 5.5), (5.5, 8.5)], "circle", h=12, w=12)  # radius 3
    rows = [r for r, _ in pixels]
    cols = [c for _, c in pixels]
    assert (5, 5) in pixels
    assert min(rows) == min(cols) == 2 and max(rows) == max(cols) == 8  # box floor(2.5..8.5)
    assert math.pi * 9 <= len(pixels) <= 49
    mirrored = {(10 - r, c) for r, c in pixels}
    assert mirrored == pixels and {(c, r) for r, c in pixels} == pixels
    assert (2, 2) not in pixels  # the corners of the box are outside the disc


def test_later_shapes_win_and_classes_are_sorted_labels() -> None:
    shapes = [
        LabelmeShape("scratch", "rectangle", ((0, 0), (3, 3))),
        LabelmeShape("pit", "rectangle", ((2, 2), (4, 4))),
    ]
    classes = {"pit": 1, "scratch": 2}
    mask = rasterise(shapes, 6, 6, classes)
    assert mask[0, 0] == 2 and mask[2, 2] == 1 and mask[4, 4] == 1 and mask[5, 5] == 0
    assert (rasterise(shapes, 6, 6) > 0).sum() == 16 + 9 - 4
    assert set(np.unique(rasterise(shapes, 6, 6))) == {0, 1}  # one class: every shape is 1
    with pytest.raises(MaskError, match=r"label 'pit' is not a known class \['scratch'\]"):
        rasterise(shapes, 6, 6, {"scratch": 1})
    f1 = read_labelme(("a.json", doc([poly([(0, 0), (2, 0), (0, 2)], "scratch")])))
    f2 = read_labelme(("b.json", doc([poly([(0, 0), (2, 0), (0, 2)], " pit ")])))
    assert defect_classes([f1, f2]) == {"pit": 1, "scratch": 2}  # labels are stripped


def test_file_round_trip_and_missing_shape_type_is_a_polygon(tmp_path: Path) -> None:
    p = tmp_path / "0001.json"
    p.write_bytes(doc([poly([(1, 1), (3, 1), (3, 2), (1, 2)], kind=None)], h=4, w=6))
    f = read_labelme(p)
    assert (f.height, f.width, f.labels) == (4, 6, ("pit",))
    assert f.shapes[0].shape_type == "polygon"
    assert rasterise(f.shapes, f.height, f.width).sum() == 6


# ---------------------------------------------------------------------- refused input


@pytest.mark.parametrize(
    ("kind", "why"),
    [
        ("line", "a line has no area"),
        ("linestrip", "a line strip has no area"),
        ("point", "a point has no area"),
        ("points", "points have no area"),
        ("mask", "bitmap shapes are not read"),
        ("spline", "only polygon, rectangle, circle are read"),
    ],
)
def test_shapes_without_area_are_refused_naming_the_shape(kind: str, why: str) -> None:
    data = doc([poly([(0, 0), (2, 0), (0, 2)]), poly([(1, 1), (5, 5)], "scratch", kind)])
    with pytest.raises(MaskError, match=rf"x\.json: shape 1 \({kind} 'scratch'\): refused: {why}"):
        read_labelme(("x.json", data))


@pytest.mark.parametrize(
    ("shapes", "match"),
    [
        ([poly([(0, 0), (2, 2)])], r"shape 0 \(polygon 'pit'\): needs at least 3 points, found 2"),
        ([poly([(0, 0), (1, 1), (2, 2)], kind="rectangle")], "needs 2 corner points, found 3"),
        ([poly([(0, 0)], kind="circle")], r"needs 2 points, found 1"),
        ([poly([(0, 0), (1, 1), (2, 2)], label="")], "'label' must be a non-empty text"),
        ([{"label": 3, "points": [[0, 0], [1, 1], [2, 2]]}], "'label' must be a non-empty"),
        ([poly([(0, 0), (1, "a"), (2, 2)])], r"point 1: expected \[x, y\] numbers"),
        ([poly([(0, 0), (1, True), (2, 2)])], r"point 1: expected \[x, y\] numbers"),
        ([poly([(0, 0), (1, 2, 3), (2, 2)])], r"point 1: expected \[x, y\] numbers"),
        ([{"label": "pit", "points": "0,0 1,1"}], "'points' must be a list"),
        ([poly([(0, 0), (1e6, 1), (2, 2)])], r"point 1: \(1e\+06, 1\) lies more than one image"),
        (["pit"], "shape 0: expected an object"),
    ],
)
def test_bad_shapes_name_the_shape_and_point(shapes: list, match: str) -> None:
    with pytest.raises(MaskError, match=match):
        read_labelme(("x.json", doc(shapes)), photo="images/x.png")


def test_non_finite_coordinates_are_refused() -> None:
    base = '{"imageHeight": 8, "imageWidth": 8, "shapes": [{"label": "pit", "points": '
    for token in ("NaN", "Infinity", "-Infinity"):
        data = (base + f"[[0, 0], [{token}, 1], [2, 2]]" + "}]}").encode()
        with pytest.raises(MaskError, match=f"non-finite number {token} is not allowed"):
            read_labelme(("x.json", data))
    for big in ("1e400", "1" + "0" * 400):  # overflows to inf as float / as int
        data = (base + f"[[0, 0], [{big}, 1], [2, 2]]" + "}]}").encode()
        with pytest.raises(MaskError, match="point 1: coordinates .* are not finite"):
            read_labelme(("x.json", data))


def test_dimensions_are_checked_against_limits_and_the_photo() -> None:
    with pytest.raises(MaskError, match="imageHeight must be a positive whole number"):
        read_labelme(("x.json", doc([], h=0)))
    with pytest.raises(MaskError, match="imageWidth must be a positive whole number .* 8.5"):
        read_labelme(("x.json", doc([], w=8.5)))
    with pytest.raises(MaskError, match="imageHeight must be"):
        read_labelme(("x.json", json.dumps({"imageWidth": 4, "shapes": []}).encode()))
    with pytest.raises(MaskError, match=r"100000x100000 = 10000000000 pixels exceeds max_pixels"):
        read_labelme(("x.json", doc([], h=100_000, w=100_000)))
    with pytest.raises(
        MaskError,
        match=r"x\.json \(for photo p\.png\): imageWidth x imageHeight is 8x8 but the photo "
        r"is 10x6",
    ):
        read_labelme(("x.json", doc([])), photo="p.png", photo_shape=(6, 10))


def test_size_limits_on_bytes_shapes_and_points(monkeypatch, tmp_path: Path) -> None:
    three = [poly([(0, 0), (2, 0), (0, 2)])] * 3
    monkeypatch.setattr(labelme_module, "MAX_SHAPES", 2)
    with pytest.raises(MaskError, match="3 shapes exceeds MAX_SHAPES=2"):
        read_labelme(("x.json", doc(three)))
    monkeypatch.setattr(labelme_module, "MAX_SHAPES", 10)
    monkeypatch.setattr(labelme_module, "MAX_POINTS", 8)
    with pytest.raises(MaskError, match="more than MAX_POINTS=8 points"):
        read_labelme(("x.json", doc(three)))
    monkeypatch.setattr(labelme_module, "MAX_LABELME_BYTES", 100)
    data = doc(three)
    with pytest.raises(MaskError, match=rf"{len(data)} bytes exceeds MAX_LABELME_BYTES=100"):
        read_labelme(("x.json", data))
    p = tmp_path / "big.json"
    p.write_bytes(data)
    with pytest.raises(MaskError, match="big.json: .* bytes exceeds MAX_LABELME_BYTES=100"):
        read_labelme(p)


@pytest.mark.parametrize(
    ("data", "match"),
    [
        (b'{"imageHeight": 8,\n "imageWidth": 8 "shapes": []}', "not valid JSON: .* line 2"),
        (b"\xff\xfe{}", r"not UTF-8 text \(byte 0\)"),
        (b"[1, 2]", "expected a JSON object, found list"),
        (b'{"imageHeight": 8, "imageWidth": 8, "shapes": {}}', "'shapes' must be a list"),
        (b'{"shapes": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "nested too deeply"),
    ],
)
def test_broken_json_is_a_mask_error(data: bytes, match: str) -> None:
    with pytest.raises(MaskError, match=match):
        read_labelme(("x.json", data))


def test_missing_file_is_a_mask_error(tmp_path: Path) -> None:
    with pytest.raises(MaskError, match="nope.json: cannot be read"):
        read_labelme(tmp_path / "nope.json")


def test_image_path_is_never_followed_and_image_data_never_decoded(
    tmp_path: Path, monkeypatch
) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"do not read")
    folder = tmp_path / "labels"
    folder.mkdir()
    p = folder / "0001.json"
    shapes = [poly([(0, 0), (2, 0), (0, 2)])]
    p.write_bytes(doc(shapes, imagePath="../secret.png", imageData="%%% not base64 %%%"))
    opened: set[str] = set()
    real_open = Path.open

    def spy(self: Path, *args, **kwargs):
        opened.add(self.name)
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, "open", spy)  # Path.read_bytes opens through it too
    with pytest.warns(MaskWarning, match=r"imagePath names '\.\./secret\.png' but .*0001\.png"):
        f = read_labelme(p, photo="images/0001.png")
    assert f.image_path == "../secret.png" and len(f.shapes) == 1
    assert opened == {"0001.json"}  # the labelme file only
    # a Windows path naming the same photo is fine: only its last part is compared
    p.write_bytes(doc(shapes, imagePath="..\\images\\0001.jpg"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_labelme(p, photo="images/0001.png")
