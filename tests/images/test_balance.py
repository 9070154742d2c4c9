"""Rare defect classes: rebalancing engages under 5 % of the training tiles, not above."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from mfgtx.images import RARE_SHARE, class_weights, plan_balancing


def labels(n_rare: int, n: int = 1000) -> np.ndarray:
    return np.r_[np.zeros(n - n_rare, np.int64), np.ones(n_rare, np.int64)]


def test_engages_below_five_percent_and_not_at_or_above() -> None:
    assert RARE_SHARE == 0.05
    below = plan_balancing(labels(49), 2)  # 4.9 %
    assert below.method == "weights" and below.rare == (1,)
    assert below.class_weights == class_weights(labels(49), 2)
    assert below.class_weights[1] > 10 * below.class_weights[0]
    for n_rare in (50, 51, 300):  # 5.0 %, 5.1 %, 30 %
        plan = plan_balancing(labels(n_rare), 2)
        assert plan.method == "none" and plan.rare == () and plan.class_weights is None
        assert plan.sampler(labels(n_rare)) is None
    assert plan_balancing(labels(99), 2, rare_share=0.1).method == "weights"


def test_sampler_draws_every_class_about_equally_often() -> None:
    y = labels(10)  # 1 %
    plan = plan_balancing(y, 2, method="sampler")
    assert plan.method == "sampler" and plan.class_weights is None
    sampler = plan.sampler(y, num_samples=20_000, generator=torch.Generator().manual_seed(0))
    drawn = y[np.fromiter(iter(sampler), dtype=np.int64)]
    assert 0.45 < drawn.mean() < 0.55
    w = plan.sample_weights(y)
    assert w[0] == pytest.approx(1 / 990) and w[-1] == pytest.approx(1 / 10)


def test_absent_classes_are_listed_not_weighted() -> None:
    y = np.r_[np.zeros(97, np.int64), np.full(3, 2, np.int64)]  # class 1 never seen
    plan = plan_balancing(y, 3)
    assert plan.rare == (2,) and plan.absent == (1,) and plan.counts == (97, 0, 3)
    assert plan.class_weights[1] == 1.0
    with pytest.raises(ValueError, match="no training sample"):
        plan_balancing(y, 3, method="sampler").sample_weights([1])


@pytest.mark.parametrize(
    ("args", "kwargs", "match"),
    [
        (([0, 1], 2), {"method": "oversample"}, "method must be 'weights' or 'sampler'"),
        (([0, 1], 2), {"rare_share": 0.0}, r"rare_share must lie in \(0, 1\)"),
        (([0, 1], 1), {}, "num_classes must be an integer >= 2"),
        (([0, 2], 2), {}, r"class numbers 0\.\.1, found values from 0 to 2"),
        (([0.0, 1.0], 2), {}, "class numbers"),
        (([], 2), {}, "non-empty 1-D"),
    ],
)
def test_inputs_are_checked(args, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match):
        plan_balancing(*args, **kwargs)
