"""``mfgtx train --engine ray``: an ensemble's members as Ray tasks give the bundle the
one-process run writes (bit for bit with ``train.deterministic``), a member that fails fails
the job naming it and writes no bundle, and a member whose worker dies is run again and
resumes from its checkpoint.

One local run (``local``) is the reference; every Ray run shares the session's Ray
(``ray_local``). Small models, 2 epochs, 2 members, 1 thread each.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from mfgtx.cli import main
from mfgtx.engine import EngineError, EngineSpec
from mfgtx.jobs import TrainOutcome, load_config, train
from tests.cli.conftest import quality_job, summary, write_job

pytestmark = pytest.mark.slow  # trains models

SEED = 11
RAY2 = EngineSpec("ray", workers=2)


def _job(plant: Path, out: Path, name: str) -> Path:
    job = quality_job(plant, out)
    job["train"].update(
        {"ensemble": {"members": 2}, "deterministic": True, "threads": 1, "seed": SEED}
    )
    job["bundle"] = str(out / "models" / name)
    return write_job(out / f"{name}.yaml", job)


def _weights(bundle: str | Path) -> dict[str, torch.Tensor]:
    return load_file(Path(bundle) / "weights.safetensors")


def _same(a: str | Path, b: str | Path) -> bool:
    x, y = _weights(a), _weights(b)
    return x.keys() == y.keys() and all(x[k].equal(y[k]) for k in x)


def _digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def local(plant, tmp_path_factory) -> tuple[Path, TrainOutcome]:
    """The reference: the ensemble trained in this process (local engine)."""
    out = tmp_path_factory.mktemp("local")
    before = torch.get_num_threads()
    outcome = train("sensor", load_config(_job(plant, out, "local")))
    assert torch.get_num_threads() == before  # train.threads: 1 held only while it trained
    return out, outcome


def _member_of(seed: int) -> int:
    """The ensemble member a task trains (its seed is the job's seed + k)."""
    return seed - SEED


@dataclass(frozen=True)
class FailMember:
    """``on_step`` that fails member ``k`` at its first step (runs in the Ray worker)."""

    k: int

    def __call__(self, step: int, loss: float) -> None:
        if _member_of(torch.initial_seed()) == self.k:
            raise RuntimeError("the sensor bus of line 2 went silent")


@dataclass(frozen=True)
class KillOnce:
    """``on_step`` that ends member ``k``'s worker process (``os._exit``, as a node lost or
    an out-of-memory kill would) once, after the member's first checkpoint was written."""

    k: int
    checkpoints: str
    mark: str

    def __call__(self, step: int, loss: float) -> None:
        member = _member_of(torch.initial_seed())
        last = Path(self.checkpoints) / f"member-{member}" / "last.ckpt"
        if member == self.k and last.exists() and not Path(self.mark).exists():
            Path(self.mark).write_text(str(os.getpid()))
            os._exit(1)


def test_ray_members_give_the_local_bundle_bit_for_bit(ray_local, local, plant, capsys) -> None:
    """In turns of one epoch (``engine.turn_seconds=0``): each member's second epoch is a
    task of its own that resumes from the member's checkpoint."""
    out, reference = local
    job = _job(plant, out, "ray")
    turns = ["--set", "engine.turn_seconds=0"]
    assert main(["train", "sensor", str(job), "--engine", "ray", "--workers", "2", *turns]) == 0
    printed = capsys.readouterr()
    ended = re.findall(
        r"INFO mfgtx\.engine\._ray: (ensemble member \d) .*: turn ended", printed.err
    )
    assert sorted(ended) == ["ensemble member 0", "ensemble member 1"]  # 2 epochs: 2 turns each
    found = summary(printed.out)
    assert _same(found["bundle"], str(reference.bundle))
    assert found["metrics"] == reference.metrics and found["metrics"]
    assert found["verdict"] == reference.verdict
    assert found["epochs_run"] == reference.epochs_run
    assert ray_local.is_initialized()  # the session's Ray, left running


def test_a_failed_member_fails_the_job_by_name_and_writes_no_bundle(
    ray_local, local, plant
) -> None:
    out, reference = local
    bundle = Path(str(reference.bundle))
    before = _digest(bundle)
    config = load_config(_job(plant, out, "local"))  # the local run's bundle, there already
    with pytest.raises(EngineError) as info:
        train("sensor", config, on_step=FailMember(1), engine=RAY2)
    words = str(info.value)
    assert words.startswith("ensemble member 1 (validation lots ")
    assert words.endswith(") failed: the sensor bus of line 2 went silent")
    assert isinstance(info.value, RuntimeError)  # still the member's own kind of error
    assert _digest(bundle) == before  # the bundle there is untouched


def test_a_killed_worker_resumes_its_member_from_its_checkpoint(
    ray_local, local, plant, tmp_path
) -> None:
    _, reference = local
    config = load_config(_job(plant, tmp_path, "killed"))
    mark = tmp_path / "killed-once"
    hook = KillOnce(1, f"{config.bundle}.ckpt", str(mark))
    outcome = train("sensor", config, on_step=hook, engine=RAY2)
    assert mark.exists()  # member 1's worker did die
    assert outcome.resumed_from_epoch >= 1  # ... and its retry resumed from its checkpoint
    assert _same(str(outcome.bundle), str(reference.bundle))


@dataclass(frozen=True)
class RecordNode:
    """``on_step`` that notes the Ray node each member trains on (``member-k.node``)."""

    folder: str

    def __call__(self, step: int, loss: float) -> None:
        import ray

        node = ray.get_runtime_context().get_node_id()
        (Path(self.folder) / f"member-{_member_of(torch.initial_seed())}.node").write_text(node)


TWO_NODES = """
import json, sys
from ray.cluster_utils import Cluster
from mfgtx.engine import EngineSpec
from mfgtx.jobs import load_config, train
from engine.test_train_ray import RecordNode

job, folder = sys.argv[1:]
cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
try:
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    spec = EngineSpec("ray", address=cluster.address, workers=2)
    outcome = train("sensor", load_config(job), on_step=RecordNode(folder), engine=spec)
finally:
    cluster.shutdown()
print(json.dumps({"bundle": outcome.bundle}))
"""


def test_two_nodes_of_a_cluster_train_one_member_each(
    ray_installed, local, plant, tmp_path
) -> None:
    """``ray.cluster_utils.Cluster``: a head and a second node of one CPU each, joined by
    address (in a process of its own: this one runs the session's local Ray). 25-40 s on
    two shared cores: slow, as the whole module is."""
    import json
    import subprocess
    import sys

    _, reference = local
    root = Path(__file__).resolve().parents[2]
    job = _job(plant, tmp_path, "cluster")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "tests")])}
    done = subprocess.run(
        [sys.executable, "-c", TWO_NODES, str(job), str(tmp_path)],
        capture_output=True, text=True, env=env, cwd=root, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    bundle = json.loads(done.stdout.strip().splitlines()[-1])["bundle"]
    nodes = {(tmp_path / f"member-{k}.node").read_text() for k in (0, 1)}
    assert len(nodes) == 2  # each member on a node of its own
    assert _same(bundle, str(reference.bundle))


def test_a_forecast_ensemble_with_its_ridge_maps_trains_on_ray_as_in_process(
    ray_local, plant, tmp_path
) -> None:
    from tests.cli.test_jobs_forecast_vit import forecast_job

    def job(name: str) -> Path:
        spec = forecast_job(plant, tmp_path)
        spec["forecast"].update({"linear_skip": "ridge", "pick": "validation"})
        spec["train"].update(
            {"ensemble": {"members": 2}, "deterministic": True, "threads": 1, "epochs": 1,
             "precision": "fp32"}
        )  # fmt: skip
        spec["bundle"] = str(tmp_path / name)
        return write_job(tmp_path / f"{name}.yaml", spec)

    here = train("forecast", load_config(job("here")))
    there = train("forecast", load_config(job("there")), engine=RAY2)
    assert _same(str(here.bundle), str(there.bundle))
    assert here.metrics == there.metrics and "validation_mse_ridge_map" in here.metrics
