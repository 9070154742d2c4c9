"""The training engine: convergence, flash kernel, precision, early stopping, errors."""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path

import pytest
import torch
from tiny import TinyRegressor, WindowData
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfgtx.train import (
    CheckpointError,
    NonFiniteLossError,
    TrainConfig,
    cpu_has_fast_bf16,
    evaluate,
    fit,
    load_checkpoint,
    predict,
    resolve_precision,
)


def cfg(**kw) -> TrainConfig:
    base = dict(epochs=3, batch_size=16, lr=3e-3, precision="fp32", progress="off", seed=0)
    return TrainConfig(**(base | kw))


def test_fit_learns_and_restores_best_weights() -> None:
    model = TinyRegressor()
    train, val = WindowData(128, seed=1), WindowData(48, seed=2)
    before = evaluate(model, val)["loss"]
    result = fit(model, train, val, cfg(epochs=6))
    after = evaluate(model, val)["loss"]
    assert after < 0.5 * before
    assert after == pytest.approx(result.best_val_loss, rel=1e-5)  # the best weights are back
    assert result.precision == "fp32" and result.world_size == 1
    assert [h["epoch"] for h in result.history] == [1, 2, 3, 4, 5, 6]
    assert all(h["samples_per_s"] > 0 for h in result.history)
    assert not model.training


def test_fit_runs_on_the_flash_kernel() -> None:
    model = TinyRegressor()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # raises if any attention call cannot use it
        result = fit(model, WindowData(32, seed=1), WindowData(16, seed=2), cfg(epochs=1))
    assert len(result.history) == 1


def test_bf16_autocast_runs_and_is_reported() -> None:
    model = TinyRegressor()
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        result = fit(
            model, WindowData(32, seed=1), WindowData(16, seed=2), cfg(epochs=1, precision="bf16")
        )
    assert result.precision == "bf16"
    assert all(p.dtype == torch.float32 for p in model.parameters())  # master weights stay fp32


def test_auto_precision_follows_the_hardware() -> None:
    assert cpu_has_fast_bf16("flags : sse avx512_bf16") and not cpu_has_fast_bf16("flags : avx2")
    expected = "bf16" if cpu_has_fast_bf16() else "fp32"
    assert resolve_precision("auto", torch.device("cpu")) == expected
    assert resolve_precision("fp32", torch.device("cpu")) == "fp32"


@pytest.mark.slow
def test_early_stopping_stops_and_keeps_the_best_epoch() -> None:
    model = TinyRegressor()
    # validation targets unrelated to training: the val loss soon stops improving
    val = WindowData(32, seed=2)
    val.y = torch.randn(32) * 5
    result = fit(model, WindowData(64, seed=1), val, cfg(epochs=30, patience=2, lr=1e-2))
    assert result.stopped_early and len(result.history) < 30
    assert result.best_epoch == min(result.history, key=lambda h: h["val_loss"])["epoch"]
    assert evaluate(model, val)["loss"] == pytest.approx(result.best_val_loss, rel=1e-5)


class SlowWindows(WindowData):
    """Every sample takes 5 ms to read: an epoch of 16 samples takes at least 80 ms."""

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        time.sleep(0.005)
        return super().__getitem__(i)


def test_max_minutes_stops_before_an_epoch_that_would_end_late(tmp_path: Path) -> None:
    # 16 samples: each epoch >= 80 ms; a 130 ms budget (0.0022 min) holds one epoch, not two
    train, val = SlowWindows(12, seed=1), SlowWindows(4, seed=2)
    limited = cfg(epochs=20, max_minutes=0.0022, checkpoint_dir=str(tmp_path), patience=None)
    result = fit(TinyRegressor(), train, val, limited)
    assert [h["epoch"] for h in result.history] == [1] and result.stopped_early
    assert result.history[0]["seconds"] >= 0.08
    # resumed, the epoch already trained counts: still no room for another
    again = fit(TinyRegressor(), train, val, dataclasses.replace(limited, resume=True))
    assert again.resumed_from_epoch == 1 and len(again.history) == 1
    # without the limit the same run trains on
    assert len(fit(TinyRegressor(), train, val, cfg(epochs=2, patience=None)).history) == 2


