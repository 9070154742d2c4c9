"""compile='auto' | 'on' | 'off': the switch decides from the run's own first steps."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from tiny import TinyRegressor, WindowData

import mfgtx.train.compiling as compiling
from mfgtx.train import TrainConfig, fit
from mfgtx.train.compiling import TIMED_STEPS, CompileSwitch, decide


def drive(switch: CompileSwitch, seconds: dict[str, float], steps: int) -> list[str]:
    """Run ``steps`` full batches; each takes ``seconds`` of the function handed out (the
    first compiled call also pays ``seconds['compile']``)."""
    ran, compiled_once = [], False
    for _ in range(steps):
        fn = switch.step_fn(True)
        kind = "compiled" if fn is not switch.eager else "eager"
        took = seconds[kind]
        if kind == "compiled" and not compiled_once:
            took, compiled_once = took + seconds["compile"], True
        switch.done(took, True)
        ran.append(kind)
    return ran


def new_switch(mode: str = "auto", total: int = 1000, **kw) -> CompileSwitch:
    return CompileSwitch(mode, lambda b: "eager", lambda: (lambda b: "compiled"),
                         total_steps=total, **kw)  # fmt: skip


def test_auto_compiles_after_timing_eager_and_keeps_it_where_it_pays() -> None:
    switch = new_switch()
    ran = drive(switch, {"eager": 1.0, "compiled": 0.5, "compile": 30.0}, 20)
    n = 1 + TIMED_STEPS  # a warm-up step and the timed eager ones
    assert ran[:n] == ["eager"] * n and ran[n:] == ["compiled"] * (20 - n)
    assert switch.compiled is True
    assert switch.compile_seconds == pytest.approx(29.5)  # the first call less an eager step


def test_auto_goes_back_to_eager_where_compiled_is_not_faster() -> None:
    switch = new_switch()
    ran = drive(switch, {"eager": 1.0, "compiled": 0.95, "compile": 30.0}, 20)
    n = 1 + TIMED_STEPS
    assert ran[n : n + 1 + TIMED_STEPS] == ["compiled"] * (1 + TIMED_STEPS)
    assert ran[n + 1 + TIMED_STEPS :] == ["eager"] * (20 - n - 1 - TIMED_STEPS)
    assert switch.compiled is False


def test_auto_does_not_compile_a_short_run() -> None:
    switch = new_switch(total=50)  # 46 s left after timing: under COMPILE_MIN_SECONDS
    built = []
    switch.compile_step = lambda: built.append(1) or (lambda b: "compiled")
    assert drive(switch, {"eager": 1.0, "compiled": 0.1, "compile": 1.0}, 50) == ["eager"] * 50
    assert switch.compiled is False and not built


def test_partial_batches_run_eager_and_do_not_count() -> None:
    switch = new_switch(mode="on")
    assert switch.step_fn(False) is switch.eager
    assert switch.step_fn(True) is not switch.eager


def test_a_resumed_auto_run_keeps_its_choice_and_off_never_compiles() -> None:
    assert new_switch(resumed=True).step_fn(True) is not None
    assert new_switch(resumed=True).compiled is True
    assert new_switch(resumed=False).compiled is False
    off = new_switch(mode="off")
    assert drive(off, {"eager": 1.0, "compiled": 0.1, "compile": 1.0}, 10) == ["eager"] * 10


def test_decide_needs_the_margin_and_twice_the_compile_time_back() -> None:
    assert decide(1.0, 0.5, 10.0, 100)[0] is True
    assert decide(1.0, 0.91, 0.0, 10**6)[0] is False
    assert decide(1.0, 0.5, 25.0, 100)[0] is False  # saves 50 s, not more than 2 x 25 s


# --- through fit ----------------------------------------------------------------------------


def cfg(**kw) -> TrainConfig:
    base = dict(epochs=2, batch_size=16, lr=3e-3, patience=None, progress="off", seed=0,
                precision="fp32")  # fmt: skip
    return TrainConfig(**(base | kw))


def train(config: TrainConfig, **fit_kw):
    torch.manual_seed(0)
    model = TinyRegressor()
    result = fit(model, WindowData(40, seed=1), WindowData(16, seed=2), config, **fit_kw)
    return result, model


class NoDropout(TinyRegressor):
    """TinyRegressor without dropout: compiled dropout draws another random stream."""

    def __init__(self) -> None:
        super().__init__()
        for m in self.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0


@pytest.mark.slow
def test_fit_with_compile_on_matches_eager_up_to_fused_rounding() -> None:
    def run(mode: str):
        torch.manual_seed(0)
        model = NoDropout()
        result = fit(model, WindowData(40, seed=1), WindowData(16, seed=2), cfg(compile=mode))
        return result, model

    (compiled, model), (eager, eager_model) = run("on"), run("off")
    assert compiled.compiled is True and eager.compiled is False
    for a, b in zip(model.state_dict().values(), eager_model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-3)


def test_fit_counts_compiled_steps_on_full_batches_only(monkeypatch) -> None:
    steps: list[int] = []
    real = torch.compile

    def spy(net, **kw):
        compiled = real(net, **kw)

        def step(batch):
            steps.append(len(batch["x"]))
            return compiled(batch)

        return step

    monkeypatch.setattr(torch, "compile", spy)
    result, _ = train(cfg(compile="on"))  # 40 samples: batches of 16, 16 and 8
    assert result.compiled is True and steps == [16, 16] * 2


def test_fit_falls_back_to_eager_when_compiling_fails(monkeypatch, caplog) -> None:
    def broken(net, **kw):
        def step(batch):
            raise RuntimeError("Compiler: cc not found")

        return step

    monkeypatch.setattr(torch, "compile", broken)
    with pytest.warns(RuntimeWarning, match="torch.compile failed .*training eagerly"):
        result, model = train(cfg(compile="on"))
    _, eager_model = train(cfg(compile="off"))
    assert result.compiled is False
    for a, b in zip(model.state_dict().values(), eager_model.state_dict().values(), strict=True):
        assert torch.equal(a, b)  # the failed batch ran eagerly: nothing lost or doubled


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_fit_auto_decides_from_its_steps_and_a_resumed_run_keeps_the_choice(
    monkeypatch, caplog, tmp_path: Path
) -> None:
    monkeypatch.setattr(compiling, "COMPILE_MIN_SECONDS", 0.0)
    monkeypatch.setattr(compiling, "decide", lambda *a: (True, "forced"))
    config = cfg(compile="auto", epochs=6, checkpoint_dir=str(tmp_path))
    with caplog.at_level(logging.INFO, logger="mfgtx.train"):
        whole, whole_model = train(cfg(compile="auto", epochs=6))
    assert whole.compiled is True and "compile auto: compiled, forced" in caplog.text

    def stop_in_epoch_5(step: int, loss: float) -> None:
        if step == 13:  # 3 steps an epoch: the first step of epoch 5
            raise Interrupt

    with pytest.raises(Interrupt):
        train(config, on_step=stop_in_epoch_5)

    def refuse(*a):
        raise AssertionError("a resumed run was timed again")

    monkeypatch.setattr(compiling, "decide", refuse)
    resumed, resumed_model = train(cfg(compile="auto", epochs=6, checkpoint_dir=str(tmp_path),
                                       resume=True))  # fmt: skip
    assert resumed.compiled is True and resumed.resumed_from_epoch == 4
    for a, b in zip(whole_model.state_dict().values(), resumed_model.state_dict().values(),
                    strict=True):  # fmt: skip
        assert torch.equal(a, b)


def test_the_default_never_compiles(monkeypatch) -> None:
    def refuse(*a, **k):
        raise AssertionError("torch.compile was called with compile left at its default")

    monkeypatch.setattr(torch, "compile", refuse)
    assert TrainConfig().compile == "off"
    result, _ = train(cfg())
    assert result.compiled is False
