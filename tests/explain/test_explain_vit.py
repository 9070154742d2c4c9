"""mfgtx.explain on the DefectViT: CLS-to-patch maps, rollout over the image, deletion."""

from __future__ import annotations

import pytest
import torch

from mfgtx.explain import (
    KIND,
    NOTICE,
    attention_figure,
    attention_maps,
    deletion_test,
    overlap_score,
)
from mfgtx.models import DefectViT, ViTConfig


def cfg(**kw) -> ViTConfig:
    base = dict(
        image_size=32, patch_size=8, in_chans=1, num_classes=3, d_model=16, n_heads=2,
        n_layers=2, d_ff=32, dropout=0.1, stem="linear",
    )  # fmt: skip
    return ViTConfig(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "size"),
    [({}, 32), ({"pooling": "mean"}, 32), ({"stem": "conv"}, 32), ({}, 48)],
)
def test_maps_shapes_rollout_and_unchanged_predictions(kw, size) -> None:
    torch.manual_seed(0)
    model = DefectViT(cfg(**kw)).train()
    images = torch.randn(2, 1, size, size)
    maps = attention_maps(model, images)
    assert model.training and maps.kind == KIND and maps.notice == NOTICE
    m = (size // 8) ** 2
    n = m + (1 if model.config.pooling == "cls" else 0)
    assert maps.axis == "image patch" and maps.grid == (size // 8, size // 8)
    assert maps.layers[0].shape == (2, 2, n, n)
    assert maps.query.shape == (2, 2, 2, m) and maps.rollout.shape == (2, m)
    torch.testing.assert_close(maps.rollout_matrix.sum(-1), torch.ones(2, n))
    torch.testing.assert_close(maps.rollout.sum(-1), torch.ones(2))
    assert maps.upsampled(maps.rollout).shape == (2, size, size)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(maps.prediction, model(images), atol=1e-5, rtol=0)


def test_deletion_overlay_figure_and_overlap_on_the_vit() -> None:
    torch.manual_seed(0)
    model = DefectViT(cfg())
    images = torch.randn(3, 1, 32, 32)
    maps = attention_maps(model, images)
    result = deletion_test(model, images, maps, fraction=0.25, n_random=4)
    assert result.unit == "patches" and result.removed.tolist() == [4, 4, 4]
    assert torch.isfinite(result.attended_change).all()
    fig = attention_figure(maps, 0, image=images[0, 0], opacity=0.4)
    spec = fig.to_plotly_json()
    assert spec["layout"]["meta"]["kind"] == KIND
    assert [t["type"] for t in spec["data"]] == ["heatmap", "heatmap"]  # image, then map
    assert spec["data"][1]["opacity"] == 0.4
    masks = torch.zeros(3, 32, 32, dtype=torch.bool)
    masks[:, 8:16, 8:16] = True
    score = overlap_score(maps.upsampled(maps.rollout), masks)
    assert score.images == 3 and 0.0 <= score.auroc <= 1.0
