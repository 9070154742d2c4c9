"""SIGTERM and SIGINT end a job cleanly: a log line, the summary line, the lock released,
no temporaries, the exit code a shell reports, and ``--resume`` continues."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mfgtx._signals import Stopped, stop_on_signals
from tests.cli.conftest import quality_job, summary, write_job

ROOT = Path(__file__).resolve().parents[2]

# ``mfgtx`` with its job held at a known point until the test's signal arrives: training
# once the first epoch's checkpoint exists, scoring once the scores are about to be written.
# The job is the real one; only the waiting is added, through public hooks.
HELD = """
import importlib, signal, sys, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # as a terminal or scheduler starts it
    signal.signal(s, signal.SIG_DFL)
from pathlib import Path
import mfgtx.jobs
scoring = importlib.import_module("mfgtx.jobs.score")  # the module (mfgtx.jobs.score is the function)

def hold(marker):
    Path(marker).touch()
    time.sleep(120)  # the signal arrives here (or before: anywhere in the job)

real_train = mfgtx.jobs.train
def train(kind, config, *, resume=False, on_step=None, engine=None):
    ckpt = Path(f"{config.bundle}.ckpt") / "last.ckpt"
    def after_step(step, loss):
        if ckpt.exists():
            hold(sys.argv[1])
    return real_train(kind, config, resume=resume, on_step=after_step, engine=engine)
mfgtx.jobs.train = train

def write_scores(*args, **kwargs):
    hold(sys.argv[1])
assert hasattr(scoring, "write_scores"), "the score job writes through another function now"
scoring.write_scores = write_scores

from mfgtx.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("MFGTX_BUNDLE_KEY", None)
    env.pop("MFGTX_BUNDLE_KEY_FILE", None)
    return env


def held_job(tmp_path: Path, *argv: str) -> tuple[subprocess.Popen, Path]:
    """Start ``mfgtx ARGV`` held as :data:`HELD` says; returns the process and the marker
    file it touches once held. Output goes to files (a full pipe would block it)."""
    marker = tmp_path / "held"
    out, err = (tmp_path / "stdout").open("w"), (tmp_path / "stderr").open("w")
    with out, err:
        proc = subprocess.Popen(
            [sys.executable, "-c", HELD, str(marker), *argv],
            stdout=out,
            stderr=err,
            env=_env(),
            cwd=tmp_path,
            start_new_session=True,  # its own process group, as a scheduler starts it
        )
    return proc, marker


