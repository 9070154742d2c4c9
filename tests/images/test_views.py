"""Test-time views: exactly the flips and quarter turns that training draws."""

from __future__ import annotations

import pytest
import torch

from mfgtx.images import VIEWS, SurfaceAugment, surface_views


def _drawn(augment: SurfaceAugment, x: torch.Tensor, n: int = 400) -> set[bytes]:
    g = torch.Generator().manual_seed(0)
    return {augment(x, g).numpy().tobytes() for _ in range(n)}


@pytest.mark.parametrize(("rot90", "n"), [(False, 4), (True, 8)])
def test_the_views_are_the_views_training_draws(rot90: bool, n: int) -> None:
    x = torch.rand(1, 6, 6)  # no symmetry: every view is a different array
    plain = SurfaceAugment(rot90=rot90, brightness=0.0, contrast=0.0, crop_scale=(1.0, 1.0))
    views = {v.numpy().tobytes() for v in surface_views(x, n)}
    assert len(views) == n
    assert views == _drawn(plain, x)


def test_the_mean_over_the_views_does_not_change_when_the_image_is_flipped() -> None:
    x = torch.rand(3, 1, 8, 8)

    def score(images: torch.Tensor, n: int) -> torch.Tensor:  # any function of the pixels
        return torch.stack(
            [(v[..., :4, :3] ** 2).sum((-3, -2, -1)) for v in surface_views(images, n)]
        ).mean(0)

    for n, flips in ((4, (x.flip(-1), x.flip(-2))), (8, (x.flip(-1), x.transpose(-2, -1)))):
        for y in flips:
            torch.testing.assert_close(score(y, n), score(x, n))
    assert not torch.allclose(score(x.flip(-1), 1), score(x, 1))  # one view: it does


def test_one_view_is_the_image_itself_and_other_counts_are_refused() -> None:
    x = torch.rand(2, 1, 4, 4)
    (only,) = surface_views(x, 1)
    assert only is x
    assert VIEWS == (1, 4, 8)
    with pytest.raises(ValueError, match=r"views must be one of \[1, 4, 8\], found 2"):
        surface_views(x, 2)
