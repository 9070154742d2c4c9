"""ema_decay: fit validates and keeps a moving average of the weights."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from tiny import TinyRegressor, WindowData

from mfgtx.train import TrainConfig, fit
from mfgtx.train.ema import WeightAverage


def cfg(**kw) -> TrainConfig:
    base = dict(epochs=2, batch_size=16, lr=3e-3, patience=None, progress="off", seed=0,
                precision="fp32")  # fmt: skip
    return TrainConfig(**(base | kw))


def test_the_average_follows_the_formula_with_its_warm_up() -> None:
    model = torch.nn.Linear(3, 2)
    avg = WeightAverage(model, decay=0.9)
    expected = {k: v.clone() for k, v in model.state_dict().items()}
    for step in range(1, 30):
        with torch.no_grad():
            for p in model.parameters():
                p.add_(torch.randn_like(p))
        avg.update(model, step)
        d = min(0.9, (1 + step) / (10 + step))
        for k, v in model.state_dict().items():
            expected[k] = d * expected[k] + (1 - d) * v
    for k, v in avg.state_dict().items():
        torch.testing.assert_close(v, expected[k])


def test_buffers_are_copied_not_averaged() -> None:
    model = torch.nn.BatchNorm1d(2)
    avg = WeightAverage(model, decay=0.99)
    model(torch.randn(8, 2) * 5 + 3)  # training mode: running statistics move
    avg.update(model, 1)
    assert torch.equal(avg.model.running_mean, model.running_mean)


def test_fit_keeps_the_average_of_its_steps_not_the_raw_weights() -> None:
    torch.manual_seed(0)
    model = TinyRegressor()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    snapshots: list[dict[str, torch.Tensor]] = []

    def snapshot(step: int, loss: float) -> None:
        snapshots.append({k: v.clone() for k, v in model.state_dict().items()})

    fit(model, WindowData(48, seed=1), WindowData(16, seed=2), cfg(epochs=1, ema_decay=0.8),
        on_step=snapshot)  # fmt: skip
    params = {k for k, _ in model.named_parameters()}
    expected = {k: v.clone() for k, v in start.items() if k in params}
    for step, weights in enumerate(snapshots, start=1):
        d = min(0.8, (1 + step) / (10 + step))
        for k in expected:
            expected[k] = d * expected[k] + (1 - d) * weights[k]
    final = model.state_dict()
    for k in expected:
        torch.testing.assert_close(final[k], expected[k])
    assert any(not torch.equal(final[k], snapshots[-1][k]) for k in expected)


class Interrupt(Exception):
    pass


def test_a_resumed_run_with_an_average_ends_identical(tmp_path: Path) -> None:
    def run(config: TrainConfig, **kw):
        torch.manual_seed(0)
        model = TinyRegressor()
        fit(model, WindowData(48, seed=1), WindowData(16, seed=2), config, **kw)
        return model

    whole = run(cfg(epochs=3, ema_decay=0.9))

    def stop(step: int, loss: float) -> None:
        if step == 7:  # in epoch 3 (3 steps an epoch)
            raise Interrupt

    config = cfg(epochs=3, ema_decay=0.9, checkpoint_dir=str(tmp_path))
    with pytest.raises(Interrupt):
        run(config, on_step=stop)
    resumed = run(cfg(epochs=3, ema_decay=0.9, checkpoint_dir=str(tmp_path), resume=True))
    for a, b in zip(whole.state_dict().values(), resumed.state_dict().values(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("decay", [0.0, 1.0, -0.5, 2.0])
def test_a_decay_outside_zero_to_one_is_refused(decay: float) -> None:
    with pytest.raises(ValueError, match="ema_decay must be in"):
        TrainConfig(ema_decay=decay)
