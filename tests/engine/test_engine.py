"""The engine seam: the local engine is a ``for`` loop, the Ray engine gives the same results
in item order, errors name the task, and ``import mfgtx`` never imports Ray."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from mfgtx.engine import Again, EngineError, EngineSpec, LocalEngine, open_engine

ROOT = Path(__file__).resolve().parents[2]


def _scaled(item: int, *, factor: int) -> tuple[int, int]:
    return item * factor, torch.get_num_threads()


def _in_turns(item: tuple[str, int], *, folder: str) -> object:
    """Task ``name`` with ``n`` turns to go: notes each turn in ``folder/turns``."""
    name, left = item
    with open(Path(folder) / "turns", "a") as f:
        f.write(f"{name}{left} ")
    return Again((name, left - 1)) if left > 1 else name


def _fails_on_two(item: int) -> int:
    if item == 2:
        raise ValueError(f"lot L{item} has no rows")
    return item


def _pid_then_wait(item: int, *, folder: str) -> int:
    """Item 0 fails once item 1 has written its worker's pid; item 1 then waits, cancelled."""
    if item == 0:
        deadline = time.monotonic() + 30
        while not Path(folder, "1.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        raise ValueError("lot L0 has no rows")
    Path(folder, f"{item}.pid").write_text(str(os.getpid()))
    time.sleep(60)
    return item


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_importing_mfgtx_does_not_import_ray() -> None:
    code = (
        "import sys, mfgtx, mfgtx.engine, mfgtx.kinds, mfgtx.jobs, mfgtx.cli, mfgtx.jobs.score, "
        "mfgtx.jobs._ray_score; "
        "print(sorted(m for m in sys.modules if m == 'ray' or m.startswith('ray.')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"name": "spark"}, "'spark' is not an engine"),
        ({"name": "local", "address": "auto"}, "use engine ray"),
        ({"name": "ray", "workers": 0}, "workers: expected a whole number of at least 1, found 0"),
        ({"name": "ray", "threads": 1.5}, "threads: expected a whole number"),
        ({"name": "local", "workers": 2}, "the local engine runs one task at a time"),
        ({"name": "ray", "turn_seconds": -1}, "turn_seconds: expected seconds of at least 0"),
    ],
)
def test_a_spec_that_cannot_be_used_says_why(kwargs, words) -> None:
    with pytest.raises(ValueError, match=words):
        EngineSpec(**kwargs)


def test_the_local_engine_is_a_loop_and_restores_torch_threads() -> None:
    before = torch.get_num_threads()
    engine = LocalEngine(EngineSpec(threads=1))
    assert engine.map(_scaled, [3, 1, 2], shared={"factor": 10}) == [(30, 1), (10, 1), (20, 1)]
    assert torch.get_num_threads() == before


def test_a_failed_task_is_named_with_its_error() -> None:
    with open_engine(EngineSpec()) as engine:
        with pytest.raises(EngineError, match=r"member 2 failed: lot L2 has no rows") as info:
            engine.map(_fails_on_two, [1, 2, 3], names=["member 1", "member 2", "member 3"])
    assert isinstance(info.value.__cause__, ValueError)


def test_the_ray_engine_gives_the_local_results_in_order(ray_local) -> None:
    spec = EngineSpec("ray", workers=2, threads=1)
    with open_engine(spec) as engine:
        got = engine.map(_scaled, [5, 4, 3, 2, 1], shared={"factor": 3})
        with pytest.raises(EngineError, match=r"member 2 failed: lot L2 has no rows"):
            engine.map(_fails_on_two, [1, 2, 3], names=["member 1", "member 2", "member 3"])
    assert got == [(15, 1), (12, 1), (9, 1), (6, 1), (3, 1)]
    assert ray_local.is_initialized()  # an engine leaves a Ray it did not start running


def test_tasks_in_turns_share_the_workers_and_end_with_their_last_turn(ray_local, tmp_path) -> None:
    """Three tasks of three turns: a task whose turn ended waits behind the others, so the
    turns go round (a3 a2 a1 in a row would be one task holding its worker to the end). One
    worker, so that the turns run in the order they were queued."""
    items = [("a", 3), ("b", 3), ("c", 3)]
    with open_engine(EngineSpec("ray", workers=1, threads=1)) as engine:
        got = engine.map(_in_turns, items, shared={"folder": str(tmp_path)})
    assert got == ["a", "b", "c"]  # each task's last turn, in item order
    assert (tmp_path / "turns").read_text().split() == [f"{n}{k}" for k in (3, 2, 1) for n in "abc"]
    (tmp_path / "turns").unlink()
    assert LocalEngine().map(_in_turns, items, shared={"folder": str(tmp_path)}) == got
    assert (tmp_path / "turns").read_text().split() == [
        f"{n}{k}" for n in "abc" for k in (3, 2, 1)
    ]  # in this process: each task's turns at once, in item order