def wait_for(path: Path, proc: subprocess.Popen, tmp_path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the job never got there:\n{(tmp_path / 'stderr').read_text()[-3000:]}")
        time.sleep(0.05)


def leftovers(*folders: Path) -> list[str]:
    """Lock files and hidden temporaries (``.NAME.*.tmp``/``.old``) in ``folders``."""
    found = []
    for folder in folders:
        if folder.is_dir():
            found += [
                p.name
                for p in folder.iterdir()
                if p.name.endswith(".lock") or p.suffix in (".tmp", ".old")
            ]
    return found


def stopped(tmp_path: Path, command: str, name: str, code: int) -> None:
    """The stopped job's exit, summary line and log line."""
    stdout, stderr = (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()
    assert summary(stdout) == {
        "command": command,
        "ok": False,
        "interrupted": name,
        "exit_code": code,
        "error": f"stopped by {name}",
    }
    assert f"mfgtx {command}: stopped by {name}" in stderr and "Traceback" not in stderr


@pytest.mark.slow
def test_stopped_train_and_score_end_cleanly_and_train_resumes(plant, tmp_path) -> None:
    job = quality_job(plant, tmp_path)
    job["train"].update(epochs=3, batch_size=8)
    job["score"] = {"output": {"path": str(tmp_path / "out" / "scores.parquet")}}
    path = write_job(tmp_path / "job.yaml", job)
    bundle, ckpt = Path(job["bundle"]), Path(f"{job['bundle']}.ckpt")
    # SIGTERM to the whole process group while training, as systemd and schedulers send it
    proc, held = held_job(tmp_path, "train", "sensor", str(path))
    wait_for(held, proc, tmp_path)
    assert Path(f"{bundle}.lock").exists()  # the job holds its output
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    stopped(tmp_path, "train", "SIGTERM", 143)
    assert "--resume" in (tmp_path / "stderr").read_text()
    assert leftovers(bundle.parent, ckpt) == []
    assert not bundle.exists() and (ckpt / "last.ckpt").is_file()

    resumed = subprocess.run(
        [sys.executable, "-m", "mfgtx", "train", "sensor", str(path), "--resume"],
        capture_output=True,
        text=True,
        env=_env(),
        timeout=300,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    result = summary(resumed.stdout)
    assert result["ok"] and result["resumed_from_epoch"] >= 1 and result["epochs_run"] == 3
    assert (bundle / "manifest.json").is_file() and leftovers(bundle.parent) == []

    # Ctrl-C (SIGINT) to the job alone while it writes its scores
    held.unlink()
    scores = Path(job["score"]["output"]["path"])
    proc, held = held_job(tmp_path, "score", str(path))
    wait_for(held, proc, tmp_path)
    assert Path(f"{scores}.lock").exists()
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130
    stopped(tmp_path, "score", "SIGINT", 130)
    assert leftovers(scores.parent) == [] and not scores.exists()


def test_main_reports_a_stop_signal_in_process(plant, tmp_path, capsys, monkeypatch) -> None:
    """Inside ``main`` a SIGTERM that lands while an output is locked unwinds the job: the
    lock is gone, the summary says so, and the handlers are as before afterwards."""
    import mfgtx.jobs.score  # noqa: F401 - the module, patched below
    from mfgtx.cli import main
    from mfgtx.jobs import output_lock

    target = tmp_path / "out.parquet"

    def score(config, **_) -> None:  # as mfgtx.jobs.score.score, which the CLI calls with engine=
        with output_lock(target):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)  # the handler raises here

    monkeypatch.setattr(sys.modules["mfgtx.jobs.score"], "score", score)
    before = signal.getsignal(signal.SIGTERM)
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    t0 = time.monotonic()
    assert main(["score", str(path)]) == 143
    assert time.monotonic() - t0 < 20
    captured = capsys.readouterr()
    assert summary(captured.out) == {
        "command": "score",
        "ok": False,
        "interrupted": "SIGTERM",
        "exit_code": 143,
        "error": "stopped by SIGTERM",
    }
    assert "mfgtx score: stopped by SIGTERM" in captured.err
    assert not Path(f"{target}.lock").exists()
    assert signal.getsignal(signal.SIGTERM) == before


def test_an_error_raised_while_stopping_is_reported_as_the_stop(
    plant, tmp_path, capsys, monkeypatch
) -> None:
    """A worker the same signal ended makes the job's next step fail: still a stop."""
    import mfgtx.jobs.score  # noqa: F401 - the module, patched below
    from mfgtx.cli import main

    def score(config, **_) -> None:  # as mfgtx.jobs.score.score, which the CLI calls with engine=
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(30)
        finally:
            raise RuntimeError("DataLoader worker (pid 1234) is killed by signal: Terminated.")

    monkeypatch.setattr(sys.modules["mfgtx.jobs.score"], "score", score)
    path = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    assert main(["score", str(path)]) == 143
    captured = capsys.readouterr()
    assert summary(captured.out)["interrupted"] == "SIGTERM"
    assert "error:" not in captured.err


def test_further_stop_signals_do_not_cut_the_cleanup_short() -> None:
    # Ctrl-C handled as in a terminal, whatever this test process was started with (a
    # background job starts with SIGINT ignored, which stop_on_signals rightly leaves alone)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _stop_twice()
    finally:
        signal.signal(signal.SIGINT, previous)


def _stop_twice() -> None:
    cleaned = []
    with stop_on_signals() as stop:
        try:
            try:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(30)
            finally:
                os.kill(os.getpid(), signal.SIGINT)  # a second signal during the cleanup
                time.sleep(0.05)
                cleaned.append(True)
        except Stopped as e:
            assert e.signum == signal.SIGTERM
    assert cleaned == [True] and stop.name == "SIGTERM" and stop.repeated == 1
    assert stop.exit_code == 143


def test_an_ignored_signal_stays_ignored(monkeypatch) -> None:
    """``nohup`` starts a job with SIGHUP ignored: closing the terminal must not stop it."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with stop_on_signals():
            assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
            assert callable(signal.getsignal(signal.SIGTERM))
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_a_forked_child_acts_as_if_it_had_no_handler(tmp_path) -> None:
    """A DataLoader worker forked from the job inherits the handler: in it SIGTERM ends the
    child at once, as without a handler, instead of unwinding a copy of the job."""
    code = """
import os, signal, sys, time
from mfgtx._signals import stop_on_signals
with stop_on_signals():
    ready, tell = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(tell, b"x")  # running, its handler inherited
        time.sleep(30)
        os._exit(0)
    os.read(ready, 1)
    os.kill(pid, signal.SIGTERM)
    _, status = os.waitpid(pid, 0)
    print(os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM)
"""
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert done.stdout.strip() == "True", done.stderr
