"""CausalForecaster with RevIN on: nothing a position outputs depends on a step it may not see.

Teacher forcing normalises each context position with the statistics of the context up to
the end of its patch (causal RevIN); these tests change values after a time ``t`` and check,
to the last bit, that nothing at or before ``t`` moves, and that the teacher-forced outputs
equal what cached generation produces from the same prefix.
"""

from __future__ import annotations

import pytest
import torch

from mfgtx.models import CausalForecaster, ForecasterConfig
from mfgtx.models.revin import instance_stats, prefix_stats


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def model_of(*, wild: bool = False, **kw) -> CausalForecaster:
    """A tiny forecaster; ``wild``: weights far from their small initial values, so that every
    token moves the output well above float rounding (a fresh model barely attends)."""
    base = dict(n_channels=2, context_length=32, horizon=8, patch_len=8, stride=4, d_model=16,
                n_heads=2, n_layers=2, d_ff=32, dropout=0.0, head="autoregressive",
                quantiles=())  # fmt: skip
    model = CausalForecaster(ForecasterConfig(**(base | kw))).eval()
    if wild:
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0.0, 0.3)
    return model


# --- prefix statistics -------------------------------------------------------------------------


def test_prefix_stats_equal_the_statistics_of_each_prefix_and_ignore_later_values() -> None:
    x = torch.randn(3, 20, 2) * 5 + 40
    seen = torch.rand(3, 20, 2) > 0.2
    x = torch.where(seen, x, torch.nan)
    ends = torch.tensor([3, 8, 13, 20])
    got = prefix_stats(x, seen, ends)
    for j, e in enumerate(ends.tolist()):
        ref = instance_stats(x[:, :e], seen[:, :e])  # the two-pass statistics of the prefix
        torch.testing.assert_close(got.mean[:, j : j + 1], ref.mean, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got.std[:, j : j + 1], ref.std, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(got.count[:, j], seen[:, :e].sum(1).float())
    later = x.clone()
    later[:, 13:] = 1e6  # changes only the last prefix
    again = prefix_stats(later, seen, ends)
    assert torch.equal(again.mean[:, :3], got.mean[:, :3])
    assert torch.equal(again.std[:, :3], got.std[:, :3])
    assert not torch.allclose(again.mean[:, 3], got.mean[:, 3])


def test_prefix_stats_refuse_ends_outside_the_series() -> None:
    with pytest.raises(ValueError, match=r"ends must be 1-D prefix lengths in 1\.\.5"):
        prefix_stats(torch.zeros(1, 5, 1), None, torch.tensor([0, 5]))


# --- teacher forcing -------------------------------------------------------------------------


@pytest.mark.parametrize("ci", [True, False])
@pytest.mark.parametrize("gaps", [False, True])
def test_with_revin_a_late_change_of_the_past_leaves_earlier_positions_alone(
    ci: bool, gaps: bool
) -> None:
    model = model_of(channel_independent=ci, quantiles=(0.1, 0.9))
    assert model.config.revin  # the default
    past = torch.randn(2, 32, 2) * 3 + 10
    observed = torch.ones_like(past, dtype=torch.bool)
    if gaps:
        observed[0, 2:9, 1] = False
        observed[1, :5, 0] = False
    past2 = past.clone()
    past2[:, 20:] = past2[:, 20:] * 4 - 7  # the level and spread of steps 20..31 change
    mean, scale = model.next_patches(past, observed=observed)
    mean2, scale2 = model.next_patches(past2, observed=observed)
    # patch i covers [4i, 4i + 8): patches 0..3 end at 8, 12, 16, 20 and never see step 20
    assert mean.shape == (2, 7, 4, 2)
    torch.testing.assert_close(mean2[:, :4], mean[:, :4], rtol=0, atol=0)
    torch.testing.assert_close(scale2[:, :4], scale[:, :4], rtol=0, atol=0)
    assert not torch.allclose(mean2[:, 4:], mean[:, 4:])


def test_training_gradients_of_early_positions_ignore_later_context() -> None:
    """In training mode too: the gradients of positions 0..3's outputs (their patches end by
    step 20) are bit-identical when steps 24 on change."""
    model = model_of()
    model.train()
    past, y = torch.randn(2, 32, 2), torch.randn(2, 8, 2)
    mean, _ = model.next_patches(past, y)
    early = mean[:, :4].sum()
    grads = torch.autograd.grad(early, list(model.parameters()), allow_unused=True)
    past2 = past.clone()
    past2[:, 24:] += 50.0
    mean2, _ = model.next_patches(past2, y)
    grads2 = torch.autograd.grad(mean2[:, :4].sum(), list(model.parameters()), allow_unused=True)
    for g, g2 in zip(grads, grads2, strict=True):
        assert (g is None) == (g2 is None)
        if g is not None:
            assert torch.equal(g, g2)


def test_a_series_missing_at_the_start_is_not_scored_before_its_first_value() -> None:
    """Positions that saw no value of a series cannot know its level: they are left out of
    the loss instead of being scored against a level of 1000 they never saw."""
    model = model_of(channel_independent=True)
    model.train()
    past = 1000.0 + torch.randn(4, 32, 2)
    observed = torch.ones_like(past, dtype=torch.bool)
    observed[:, :14, 0] = False  # patches 0..1 end at 8 and 12: nothing of series 0 yet
    past = torch.where(observed, past, torch.nan)
    loss = model.loss({"x": past, "observed": observed, "y": 1000.0 + torch.randn(4, 8, 2)})
    value = float(loss.detach())
    assert value < 100.0, value


# --- parity with generation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"channel_independent": False},
        {"quantiles": (0.1, 0.9), "stride": 8},
        {"n_past_covariates": 1, "n_future_covariates": 1, "positional": "rotary"},
    ],
)
def test_teacher_forced_positions_equal_the_cached_generation_steps(kw: dict) -> None:
    model = model_of(wild=True, **kw)
    c, steps = model.config, 3
    s, N = c.patch_stride, c.n_patches
    past = torch.randn(2, 32, 2) * 2 + 5
    extra = {}
    if c.n_past_covariates:
        extra["past_covariates"] = torch.randn(2, 32, 1)
    if c.n_future_covariates:
        extra["future_covariates"] = torch.randn(2, 32 + steps * s, 1)
    generated = model.generate(past, steps, **extra)  # (2, steps * s, 2)
    torch.testing.assert_close(
        model.generate(past, steps, use_cache=False, **extra), generated, rtol=1e-5, atol=1e-5
    )
    with torch.no_grad():  # the same prefix: the context, then what generation fed back in
        mean, _ = model.next_patches(past, generated, **extra)
    forecast = mean[:, N - 1 :].reshape(2, steps * s, 2)  # positions that predict the horizon
    torch.testing.assert_close(forecast, generated, rtol=1e-5, atol=1e-5)


