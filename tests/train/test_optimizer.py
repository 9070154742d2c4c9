"""build_optimizer: AdamW with decay on matrices only, on the fused kernel where torch has one."""

from __future__ import annotations

import torch
from tiny import TinyRegressor

from mfgtx.train import TrainConfig, build_optimizer


def test_decay_applies_to_matrices_only() -> None:
    model = TinyRegressor()
    opt = build_optimizer(model, TrainConfig(weight_decay=0.05))
    decay, no_decay = opt.param_groups
    assert decay["weight_decay"] == 0.05 and no_decay["weight_decay"] == 0.0
    assert all(p.dim() >= 2 for p in decay["params"])
    assert all(p.dim() < 2 for p in no_decay["params"])
    assert len(decay["params"]) + len(no_decay["params"]) == len(list(model.parameters()))


def test_cpu_runs_the_fused_kernel_and_matches_the_per_tensor_update() -> None:
    torch.manual_seed(0)
    fused_model = TinyRegressor()
    loop_model = TinyRegressor()
    loop_model.load_state_dict(fused_model.state_dict())
    start = {k: v.clone() for k, v in fused_model.state_dict().items()}
    config = TrainConfig(lr=1e-2, weight_decay=0.1)
    fused = build_optimizer(fused_model, config)
    assert fused.defaults["fused"] is True
    loop = torch.optim.AdamW(
        [{"params": g["params"], "weight_decay": g["weight_decay"]}
         for g in build_optimizer(loop_model, config).param_groups],
        lr=config.lr, betas=config.betas, foreach=False,
    )  # fmt: skip
    for _ in range(3):
        for model, opt in ((fused_model, fused), (loop_model, loop)):
            for p in model.parameters():
                p.grad = torch.ones_like(p) * 0.3 + p.detach() * 0.1
            opt.step()
    ref = loop_model.state_dict()
    for name, a in fused_model.state_dict().items():
        assert not torch.equal(a, start[name]), name  # the steps moved every parameter
        torch.testing.assert_close(a, ref[name], atol=1e-6, rtol=1e-5, msg=name)
