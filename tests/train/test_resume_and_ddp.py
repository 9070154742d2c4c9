"""Kill a training job with SIGKILL and resume it; train with torchrun on 2 processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from tiny import TinyRegressor

from mfgtx.artifacts import load_bundle

JOB = Path(__file__).with_name("_job.py")
ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def start(*args: str, log: Path) -> subprocess.Popen:
    """``run`` without waiting; its output goes to ``log``."""
    env = os.environ | {"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    with log.open("w") as sink:
        return subprocess.Popen(
            [sys.executable, *args], stdout=sink, stderr=subprocess.STDOUT, env=env
        )


def weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(path)


@pytest.mark.slow
def test_killed_mid_epoch_and_resumed_ends_with_the_same_weights(tmp_path: Path) -> None:
    full, broken = tmp_path / "full", tmp_path / "broken"
    # the uninterrupted run and the one killed at step 18 (96 samples / 8 per batch = 12
    # steps per epoch: the middle of epoch 2) side by side, one core each
    done = start(str(JOB), str(full), "--epochs", "3", log=tmp_path / "full.log")
    killed = start(
        str(JOB), str(broken), "--epochs", "3", "--kill-at", "18", log=tmp_path / "k.log"
    )
    for proc in (done, killed):
        proc.wait(timeout=120)
    assert done.returncode == 0, (tmp_path / "full.log").read_text()[-3000:]
    assert killed.returncode == -signal.SIGKILL
    assert not (broken / "final_rank0.safetensors").exists()
    resumed = run(str(JOB), str(broken), "--epochs", "3", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    info = json.loads((broken / "rank0.json").read_text())
    assert info["resumed_from_epoch"] == 1
    a, b = weights(full / "final_rank0.safetensors"), weights(broken / "final_rank0.safetensors")
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    history_full = json.loads((full / "rank0.json").read_text())["history"]
    assert [h["val_loss"] for h in info["history"]] == [h["val_loss"] for h in history_full]


TORCHRUN = ("-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2")
# uneven shards: 97 training samples are 49 and 48 (7 and 6 batches of 8), 33 validation
# samples 17 and 16 (3 and 2 batches)
UNEVEN = ("--epochs", "6", "--lr", "1e-2", "--train-size", "97", "--val-size", "33")


@pytest.mark.slow
@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed missing")
def test_torchrun_two_processes_converge_with_identical_weights(tmp_path: Path) -> None:
    out, broken = tmp_path / "ddp", tmp_path / "broken"
    # the uninterrupted run and one killed at step 10 (7 steps an epoch: in epoch 2), side
    # by side; then the killed one resumed
    done = start(*TORCHRUN, str(JOB), str(out), *UNEVEN, log=tmp_path / "ddp.log")
    killed = start(
        *TORCHRUN, str(JOB), str(broken), *UNEVEN, "--kill-at", "10", log=tmp_path / "k.log"
    )
    for proc in (done, killed):
        proc.wait(timeout=240)
    assert done.returncode == 0, (tmp_path / "ddp.log").read_text()[-3000:]
    assert killed.returncode != 0 and not (broken / "final_rank0.safetensors").exists()
    resumed = run(*TORCHRUN, str(JOB), str(broken), *UNEVEN, "--resume", timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    r0, r1 = (json.loads((out / f"rank{r}.json").read_text()) for r in (0, 1))
    assert r0["world_size"] == r1["world_size"] == 2
    w0, w1 = weights(out / "final_rank0.safetensors"), weights(out / "final_rank1.safetensors")
    for k in w0:
        assert torch.equal(w0[k], w1[k]), k
    losses = [h["val_loss"] for h in r0["history"]]
    assert losses[-1] < 0.5 * losses[0]
    keys = ("epoch", "train_loss", "val_loss", "lr")  # reduced across both processes
    assert [[h[k] for k in keys] for h in r0["history"]] == [
        [h[k] for k in keys] for h in r1["history"]
    ]
    # every training sample once per epoch, split between the two processes
    for epoch in range(6):
        s0 = r0["seen"][epoch * 49 : (epoch + 1) * 49]
        s1 = r1["seen"][epoch * 48 : (epoch + 1) * 48]
        assert sorted(s0 + s1) == list(range(97))
    # the process group fit created was destroyed before interpreter teardown on both ranks
    # (left to teardown, gloo can abort a finished run with SIGABRT)
    for r in (0, 1):
        assert json.loads((out / f"exit_rank{r}.json").read_text()) == {"group_initialized": False}
    # only rank 0 wrote the checkpoint and the bundle (a second writer would have failed)
    assert sorted(p.name for p in (out / "ckpt").iterdir()) == ["last.ckpt"]
    bundle = load_bundle(out / "bundle", classes={"tests.TinyRegressor": TinyRegressor})
    assert isinstance(bundle.model, TinyRegressor)
    for k, v in bundle.model.state_dict().items():
        assert torch.equal(v, w0[k]), k

    # resumed with uneven shards, both processes end with the uninterrupted run's weights:
    # the short process steps with the others, and each resumes its own generator
    for r in (0, 1):
        info = json.loads((broken / f"rank{r}.json").read_text())
        assert info["resumed_from_epoch"] == 1
        assert [h["val_loss"] for h in info["history"]] == losses
        again = weights(broken / f"final_rank{r}.safetensors")
        for k in w0:
            assert torch.equal(again[k], w0[k]), (r, k)
