"""mfgtx.explain on the CausalForecaster: last-position-to-past maps and deletion."""

from __future__ import annotations

import pytest
import torch

from mfgtx.explain import KIND, NOTICE, attention_figure, attention_maps, deletion_test
from mfgtx.models import CausalForecaster, ForecasterConfig


def cfg(**kw) -> ForecasterConfig:
    base = dict(
        n_channels=2, context_length=32, horizon=8, patch_len=8, stride=4, d_model=16,
        n_heads=2, n_layers=2, d_ff=32, dropout=0.1, quantiles=(),
    )  # fmt: skip
    return ForecasterConfig(**(base | kw))


@pytest.mark.parametrize("kw", [{}, {"channel_independent": False}, {"head": "autoregressive"}])
def test_maps_shapes_and_unchanged_predictions(kw) -> None:
    torch.manual_seed(0)
    model = CausalForecaster(cfg(**kw)).train()
    past = torch.randn(3, 32, 2)
    maps = attention_maps(model, past)
    assert model.training and maps.kind == KIND and maps.notice == NOTICE
    assert maps.axis == "past patch" and len(maps.layers) == 2
    assert maps.layers[0].shape == (3, 2, 7, 7)  # (B, H, M, M): 7 patches of 8, stride 4
    assert maps.query.shape == (3, 2, 2, 7) and maps.rollout.shape == (3, 7)
    assert maps.spans.tolist()[-1] == [24, 32]  # the last patch ends with the context
    torch.testing.assert_close(maps.query.sum(-1), torch.ones(3, 2, 2))
    causal = maps.layers[0][:, :, :-1, -1]  # earlier positions never see the last patch
    assert torch.all(causal == 0)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(maps.prediction, model(past), atol=1e-5, rtol=0)


def test_deletion_and_figure_on_the_forecaster() -> None:
    torch.manual_seed(0)
    model = CausalForecaster(cfg())
    past = torch.randn(2, 32, 2)
    maps = attention_maps(model, past)
    result = deletion_test(model, past, maps, fraction=0.3, n_random=4)
    assert result.unit == "past patches" and result.removed.tolist() == [2, 2]
    assert torch.isfinite(result.attended_change).all()
    spec = attention_figure(maps, 1, which="layer", layer=1).to_plotly_json()
    assert spec["layout"]["meta"]["kind"] == KIND
