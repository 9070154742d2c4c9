"""The defect page's image check on its own: every refusal has a reason, odd modes are read."""

from __future__ import annotations

import io
import sys

import pytest
from PIL import Image

from .conftest import ROOT
from .test_dashboard import _bomb_png

sys.path.insert(0, str(ROOT / "app"))
from _images import check_image
from _settings import MAX_IMAGE_MB


def _encode(img: Image.Image, fmt: str) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt)
    return buf.getvalue()


@pytest.mark.parametrize(
    "img, fmt, readable",
    [
        (Image.new("RGB", (40, 30), (10, 200, 30)), "PNG", True),
        (Image.new("L", (40, 30), 90), "PNG", True),
        (Image.new("I;16", (40, 30), 4000), "PNG", False),
        (Image.new("CMYK", (40, 30), (0, 50, 100, 0)), "JPEG", False),
        (Image.new("P", (40, 30), 3), "PNG", False),
        (Image.new("RGBA", (40, 30), (1, 2, 3, 4)), "PNG", False),
        (Image.new("1", (40, 30), 1), "BMP", False),
        (Image.new("F", (40, 30), 2.5), "TIFF", False),
    ],
)
def test_the_page_reads_what_batch_scoring_reads(img, fmt, readable):
    """One rule for what is readable: the page's check is mfgtx.images.read_image, the
    reader of ``mfgtx score`` (it used to accept palette, alpha and 16-bit files)."""
    from mfgtx.images import ImageError, read_image

    data = _encode(img, fmt)
    checked = check_image(f"x.{fmt.lower()}", data)
    try:
        read_image(("x", data))
        scored = True
    except ImageError as e:
        scored = False
        assert checked.message == e.reason
    assert (checked.message is None) == scored == readable
    if readable:
        assert checked.image.shape == (30, 40)
        assert checked.image.min() >= 0 and checked.image.max() <= 1


@pytest.mark.parametrize(
    "data, words",
    [
        (b"", "empty"),
        (b"GIF89a-no", "not an image"),
        (_encode(Image.new("L", (4, 4)), "PNG"), "smaller than min_size"),
        (_bomb_png(10_000, 8_000), "exceeds max_pixels"),  # over the 64 MP limit
        (b"\0" * (MAX_IMAGE_MB * 2**20 + 1), "MB is over"),
    ],
)
def test_refusals_say_why(data, words):
    checked = check_image("f.png", data)
    assert checked.image is None and words in checked.message


def test_truncated_jpeg_is_refused():
    data = _encode(Image.effect_noise((64, 64), 40).convert("RGB"), "JPEG")
    checked = check_image("cut.jpg", data[: len(data) // 2])
    assert checked.image is None and "truncated" in checked.message