def test_a_cancelled_task_ends_its_worker_so_no_later_task_inherits_it(ray_local, tmp_path) -> None:
    """A task cancelled mid-way (another failed) may be inside an import: a worker reused after
    that fails its next task on half-loaded modules (CI saw ``partially initialized module
    'torch._dynamo'``). The cancelled task's worker process must be gone."""
    spec = EngineSpec("ray", workers=2, threads=1)
    with open_engine(spec) as engine:
        with pytest.raises(EngineError, match="lot L0 has no rows"):
            engine.map(_pid_then_wait, [1, 0], shared={"folder": str(tmp_path)})
    pid = int((tmp_path / "1.pid").read_text())
    deadline = time.monotonic() + 30
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _alive(pid), f"the cancelled task's worker (pid {pid}) is still running"


def test_the_ray_extra_and_what_it_brings_are_pinned(ray_installed) -> None:
    """constraints.txt pins Ray and everything ``ray[data,train]`` installs, as it pins the
    rest: CI installs the extra from it, and an unpinned package would drift."""
    from importlib import metadata

    from packaging.requirements import Requirement

    def norm(name: str) -> str:
        return name.lower().replace("_", "-")

    lines = (ROOT / "constraints.txt").read_text().splitlines()
    pinned = {norm(x.split("==")[0]) for x in lines if "==" in x and not x.startswith("#")}
    seen: set[str] = set()
    todo = [("ray", {"data", "train"})]
    while todo:
        name, extras = todo.pop()
        if norm(name) in seen:
            continue
        seen.add(norm(name))
        for text in metadata.requires(name) or []:
            req = Requirement(text)
            if req.marker is None or any(req.marker.evaluate({"extra": e}) for e in extras | {""}):
                todo.append((req.name, set(req.extras)))
    assert "ray" in pinned
    assert sorted(seen - pinned) == []


def test_the_command_line_wins_over_the_job_files_engine(tmp_path, capsys) -> None:
    from mfgtx.cli import main
    from mfgtx.jobfile.config import engine_spec
    from mfgtx.jobs import ConfigError, load_config

    job = load_config(None, ["engine.name=ray", "engine.workers=3", "train.threads=2"])
    assert engine_spec(job) == EngineSpec("ray", workers=3, threads=2)
    assert engine_spec(job, workers=2, address="auto") == EngineSpec("ray", "auto", 2, 2)
    assert engine_spec(job, name="local") == EngineSpec("local", threads=2)  # ray's keys dropped
    with pytest.raises(ConfigError, match=r"config: engine: address: 'auto' is the address"):
        engine_spec(job, name="local", address="auto")
    with pytest.raises(ConfigError, match=r"config: train: threads must be at least 1, found 0"):
        load_config(None, ["train.threads=0"])
    path = tmp_path / "job.yaml"
    path.write_text("bundle: never-written\n")
    code = main(["train", "sensor", str(path), "--address", "head:6379"])
    assert code == 2
    assert "use engine ray (--engine ray)" in capsys.readouterr().err
    assert not (tmp_path / "never-written").exists()
    assert main(["score", str(path), "--workers", "0"]) == 2
    assert "--workers: expected a whole number of at least 1, found '0'" in capsys.readouterr().err


STARTS_ITS_OWN = """
import signal, ray, torch
from mfgtx.engine import EngineSpec, open_engine

def ours(signum, frame):
    raise KeyboardInterrupt

for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(s, ours)
threads = torch.get_num_threads()
with open_engine(EngineSpec("ray", workers=1)) as engine:
    during = [signal.getsignal(s) is ours for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)]
    assert engine.map(abs, [-3]) == [3]
    assert ray.is_initialized()
after = [signal.getsignal(s) is ours for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)]
print(during, after, ray.is_initialized(), torch.get_num_threads() == threads)
"""


def test_an_engine_that_starts_ray_shuts_it_down_and_keeps_the_jobs_stop_signals(
    ray_installed,
) -> None:
    """Ray's start takes SIGTERM for itself; the job's handler (Ctrl-C, a scheduler's stop:
    :mod:`mfgtx._signals`) must stay, during the run and after (in a process of its own:
    this one runs the session's Ray)."""
    done = subprocess.run(
        [sys.executable, "-c", STARTS_ITS_OWN],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (
        done.stdout.strip().splitlines()[-1] == "[True, True, True] [True, True, True] False True"
    )
