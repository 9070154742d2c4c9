"""``mfgtx train --engine ray --ddp N``: one model over N Ray Train workers writes the bundle
``torchrun --nproc_per_node N`` writes (bit for bit in fp32 with ``train.deterministic``), a
worker that fails is named by its rank (not the worker whose all-reduce broke because of it),
and what cannot be trained data-parallel on Ray is refused in words before any data is read.
(A worker failing mid-training end to end took 17 s of a suite near its 10-minute limit: the
naming is tested on Ray Train's own error record instead.)

The reference is the same job under ``torchrun`` with 2 processes; the Ray runs share the
session's Ray (``ray_local``, 2 CPUs: two workers of one thread each). A tiny model, 2 epochs
of 4 steps.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mfgtx.cli import main
from mfgtx.engine import EngineSpec
from mfgtx.jobs import ConfigError, load_config, train
from tests.cli.conftest import quality_job, summary, write_job

ROOT = Path(__file__).resolve().parents[2]
DDP2 = EngineSpec("ray", ddp=2)


def _job(plant: Path, out: Path, name: str, **train_keys: object) -> Path:
    job = quality_job(plant, out)
    # 25 training windows over 2 processes in batches of 4: 4 steps (4 gradient all-reduces)
    # an epoch, where one process would take 7
    job["train"].update(
        {"deterministic": True, "threads": 1, "seed": 5, "batch_size": 4, **train_keys}
    )
    job["bundle"] = str(out / "models" / name)
    return write_job(out / f"{name}.yaml", job)


def _weights(bundle: str | Path) -> dict[str, torch.Tensor]:
    return load_file(Path(bundle) / "weights.safetensors")


def _leftovers() -> set[str]:
    """Ray Train run folders of ``_ray_ddp`` still in the temporary folder."""
    return {p.name for p in Path(tempfile.gettempdir()).glob("mfgtx-ddp-*")}


@pytest.fixture(scope="module")
def torchrun(plant, tmp_path_factory) -> Iterator[Callable[[], dict]]:
    """The reference: ``mfgtx train`` under ``torchrun`` with 2 processes. It starts at once
    and runs while the Ray runs start their workers; calling the fixture's value waits for
    it and gives its summary."""
    out = tmp_path_factory.mktemp("torchrun")
    job = _job(plant, out, "torchrun")
    proc = subprocess.Popen(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "-m", "mfgtx", "train", "sensor", str(job)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"},
    )  # fmt: skip

    def done() -> dict:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr[-3000:]
        found = summary(stdout)
        assert found["world_size"] == 2
        return found

    try:
        yield done
    finally:
        if proc.poll() is None:  # pragma: no cover - a test failed before waiting for it
            proc.kill()
            proc.communicate()


@pytest.mark.slow
def test_ddp_on_ray_writes_the_bundle_torchrun_writes_bit_for_bit(
    ray_local, torchrun, plant, tmp_path, capsys, monkeypatch
) -> None:
    before = _leftovers()
    job = _job(plant, tmp_path, "ray")
    # the bundle's path relative to the working directory, as a job file may give it: Ray
    # Train starts its workers elsewhere
    monkeypatch.chdir(tmp_path)
    flags = ["--engine", "ray", "--ddp", "2", "--set", "bundle=models/ray"]
    assert main(["train", "sensor", str(job), *flags]) == 0
    found = summary(capsys.readouterr().out)
    assert Path(found["bundle"]).resolve() == tmp_path / "models" / "ray"
    torchrun = torchrun()
    assert found["world_size"] == 2  # one model, trained by two processes together
    a, b = _weights(found["bundle"]), _weights(torchrun["bundle"])
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)
    assert found["metrics"] == torchrun["metrics"] and found["metrics"]
    assert (found["epochs_run"], found["best_epoch"]) == (
        torchrun["epochs_run"],
        torchrun["best_epoch"],
    )
    assert not Path(f"{found['bundle']}.ckpt").exists()  # removed after success, as always
    assert _leftovers() <= before  # Ray Train's run folder deleted
    assert ray_local.is_initialized()  # the session's Ray, left running


def _refused(job: Path, *flags: str, capsys) -> str:
    assert main(["train", "sensor", str(job), *flags]) == 2
    return " ".join(capsys.readouterr().err.split())


def test_what_cannot_train_data_parallel_on_ray_is_refused_in_words(
    tmp_path, capsys, monkeypatch
) -> None:
    """Refused before any data is read (the job's data does not exist) or Ray started."""
    job = _job(tmp_path / "no-plant", tmp_path, "refused")
    words = _refused(job, "--ddp", "2", capsys=capsys)
    assert "ddp: 2 processes training one model together run as Ray Train workers" in words
    assert "use engine ray (--engine ray --ddp 2)" in words
    words = _refused(job, "--engine", "ray", "--ddp", "2", "--set", "train.ensemble.members=3",
                     capsys=capsys)  # fmt: skip
    assert "train.ensemble asks for 3 models; drop --ddp to train the members side by" in words
    words = _refused(job, "--engine", "ray", "--ddp", "2", "--set",
                     "train.sweep={lr: [0.001, 0.003]}", capsys=capsys)  # fmt: skip
    assert "train.sweep asks for one model per trial; drop --ddp to run the trials" in words
    monkeypatch.setenv("WORLD_SIZE", "2")  # a process of torchrun
    monkeypatch.setenv("RANK", "0")
    words = _refused(job, "--engine", "ray", "--ddp", "2", capsys=capsys)
    assert "this command already runs under torchrun" in words
    assert not (tmp_path / "models").exists()  # nothing written, not even the lock
    assert main(["train", "sensor", str(job), "--ddp", "0"]) == 2
    assert "--ddp: expected a whole number of at least 1, found '0'" in capsys.readouterr().err


def test_the_job_files_ddp_is_used_and_the_command_line_wins() -> None:
    from mfgtx.jobfile.config import engine_spec

    job = load_config(None, ["engine.name=ray", "engine.ddp=2", "train.threads=2"])
    assert engine_spec(job) == EngineSpec("ray", threads=2, ddp=2)
    assert engine_spec(job, ddp=3).ddp == 3
    assert engine_spec(job, name="local").ddp is None  # the ray section's keys dropped
    with pytest.raises(ConfigError, match=r"engine: ddp: 2 processes .* the engine is local"):
        load_config(None, ["engine.ddp=2"])


def test_setup_distributed_takes_a_group_the_caller_started(monkeypatch) -> None:
    """Ray Train starts the group itself: its rank and size are used, not the environment."""
    from mfgtx.train.distributed import DistEnv, setup_distributed

    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(torch.distributed, "is_initialized", lambda: True)
    monkeypatch.setattr(torch.distributed, "get_rank", lambda: 1)
    monkeypatch.setattr(torch.distributed, "get_world_size", lambda: 3)
    assert setup_distributed("cpu") == DistEnv(rank=1, world_size=3, local_rank=0)


def test_more_workers_than_the_cluster_has_cpus_is_refused(ray_local, tmp_path) -> None:
    """Ray Train would wait for CPUs without end: refused before any worker starts (the
    session's Ray has 2 CPUs; the job's data does not exist)."""
    config = load_config(_job(tmp_path / "no-plant", tmp_path, "too-many", threads=2))
    with pytest.raises(ConfigError, match=r"ddp 2 needs 4 CPUs \(2 workers of 2 thread\(s\)"):
        train("sensor", config, engine=EngineSpec("ray", threads=2, ddp=2))
    assert not (tmp_path / "models" / "too-many").exists()


def test_the_worker_that_failed_is_named_not_the_one_that_lost_it(ray_installed) -> None:
    """When worker 1 fails, worker 0's all-reduce breaks too; the job names worker 1."""
    from ray.train import WorkerGroupError

    from mfgtx.jobs._ray_ddp import _failed

    lost = torch.distributed.DistBackendError("[gloo/transport/tcp/pair.cc] Connection closed")
    found = _failed(WorkerGroupError("2 workers failed", {0: lost, 1: KeyError("lot L7")}), 2)
    assert str(found) == "data-parallel worker 1 of 2 failed: 'lot L7'"
    assert isinstance(found, KeyError) and isinstance(found.__cause__, KeyError)
    only = _failed(WorkerGroupError("1 worker failed", {0: lost}), 2)
    assert str(only).startswith("data-parallel worker 0 of 2 failed: [gloo/")


def test_a_worker_that_cannot_enter_the_jobs_folder_says_so(tmp_path) -> None:
    """On a node that does not see the job's working directory (no Ray needed: the worker
    function checks it before anything else)."""
    from mfgtx.jobs._ray_ddp import _worker

    here = os.getcwd()
    gone = tmp_path / "not-mounted"
    with pytest.raises(FileNotFoundError, match=r"working directory .*not-mounted cannot be"):
        _worker({"cwd": str(gone)})
    assert os.getcwd() == here
