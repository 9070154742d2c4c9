"""mfgtx.nn.Dropout: the distribution, scaling and gradient of torch.nn.Dropout."""

from __future__ import annotations

import pytest
import torch

from mfgtx.nn import Dropout


@pytest.mark.parametrize("p", [0.1, 0.2, 0.5])
def test_keeps_one_minus_p_and_scales_the_kept(p: float) -> None:
    torch.manual_seed(0)
    n = 400_000
    y = Dropout(p).train()(torch.ones(n))
    kept = y != 0
    # binomial standard error of the kept share is sqrt(p (1 - p) / n) <= 8e-4
    assert abs(kept.float().mean().item() - (1 - p)) < 4e-3
    torch.testing.assert_close(y[kept], torch.full_like(y[kept], 1 / (1 - p)))
    # unbiased: E[y] = x
    assert abs(y.mean().item() - 1.0) < 1e-2


def test_gradient_is_the_mask_times_the_scale() -> None:
    torch.manual_seed(1)
    x = torch.randn(64, 32, requires_grad=True)
    y = Dropout(0.3).train()(x)
    y.backward(torch.ones_like(y))
    kept = y.detach() != 0
    expected = kept.float() / 0.7
    torch.testing.assert_close(x.grad, expected)


def test_eval_zero_p_and_inplace_match_torch() -> None:
    x = torch.randn(5, 7)
    assert torch.equal(Dropout(0.5).eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)
    torch.manual_seed(2)
    ours = Dropout(0.5, inplace=True).train()(x.clone())
    torch.manual_seed(2)
    theirs = torch.nn.Dropout(0.5, inplace=True).train()(x.clone())
    assert torch.equal(ours, theirs)  # inplace goes to torch's own path
    assert torch.equal(Dropout(1.0).train()(x), torch.zeros_like(x))


def test_keeps_bf16_and_is_reproducible_under_a_seed() -> None:
    x = torch.randn(16, 16).to(torch.bfloat16)
    torch.manual_seed(3)
    a = Dropout(0.2).train()(x)
    torch.manual_seed(3)
    b = Dropout(0.2).train()(x)
    assert a.dtype == torch.bfloat16
    assert torch.equal(a, b)


def test_is_a_torch_dropout_with_its_repr_and_empty_state() -> None:
    d = Dropout(0.2)
    assert isinstance(d, torch.nn.Dropout)
    assert repr(d) == "Dropout(p=0.2, inplace=False)"
    assert d.state_dict() == {}


def test_every_16_bit_lane_of_a_draw_keeps_one_minus_p() -> None:
    # four elements share one 64-bit draw; a lane with a biased bit (say, a sign bit that is
    # always 0) would keep far more or fewer than 1 - p of its elements
    torch.manual_seed(4)
    p, n = 0.5, 800_000
    kept = (Dropout(p).train()(torch.ones(n)) != 0).float().view(-1, 4).mean(0)
    # per lane n / 4 elements: standard error 1.1e-3
    torch.testing.assert_close(kept, torch.full((4,), 1 - p), atol=6e-3, rtol=0)


@pytest.mark.parametrize("p", [0.003, 0.2])
def test_odd_sizes_and_small_p_keep_the_distribution(p: float) -> None:
    torch.manual_seed(5)
    x = torch.ones(7, 11, 13)  # 1001 elements, not a multiple of four
    assert Dropout(p).train()(x).shape == x.shape
    y = torch.cat([Dropout(p).train()(x).flatten() for _ in range(1000)])
    # p = 0.003 is off the 16-bit grid by more than 0.1 %: drawn on fp32 uniforms instead
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - p) < 5 * (p * (1 - p) / y.numel()) ** 0.5