def test_non_finite_loss_names_the_step_and_keeps_the_checkpoint(tmp_path: Path) -> None:
    train = WindowData(64, seed=1, poison_index=5)
    # shuffling puts sample 5 somewhere in epoch 1; find out where to check the message
    with pytest.raises(NonFiniteLossError, match=r"loss became nan at epoch 1, step \d+ of 4"):
        fit(TinyRegressor(), train, WindowData(16, seed=2), cfg(checkpoint_dir=str(tmp_path)))
    # a run whose data goes bad in epoch 2: the checkpoint of epoch 1 must stay as it was
    train = WindowData(64, seed=1)

    def poison_after_epoch_1(step: int, loss: float) -> None:
        if step == 4:  # 64 samples / 16 per batch: the last step of epoch 1
            train.x[7] = float("nan")

    ckpt = tmp_path / "run2"
    with pytest.raises(
        NonFiniteLossError, match=r"at epoch 2, step \d+ of 4 .*last good checkpoint: .*last.ckpt"
    ):
        fit(
            TinyRegressor(),
            train,
            WindowData(16, seed=2),
            cfg(checkpoint_dir=str(ckpt)),
            on_step=poison_after_epoch_1,
        )
    good = (ckpt / "last.ckpt").read_bytes()
    assert load_checkpoint(ckpt / "last.ckpt")["epoch"] == 1
    with pytest.raises(NonFiniteLossError):  # resuming meets the same bad sample again
        fit(
            TinyRegressor(),
            train,
            WindowData(16, seed=2),
            cfg(checkpoint_dir=str(ckpt), resume=True),
        )
    assert (ckpt / "last.ckpt").read_bytes() == good


def test_corrupted_checkpoint_is_refused(tmp_path: Path) -> None:
    fit(
        TinyRegressor(),
        WindowData(32, seed=1),
        WindowData(16, seed=2),
        cfg(epochs=1, checkpoint_dir=str(tmp_path)),
    )
    path = tmp_path / "last.ckpt"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="last.ckpt is corrupted: its content.s sha256"):
        fit(
            TinyRegressor(),
            WindowData(32, seed=1),
            WindowData(16, seed=2),
            cfg(epochs=2, checkpoint_dir=str(tmp_path), resume=True),
        )


def test_resume_refuses_a_changed_configuration(tmp_path: Path) -> None:
    fit(
        TinyRegressor(),
        WindowData(32, seed=1),
        WindowData(16, seed=2),
        cfg(epochs=1, checkpoint_dir=str(tmp_path)),
    )
    with pytest.raises(CheckpointError, match=r"configuration changed \(lr: 0.003 -> 0.01\)"):
        fit(
            TinyRegressor(),
            WindowData(32, seed=1),
            WindowData(16, seed=2),
            cfg(epochs=1, lr=1e-2, checkpoint_dir=str(tmp_path), resume=True),
        )


