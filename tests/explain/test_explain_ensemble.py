"""mfgtx.explain on ensembles: the members' maps averaged, the ensemble's own prediction, and
the deletion test watching the ensemble."""

from __future__ import annotations

import torch

from mfgtx.explain import attention_maps, deletion_test
from mfgtx.models import (
    CausalForecaster,
    ForecasterConfig,
    ForecasterEnsemble,
    SensorEncoder,
    SensorEncoderConfig,
    SensorEncoderEnsemble,
)


def test_sensor_ensemble_maps_are_the_members_mean_and_deletion_watches_the_ensemble() -> None:
    torch.manual_seed(0)
    cfg = SensorEncoderConfig(n_channels=3, max_len=16, d_model=8, n_heads=2, n_layers=2,
                              d_ff=16, task="classification", n_outputs=2)  # fmt: skip
    members = [SensorEncoder(cfg).eval() for _ in range(3)]
    ens = SensorEncoderEnsemble.of(members).eval()
    x = torch.randn(2, 16, 3)
    maps = attention_maps(ens, x)
    each = [attention_maps(m, x) for m in members]
    assert maps.model == "SensorEncoderEnsemble"
    torch.testing.assert_close(maps.rollout, torch.stack([e.rollout for e in each]).mean(0))
    with torch.no_grad():
        torch.testing.assert_close(maps.prediction, ens(x), atol=1e-5, rtol=0)
    calls = []
    ens.register_forward_hook(lambda *_: calls.append(1))  # the ensemble's own forward ran
    result = deletion_test(ens, x[:1], attention_maps(ens, x[:1]), fraction=0.25, n_random=2)
    assert len(calls) >= 3  # the full input, the attended deletion, the random ones
    alone = deletion_test(
        members[0], x[:1], attention_maps(members[0], x[:1]), fraction=0.25, n_random=2
    )
    assert result.unit == alone.unit and result.score_name == alone.score_name


def test_forecaster_ensemble_maps_and_deletion() -> None:
    torch.manual_seed(0)
    cfg = ForecasterConfig(n_channels=2, context_length=32, horizon=8, patch_len=8, stride=4,
                           d_model=16, n_heads=2, n_layers=1, d_ff=32, dropout=0.2,
                           quantiles=())  # fmt: skip
    ens = ForecasterEnsemble.of([CausalForecaster(cfg) for _ in range(2)]).eval()
    past = torch.randn(1, 32, 2)
    maps = attention_maps(ens, past)
    with torch.no_grad():
        torch.testing.assert_close(maps.prediction, ens(past), atol=1e-5, rtol=0)
    result = deletion_test(ens, past, maps, fraction=0.25, n_random=2)
    assert result.attended >= 0 and result.random_change.shape[0] == 2
