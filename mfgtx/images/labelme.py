"""Defect outlines drawn in labelme, read as untrusted input and rasterised to a mask.

Shape legend: ``H`` height, ``W`` width of the photo (pixels).

A labelme file is JSON with ``imageHeight``, ``imageWidth`` and a list of ``shapes``, each
with a ``label`` (the defect class), a ``shape_type`` and ``points`` as ``[x, y]`` pairs in
pixels (``x`` along the columns, ``y`` down the rows). Accepted shapes:

* ``polygon`` (3 or more points; a missing or ``null`` ``shape_type`` means polygon, as in
  labelme itself),
* ``rectangle`` (two opposite corners),
* ``circle`` (the centre, then any point on the rim).

Refused, with an error naming the file and the shape: ``line``, ``linestrip``, ``point``,
``points`` (no area: a scratch marked with a line has no agreed width, redraw it as a polygon)
and ``mask`` (a bitmap hidden in base64; draw the outline instead, or hand over a PNG mask).

**Rasterisation** (:func:`rasterise`): labelme puts the corner of pixel ``(row, col)`` at
``(x, y) = (col, row)``, so the pixel covers ``[col, col + 1) x [row, row + 1)``. Each vertex
is mapped to the pixel that contains it (``floor`` of ``x`` and ``y``), and Pillow's
``ImageDraw`` fills the polygon through those pixels *including its outline*, as labelme's
own mask export does: every pixel on the boundary or inside is defect. A rectangle fills both
corner pixels and everything between; a circle is Pillow's ellipse in the pixel box
``floor(centre -+ radius)``. Shapes are drawn in file order, so where two overlap the later
one's class wins. Coordinates are floored before they reach Pillow, so the result does not
depend on how a Pillow version rounds fractional points.

**Untrusted input.** A labelme file comes from an annotator's laptop or a shared drive, so
:func:`read_labelme` refuses, before any drawing: a file over :data:`MAX_LABELME_BYTES`,
JSON that is not UTF-8 or nested absurdly deep, ``NaN``/``Infinity``/overflowing numbers,
image dimensions over :data:`~mfgtx.images.DEFAULT_MAX_PIXELS` pixels, more than
:data:`MAX_SHAPES` shapes or :data:`MAX_POINTS` points, and points further than one image
size outside the image. ``imagePath`` is never opened (the photo is found by the pairing rule
of :func:`mfgtx.images.mask_path`); a name that disagrees with the photo only warns.
``imageData`` (an embedded copy of the photo) is ignored, never decoded.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path, PurePath
from typing import Any

import numpy as np
from PIL import Image, ImageDraw

from mfgtx.images.io import DEFAULT_MAX_PIXELS, MaskError, MaskWarning

__all__ = [
    "MAX_LABELME_BYTES",
    "MAX_POINTS",
    "MAX_SHAPES",
    "LabelmeFile",
    "LabelmeShape",
    "defect_classes",
    "rasterise",
    "read_labelme",
]

#: Largest labelme file read (bytes); an embedded ``imageData`` copy counts towards it.
MAX_LABELME_BYTES = 64 * 1024 * 1024
#: Most shapes in one labelme file.
MAX_SHAPES = 10_000
#: Most points in one labelme file, all shapes together.
MAX_POINTS = 200_000

_AREA = ("polygon", "rectangle", "circle")
_REFUSED = {
    "line": "a line has no area; redraw the defect as a polygon around it",
    "linestrip": "a line strip has no area; redraw the defect as a polygon around it",
    "point": "a point has no area; outline the defect with a polygon or a circle",
    "points": "points have no area; outline the defect with a polygon or a circle",
    "mask": "bitmap shapes are not read from JSON; outline the defect, or use a PNG mask",
}
_NEED = {"polygon": "at least 3 points", "rectangle": "2 corner points", "circle": "2 points"}


@dataclass(frozen=True)
class LabelmeShape:
    """One outline: its defect class, kind and ``(x, y)`` points in pixels."""

    label: str
    shape_type: str
    points: tuple[tuple[float, float], ...]


@dataclass(frozen=True)
class LabelmeFile:
    """The checked content of one labelme file.

    Attributes:
        source: the file, for messages.
        height, width: ``imageHeight`` and ``imageWidth``.
        shapes: the outlines, in file order.
        image_path: ``imagePath`` as written (never opened), or ``None``.
    """

    source: str
    height: int
    width: int
    shapes: tuple[LabelmeShape, ...]
    image_path: str | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        """Distinct labels, sorted."""
        return tuple(sorted({s.label for s in self.shapes}))


def _refuse_constant(token: str) -> float:
    raise ValueError(f"the non-finite number {token} is not allowed")


def _read_text(source: str | PathLike[str] | tuple[str, bytes], photo: str) -> tuple[str, bytes]:
    if isinstance(source, tuple):
        name, data = str(source[0]), bytes(source[1])
    else:
        name, path = str(source), Path(source)
        try:
            size = path.stat().st_size
            if size > MAX_LABELME_BYTES:
                raise MaskError(
                    name, f"{size} bytes exceeds MAX_LABELME_BYTES={MAX_LABELME_BYTES}", photo
                )
            data = path.read_bytes()
        except OSError as e:
            raise MaskError(name, f"cannot be read ({e.strerror or e})", photo) from e
    if len(data) > MAX_LABELME_BYTES:
        raise MaskError(
            name, f"{len(data)} bytes exceeds MAX_LABELME_BYTES={MAX_LABELME_BYTES}", photo
        )
    return name, data


def _dimension(doc: Mapping[str, Any], key: str, name: str, photo: str) -> int:
    v = doc.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise MaskError(
            name, f"{key} must be a positive whole number of pixels, found {v!r}", photo
        )
    return v


def _points(
    raw: Any, where: str, name: str, photo: str, h: int, w: int
) -> tuple[tuple[float, float], ...]:
    if not isinstance(raw, list):
        raise MaskError(
            name, f"{where}: 'points' must be a list of [x, y], found {raw!r:.60}", photo
        )
    out = []
    for j, p in enumerate(raw):
        ok = isinstance(p, list) and len(p) == 2
        ok = ok and all(isinstance(v, int | float) and not isinstance(v, bool) for v in p)
        if not ok:
            raise MaskError(
                name, f"{where}, point {j}: expected [x, y] numbers, found {p!r:.60}", photo
            )
        try:
            x, y = float(p[0]), float(p[1])
        except OverflowError:
            x = y = math.inf
        if not (math.isfinite(x) and math.isfinite(y)):
            raise MaskError(name, f"{where}, point {j}: coordinates {p} are not finite", photo)
        if not (-w <= x <= 2 * w and -h <= y <= 2 * h):
            raise MaskError(
                name,
                f"{where}, point {j}: ({x:g}, {y:g}) lies more than one image size outside "
                f"the {w}x{h} image",
                photo,
            )
        out.append((x, y))
    return tuple(out)


def read_labelme(
    source: str | PathLike[str] | tuple[str, bytes],
    *,
    photo: str = "",
    photo_shape: tuple[int, int] | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> LabelmeFile:
    """Read and check one labelme file (see the module docstring for what is refused).

    Args:
        source: a path, or ``(name, bytes)``.
        photo: the photo it belongs to, for messages and the ``imagePath`` check.
        photo_shape: the photo's ``(H, W)``; ``imageHeight``/``imageWidth`` must match it.
        max_pixels: largest accepted ``imageHeight * imageWidth``.

    Raises:
        MaskError: naming the file (and the JSON line, or the shape and point) and what is
            wrong.

    Example:
        >>> doc = {"imageHeight": 4, "imageWidth": 6, "imageData": "ignored", "shapes": [
        ...     {"label": "pit", "shape_type": "rectangle", "points": [[1, 1], [3, 2]]}]}
        >>> f = read_labelme(("a.json", json.dumps(doc).encode()))
        >>> f.height, f.width, f.labels, f.shapes[0].points
        (4, 6, ('pit',), ((1.0, 1.0), (3.0, 2.0)))
    """
    name, data = _read_text(source, photo)
    try:
        doc = json.loads(data.decode("utf-8"), parse_constant=_refuse_constant)
    except UnicodeDecodeError as e:
        raise MaskError(name, f"not UTF-8 text (byte {e.start})", photo) from e
    except json.JSONDecodeError as e:
        raise MaskError(
            name, f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", photo
        ) from e
    except RecursionError as e:
        raise MaskError(name, "JSON nested too deeply to be a labelme file", photo) from e
    except ValueError as e:  # a NaN or Infinity token
        raise MaskError(name, str(e), photo) from e
    if not isinstance(doc, dict):
        raise MaskError(name, f"expected a JSON object, found {type(doc).__name__}", photo)
    h, w = _dimension(doc, "imageHeight", name, photo), _dimension(doc, "imageWidth", name, photo)
    if h * w > max_pixels:
        raise MaskError(name, f"{w}x{h} = {w * h} pixels exceeds max_pixels={max_pixels}", photo)
    if photo_shape is not None and (h, w) != tuple(photo_shape):
        ph, pw = photo_shape
        raise MaskError(
            name,
            f"imageWidth x imageHeight is {w}x{h} but the photo is {pw}x{ph}: "
            "this file was drawn on another image",
            photo,
        )
    raw_shapes = doc.get("shapes")
    if not isinstance(raw_shapes, list):
        raise MaskError(name, f"'shapes' must be a list, found {raw_shapes!r:.60}", photo)
    if len(raw_shapes) > MAX_SHAPES:
        raise MaskError(name, f"{len(raw_shapes)} shapes exceeds MAX_SHAPES={MAX_SHAPES}", photo)
    shapes, n_points = [], 0
    for i, s in enumerate(raw_shapes):
        if not isinstance(s, dict):
            raise MaskError(name, f"shape {i}: expected an object, found {s!r:.60}", photo)
        label = s.get("label")
        if not isinstance(label, str) or not label.strip():
            raise MaskError(
                name, f"shape {i}: 'label' must be a non-empty text, found {label!r}", photo
            )
        label = label.strip()
        kind = s.get("shape_type") or "polygon"
        where = f"shape {i} ({kind} {label!r})"
        if kind not in _AREA:
            why = _REFUSED.get(str(kind), f"only {', '.join(_AREA)} are read")
            raise MaskError(name, f"{where}: refused: {why}", photo)
        raw = s.get("points")
        n_points += len(raw) if isinstance(raw, list) else 0
        if n_points > MAX_POINTS:
            raise MaskError(name, f"more than MAX_POINTS={MAX_POINTS} points", photo)
        pts = _points(raw, where, name, photo, h, w)
        if (kind == "polygon" and len(pts) < 3) or (kind != "polygon" and len(pts) != 2):
            raise MaskError(name, f"{where}: needs {_NEED[kind]}, found {len(pts)}", photo)
        shapes.append(LabelmeShape(label, kind, pts))
    image_path = doc.get("imagePath")
    image_path = image_path if isinstance(image_path, str) else None
    if photo and image_path:
        written = PurePath(re.split(r"[\\/]", image_path)[-1]).stem
        if written != PurePath(photo).stem:
            warnings.warn(
                f"{name}: imagePath names {image_path!r} but the file is paired with photo "
                f"{photo}; check that the pairing is right (imagePath itself is never opened)",
                MaskWarning,
                stacklevel=2,
            )
    return LabelmeFile(name, h, w, tuple(shapes), image_path)


def defect_classes(files: Iterable[LabelmeFile]) -> dict[str, int]:
    """Mask value of every defect class found in ``files``: the sorted labels, from ``1``.

    Use the same mapping for every photo of a data set (and save it with the model), so that
    a class keeps its number.

    Example:
        >>> a = LabelmeFile("a.json", 8, 8, (LabelmeShape("scratch", "polygon", ()),))
        >>> b = LabelmeFile("b.json", 8, 8, (LabelmeShape("pit", "circle", ()),))
        >>> defect_classes([a, b])
        {'pit': 1, 'scratch': 2}
    """
    names = sorted({s.label for f in files for s in f.shapes})
    if len(names) > 255:
        raise ValueError(f"{len(names)} defect classes: a uint8 mask holds at most 255")
    return {n: i + 1 for i, n in enumerate(names)}


def rasterise(
    shapes: Iterable[LabelmeShape],
    height: int,
    width: int,
    class_index: Mapping[str, int] | None = None,
    *,
    source: str = "labelme file",
) -> np.ndarray:
    """Draw outlines into an ``(H, W)`` uint8 mask (see the module docstring for the rule).

    Args:
        shapes: e.g. :attr:`LabelmeFile.shapes`.
        height, width: the mask size (the photo's).
        class_index: label -> pixel value ``1..255`` (the class index); ``None`` draws every
            label as ``1`` (one defect class).
        source: the file, for the error on an unknown label.

    Returns:
        ``(H, W)`` uint8: ``0`` background, else the class of the last shape covering it.

    Example (a triangle with corners on pixels (0, 0), (4, 0) and (0, 4), and a rectangle):
        >>> tri = LabelmeShape("pit", "polygon", ((0.2, 0.0), (4.9, 0.5), (0.0, 4.0)))
        >>> box = LabelmeShape("scratch", "rectangle", ((7.0, 3.0), (5.5, 1.0)))
        >>> rasterise([tri, box], 5, 8, {"pit": 1, "scratch": 2})
        array([[1, 1, 1, 1, 1, 0, 0, 0],
               [1, 1, 1, 1, 0, 2, 2, 2],
               [1, 1, 1, 0, 0, 2, 2, 2],
               [1, 1, 0, 0, 0, 2, 2, 2],
               [1, 0, 0, 0, 0, 0, 0, 0]], dtype=uint8)
    """
    canvas = Image.new("L", (int(width), int(height)), 0)
    draw = ImageDraw.Draw(canvas)
    for shape in shapes:
        if class_index is None:
            value = 1
        elif shape.label in class_index:
            value = int(class_index[shape.label])
        else:
            known = sorted(class_index)
            raise MaskError(source, f"label {shape.label!r} is not a known class {known}")
        if not 1 <= value <= 255:
            raise ValueError(f"class index of {shape.label!r} must be 1..255, found {value}")
        xy = [(math.floor(x), math.floor(y)) for x, y in shape.points]
        if shape.shape_type == "polygon":
            draw.polygon(xy, fill=value, outline=value)
        elif shape.shape_type == "rectangle":
            (x0, y0), (x1, y1) = xy
            box = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
            draw.rectangle(box, fill=value, outline=value)
        elif shape.shape_type == "circle":
            (cx, cy), (px, py) = shape.points
            r = math.hypot(px - cx, py - cy)
            bounds = tuple(math.floor(v) for v in (cx - r, cy - r, cx + r, cy + r))
            draw.ellipse(bounds, fill=value, outline=value)
        else:
            raise MaskError(source, f"shape type {shape.shape_type!r} cannot be drawn")
    return np.array(canvas, dtype=np.uint8)