def test_predict_scores_every_sample_once_in_order() -> None:
    model = TinyRegressor().eval()
    data = WindowData(37, seed=3)
    out = predict(model, data, batch_size=8)  # 4 full batches and one of 5
    assert out.shape == (37,)
    with torch.no_grad():
        expected = model.predict({"x": data.x})
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_log_lines_when_nobody_watches(caplog) -> None:
    with caplog.at_level(logging.INFO, logger="mfgtx.train"):
        fit(
            TinyRegressor(),
            WindowData(64, seed=1),
            WindowData(16, seed=2),
            cfg(epochs=1, progress="log", log_every=2),
        )
    text = caplog.text
    assert "samples/s" in text and "epoch 1: train" in text and "precision fp32" in text


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"epochs": 0}, "epochs must be a positive integer, found 0"),
        ({"precision": "fp16"}, "precision must be one of"),
        ({"resume": True}, "resume=True needs a checkpoint_dir"),
        ({"warmup_fraction": 1.5}, "warmup_fraction"),
        ({"max_minutes": 0}, "max_minutes must be a positive number of minutes"),
        ({"max_minutes": float("inf")}, "max_minutes must be a positive number of minutes"),
    ],
)
def test_config_validation(kw: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cfg(**kw)


def test_model_without_loss_is_refused() -> None:
    with pytest.raises(TypeError, match="has no loss"):
        fit(torch.nn.Linear(2, 2), WindowData(8, seed=1), WindowData(8, seed=2), cfg())


def test_sample_weights_draw_each_epoch_in_proportion_and_repeat_by_seed() -> None:
    from mfgtx.train import ShardSampler

    w = [1.0] * 10 + [0.0] * 30  # only the first 10 samples may be drawn
    model, train = TinyRegressor(), WindowData(40, seed=1)
    fit(model, train, WindowData(8, seed=2), cfg(epochs=2, patience=None), sample_weights=w)
    drawn = train.seen[-80:]  # the two epochs (the timing for precision="auto" is off here)
    assert len(drawn) == 80 and set(drawn) <= set(range(10)) and len(set(drawn)) > 5
    one = ShardSampler(40, weights=w, seed=3)
    again = ShardSampler(40, weights=w, seed=3)
    first = list(one)
    one.set_epoch(1)
    assert first == list(again) and first != list(one)  # same seed and epoch: same draws
    shards = [list(ShardSampler(40, weights=w, seed=3, rank=r, world_size=2)) for r in (0, 1)]
    assert sorted(shards[0] + shards[1]) == sorted(first)  # the processes split one draw


@pytest.mark.parametrize(
    ("weights", "match"),
    [([1.0] * 39, "one per training sample \\(40\\), found 39"),
     ([0.0] * 40, "at least one above 0"), ([-1.0] + [1.0] * 39, "finite and >= 0")],
)  # fmt: skip
def test_bad_sample_weights_are_refused(weights, match) -> None:
    with pytest.raises(ValueError, match=match):
        fit(TinyRegressor(), WindowData(40, seed=1), WindowData(8, seed=2), cfg(),
            sample_weights=weights)  # fmt: skip


class _WithClassWeights(TinyRegressor):
    """A model as an earlier version built it: a tensor its loss used among its weights."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("class_weights", torch.ones(2))


class _Retired(TinyRegressor):
    RETIRED_TENSORS = frozenset({"class_weights"})


@pytest.mark.parametrize("ema", [None, 0.9])
def test_resume_leaves_out_tensors_the_model_retired(tmp_path: Path, ema) -> None:
    """A checkpoint written before a tensor left the model (class weights moved to the loss)
    resumes, as bundles of that version load: the retired tensor is left out."""
    fit(
        _WithClassWeights(),
        WindowData(32, seed=1),
        WindowData(16, seed=2),
        cfg(epochs=2, checkpoint_dir=str(tmp_path), ema_decay=ema),
    )
    for model in (TinyRegressor(), _Retired()):
        run = cfg(epochs=2, checkpoint_dir=str(tmp_path), ema_decay=ema, resume=True)
        if type(model) is TinyRegressor:  # not named retired: the checkpoint does not fit
            with pytest.raises(RuntimeError, match="class_weights"):
                fit(model, WindowData(32, seed=1), WindowData(16, seed=2), run)
        else:
            result = fit(model, WindowData(32, seed=1), WindowData(16, seed=2), run)
            assert len(result.history) == 2


def test_turns_of_one_epoch_end_with_the_weights_of_one_call(tmp_path: Path) -> None:
    """``turn_seconds=0``: every call trains one epoch, writes its checkpoint and says
    ``paused``; the next resumes. The last turn ends exactly where one call ends."""
    train, val = WindowData(48, seed=1), WindowData(16, seed=2)
    torch.manual_seed(0)
    whole = TinyRegressor()
    one = fit(whole, train, val, cfg(epochs=4, checkpoint_dir=str(tmp_path / "whole")))
    turns, epochs = [], []
    config = cfg(epochs=4, checkpoint_dir=str(tmp_path / "turns"))
    while not turns or turns[-1].paused:
        torch.manual_seed(0)  # as the member task does; a later turn's weights are resumed
        model = TinyRegressor()
        turns.append(fit(model, train, val, config, turn_seconds=0))
        epochs.append(len(turns[-1].history))
        config = dataclasses.replace(config, resume=True)
    assert epochs == [1, 2, 3, 4]  # one epoch a turn, then the end
    assert [t.paused for t in turns] == [True, True, True, False]
    got, want = model.state_dict(), whole.state_dict()
    assert all(torch.equal(got[k], want[k]) for k in want)
    assert turns[-1].best_epoch == one.best_epoch and turns[-1].best_val_loss == one.best_val_loss
    with pytest.raises(ValueError, match="turn_seconds: .* give a checkpoint_dir"):
        fit(TinyRegressor(), train, val, cfg(epochs=1), turn_seconds=0)
