"""precision="auto": the faster precision, timed without leaving a trace on the run."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import torch
from tiny import TinyRegressor, WindowData

import mfgtx.train.loop as loop
import mfgtx.train.precision as precision
from mfgtx.train import TrainConfig, choose_precision, fit


class FakeClock:
    """Seconds that pass only when a step runs: ``cost[precision]`` per forward."""

    def __init__(self, **cost: float) -> None:
        self.now, self.cost, self.calls, self.reads = 0.0, cost, [], 0

    def __call__(self) -> float:
        self.reads += 1
        return self.now

    def step(self, p: str) -> None:
        self.calls.append(p)
        self.now += self.cost[p]


def test_choose_precision_picks_the_faster_on_medians_after_warm_up() -> None:
    clock = FakeClock(fp32=2.0, bf16=1.0)
    first = {"bf16": True}

    def step(p: str) -> None:
        if p == "bf16" and first["bf16"]:  # the warm-up round pays first-call costs
            first["bf16"] = False
            clock.now += 100.0
        clock.step(p)

    choice = choose_precision(step, warmup=1, repeats=3, clock=clock)
    assert choice.precision == "bf16"
    assert choice.seconds == {"fp32": 2.0, "bf16": 1.0}  # the 100 s warm-up is not counted
    assert clock.calls == ["fp32", "bf16"] * 4  # interleaved rounds, warm-up included


def test_choose_precision_prefers_fp32_on_a_tie_and_when_bf16_is_slower() -> None:
    for cost in ({"fp32": 1.0, "bf16": 1.0}, {"fp32": 1.0, "bf16": 3.0}):
        clock = FakeClock(**cost)
        assert choose_precision(clock.step, clock=clock).precision == "fp32"


def test_bf16_must_win_by_the_margin_so_close_timings_keep_fp32() -> None:
    clock = FakeClock(fp32=1.0, bf16=0.95)  # 5 % faster: noise on a shared machine
    assert choose_precision(clock.step, clock=clock).precision == "fp32"
    clock = FakeClock(fp32=1.0, bf16=0.85)
    assert choose_precision(clock.step, clock=clock).precision == "bf16"
    assert precision.fastest({"fp32": 1.0, "bf16": 0.95}, margin=0.0) == "bf16"


def test_choose_precision_checks_its_arguments() -> None:
    with pytest.raises(ValueError, match="at least one candidate"):
        choose_precision(lambda p: None, candidates=())
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        choose_precision(lambda p: None, repeats=0)


class Clocked(TinyRegressor):
    """TinyRegressor whose every training forward advances a fake clock by its precision."""

    clock: FakeClock | None = None  # a class attribute: shared with fit's deep copy

    def loss(self, batch):  # type: ignore[override]
        if Clocked.clock is not None and torch.is_grad_enabled():
            Clocked.clock.step("bf16" if torch.is_autocast_enabled("cpu") else "fp32")
        return super().loss(batch)


def cfg(**kw) -> TrainConfig:
    base = dict(epochs=2, batch_size=16, lr=3e-3, patience=None, progress="off", seed=0)
    return TrainConfig(**(base | kw))


def run(config: TrainConfig, clock: FakeClock | None = None, **fit_kw):
    Clocked.clock = clock
    torch.manual_seed(0)
    model, train = Clocked(), WindowData(48, seed=1)
    try:
        result = fit(model, train, WindowData(16, seed=2), config, **fit_kw)
    finally:
        Clocked.clock = None
    return result, model, train


@pytest.fixture
def bf16_hardware(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "cpu_has_fast_bf16", lambda cpuinfo=None: True)


def fake_clock(monkeypatch: pytest.MonkeyPatch, **cost: float) -> FakeClock:
    clock = FakeClock(**cost)
    monkeypatch.setattr(precision, "_clock", clock)
    return clock


def assert_same_weights(a: torch.nn.Module, b: torch.nn.Module) -> None:
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


@pytest.mark.slow
@pytest.mark.parametrize(("cost", "expected"), [({"fp32": 1.0, "bf16": 0.25}, "bf16"),
                                                ({"fp32": 1.0, "bf16": 4.0}, "fp32")])  # fmt: skip
def test_auto_trains_in_the_faster_precision_and_leaves_no_trace(
    bf16_hardware, monkeypatch: pytest.MonkeyPatch, caplog, cost: dict, expected: str
) -> None:
    clock = fake_clock(monkeypatch, **cost)
    with caplog.at_level(logging.INFO, logger="mfgtx.train"):
        auto, auto_model, auto_data = run(cfg(precision="auto"), clock)
    assert auto.precision == expected
    # 2 warm-up steps (a read before each) + 3 timed rounds of both (before and after each)
    assert clock.reads == 2 + 3 * 2 * 2
    assert "precision auto on cpu: fp32 1.000 s" in caplog.text and f"-> {expected}" in caplog.text
    named, named_model, named_data = run(cfg(precision=expected))
    # same weights, losses and data order as naming the precision: the timing steps touched
    # neither the model nor its optimizer, the RNG or the order of the batches
    assert_same_weights(auto_model, named_model)
    assert [h["train_loss"] for h in auto.history] == [h["train_loss"] for h in named.history]
    timing_reads = auto_data.seen[:16]  # the timing batch: the first batch_size samples
    assert timing_reads == list(range(16))
    assert auto_data.seen[16:] == named_data.seen


def test_auto_without_fast_bf16_is_fp32_without_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(precision, "cpu_has_fast_bf16", lambda cpuinfo=None: False)

    def no_timing(*a, **k):
        raise AssertionError("precision was timed on hardware without fast bf16")

    monkeypatch.setattr(loop, "choose_precision", no_timing)
    result, _, _ = run(cfg(precision="auto", epochs=1))
    assert result.precision == "fp32"


def test_named_precision_is_never_timed(bf16_hardware, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = fake_clock(monkeypatch, fp32=1.0, bf16=0.1)
    result, _, _ = run(cfg(precision="fp32", epochs=1), clock)
    assert result.precision == "fp32" and clock.reads == 0


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_resumed_auto_run_keeps_the_checkpoint_precision_and_ends_identical(
    bf16_hardware, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    clock = fake_clock(monkeypatch, fp32=1.0, bf16=0.25)
    whole, whole_model, _ = run(cfg(precision="auto", checkpoint_dir=str(tmp_path / "a")), clock)
    assert whole.precision == "bf16"

    def stop_in_epoch_2(step: int, loss: float) -> None:
        if step == 4:  # 48 samples / 16: the first step of epoch 2
            raise Interrupt

    broken = cfg(precision="auto", checkpoint_dir=str(tmp_path / "b"))
    with pytest.raises(Interrupt):
        run(broken, clock, on_step=stop_in_epoch_2)
    # the machine now times fp32 faster: the resumed run must still continue in bf16
    clock = fake_clock(monkeypatch, fp32=1.0, bf16=4.0)
    resumed, resumed_model, _ = run(
        cfg(precision="auto", checkpoint_dir=str(tmp_path / "b"), resume=True), clock
    )
    assert resumed.resumed_from_epoch == 1 and resumed.precision == "bf16"
    assert clock.reads == 0  # not timed again
    assert_same_weights(whole_model, resumed_model)
