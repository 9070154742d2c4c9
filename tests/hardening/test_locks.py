"""The output lock: one holder at a time, whatever the timing, and never a stale lock."""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from pathlib import Path

import pytest

from mfgtx.jobs import LockedError, output_lock


def _contend(target: str, barrier, wins, hold: float) -> None:
    barrier.wait()
    try:
        with output_lock(target):
            with wins.get_lock():
                wins.value += 1
            time.sleep(hold)  # a job writing its output
    except LockedError:
        pass


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [2, 3])
def test_jobs_started_together_over_a_stale_lock_never_both_take_it(tmp_path, jobs) -> None:
    ctx = mp.get_context("fork")
    trials, doubled = 20, 0
    for trial in range(trials):
        target = tmp_path / f"scores-{trial}.parquet"
        Path(f"{target}.lock").write_text("999999999\n")  # left by a job killed with -9
        barrier, wins = ctx.Barrier(jobs), ctx.Value("i", 0)
        procs = [
            ctx.Process(target=_contend, args=(str(target), barrier, wins, 0.1))
            for _ in range(jobs)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(30)
            assert p.exitcode == 0
        assert wins.value >= 1  # the stale lock never blocks
        doubled += wins.value > 1
    assert doubled == 0, f"{doubled} of {trials} trials had two holders"


def test_a_held_lock_names_its_owner_and_a_released_one_is_free(tmp_path) -> None:
    target = tmp_path / "scores.parquet"
    with output_lock(target) as lock:
        assert lock.read_text().strip() == str(os.getpid())
        with pytest.raises(LockedError, match=f"held by running process {os.getpid()}"):
            with output_lock(target):
                pass
    assert not lock.exists()
    with output_lock(target):  # free again
        pass


def test_a_killed_holder_frees_the_lock_at_once(tmp_path) -> None:
    ctx = mp.get_context("fork")
    target = tmp_path / "scores.parquet"
    ready = ctx.Event()

    def hold() -> None:
        with output_lock(target):
            ready.set()
            time.sleep(60)

    p = ctx.Process(target=hold)
    p.start()
    assert ready.wait(30)
    with pytest.raises(LockedError):
        with output_lock(target):
            pass
    p.kill()  # kill -9: no cleanup runs
    p.join(30)
    assert Path(f"{target}.lock").exists()  # the file stays behind, the lock does not
    with output_lock(target):
        pass