# --- both heads: forecasts issued at or before t ------------------------------------------------


@pytest.mark.parametrize("head", ["direct", "autoregressive"])
@pytest.mark.parametrize("ci", [True, False])
def test_forecasts_issued_by_time_t_ignore_everything_after_t(head: str, ci: bool) -> None:
    model = model_of(head=head, channel_independent=ci, quantiles=(0.1, 0.9))
    assert model.config.revin
    series = torch.randn(1, 120, 2).cumsum(1)  # a wandering level: RevIN has work to do
    t = 80
    later = series.clone()
    later[:, t:] = later[:, t:] * 3 + 20

    def issued(s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        origins = range(32, 121 - 8)  # a forecast made at time o reads steps [o - 32, o)
        pasts = torch.cat([s[:, o - 32 : o] for o in origins])
        with torch.no_grad():
            if head == "direct":
                return model.forecast_with_quantiles(pasts)
            draws = torch.Generator().manual_seed(0)  # the same draws for both series
            bands = model.predict_quantiles(pasts, num_samples=16, generator=draws)
            return model(pasts), bands

    point, bands = issued(series)
    point2, bands2 = issued(later)
    upto = t - 32 + 1  # origins 32..t
    torch.testing.assert_close(point2[:upto], point[:upto], rtol=0, atol=0)
    torch.testing.assert_close(bands2[:upto], bands[:upto], rtol=0, atol=0)
    assert not torch.allclose(point2[upto:], point[upto:])
