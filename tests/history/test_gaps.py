"""The history's gaps closed: abandoned runs, runs in the order they started, cycle numbers
ordered as numbers, and scores with truth by time range."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

import mfgtx.history.store as store_module
from mfgtx.history import (
    open_history,
    predictions_with_truth,
    predictions_with_truth_between,
    read_history,
    record_truth,
    runs,
    scores_between,
)
from mfgtx.jobfile._sql import read_engine
from mfgtx.jobs._sql import write_engine
from tests.history.conftest import window_rows

ROOT = Path(__file__).resolve().parents[2]
KEYS = ("lot", "window_end")

#: Starts a run, says so in the marker file, and waits to be killed before it finishes.
CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mfgtx.history import open_history
    from mfgtx.jobs._sql import write_engine

    db, marker = sys.argv[1], Path(sys.argv[2])
    store = open_history(write_engine(f"sqlite:///{db}"), db)
    marker.write_text(store.start_run(bundle_id="b1", kind="sensor"))
    time.sleep(120)
    """
)


def _status(db: Path) -> dict[str, tuple[str, str | None]]:
    """``{run_id: (status, message)}`` as the table holds them (not as a listing shows them)."""
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        found = conn.execute(sa.text("SELECT run_id, status, message FROM history_runs")).all()
    engine.dispose()
    return {r[0]: (r[1], r[2]) for r in found}


def _killed_run(db: Path, marker: Path) -> tuple[str, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(marker)], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text():
            assert child.poll() is None, "the child ended before it started its run"
            assert time.monotonic() < deadline, "the child never started its run"
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    return marker.read_text(), child.pid


def test_a_run_whose_process_was_killed_is_marked_abandoned_when_the_history_is_next_opened(
    tmp_path, capsys
) -> None:
    db = tmp_path / "history.db"
    engine = write_engine(f"sqlite:///{db}")
    open_history(engine, "history.db")  # created before the child runs
    killed, pid = _killed_run(db, tmp_path / "run.txt")
    assert _status(db)[killed] == ("running", None)  # nothing has looked yet

    reader = read_engine(f"sqlite:///{db}")  # a listing shows it, writing nothing
    listed = runs(read_history(reader, "history.db")).set_index("run_id")
    reader.dispose()
    assert listed.loc[killed, "status"] == "abandoned"
    assert f"pid {pid}" in listed.loc[killed, "message"]
    assert _status(db)[killed][0] == "running"
    from mfgtx.cli import main

    job = tmp_path / "job.yaml"
    job.write_text(f"history: {db}\n", encoding="utf-8")
    assert main(["history", str(job)]) == 0  # what a person reads
    line = capsys.readouterr().out.splitlines()[0]
    assert " abandoned sensor " in line and f"pid {pid}" in line and killed in line
    assert _status(db)[killed][0] == "running"  # listing writes nothing

    store = open_history(engine, "history.db")  # the next writer marks it in the table
    status, message = _status(db)[killed]
    assert status == "abandoned"
    assert message is not None and f"pid {pid}" in message and "killed" in message
    mine = store.start_run(bundle_id="b1", kind="sensor")  # this process: alive
    open_history(engine, "history.db")
    assert _status(db)[mine] == ("running", None)
    engine.dispose()


def test_a_running_run_of_another_host_or_a_living_process_stays_running(store) -> None:
    other = store.start_run(bundle_id="b1", kind="sensor")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        alive = store.start_run(bundle_id="b1", kind="sensor")
        with store.transaction() as conn:
            table = store_module.RUNS
            conn.execute(table.update().where(table.c.run_id == other)
                         .values(host="another-computer", pid=999_999_999))  # fmt: skip
            conn.execute(table.update().where(table.c.run_id == alive).values(pid=sleeper.pid))
        reopened = open_history(store.engine, store.where)
        status = runs(reopened).set_index("run_id")["status"]
        assert status[other] == "running"  # its host is not this one: cannot be told here
        assert status[alive] == "running"
    finally:
        sleeper.kill()
        sleeper.wait()
    assert runs(store).set_index("run_id")["status"][alive] == "abandoned"  # now it is gone


def test_runs_started_within_one_second_list_in_the_order_they_started(store, monkeypatch) -> None:
    monkeypatch.setattr(store_module, "utc_now", lambda: "2026-03-02T07:00:00Z")
    started = [store.start_run(bundle_id="b1", kind="sensor") for _ in range(12)]
    listed = runs(store)["run_id"].tolist()
    assert listed == started[::-1]  # newest first, though every started_at is the same


def test_cycle_numbers_order_as_numbers(store) -> None:
    rows = pd.DataFrame(
        {"lot": "M01", "window_end": ["9", "100", "10", "31"], "rul_cycles": [90, 1, 80, 60]}
    )
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(run, rows, KEYS)
    record_truth(store, pd.DataFrame({"machine": "M01", "cycle": ["9", "100"], "rul": [91, 0]}),
                 lot="machine", targets=("rul",), window_end="cycle")  # fmt: skip
    joined = predictions_with_truth(store, "M01", "M01", target="rul")
    assert joined["window_end"].tolist() == ["9", "10", "31", "100"]
    assert joined["truth"].tolist()[::3] == ["91", "0"]
    got = scores_between(store, "2000-01-01", "2100-01-01")
    assert got["window_end"].tolist() == ["9", "10", "31", "100"]


def test_scores_with_truth_by_scored_time(store, monkeypatch) -> None:
    for day, lots in (("2026-03-02", ["A1"]), ("2026-03-03", ["A2", "A3"])):
        monkeypatch.setattr(store_module, "utc_now", lambda day=day: f"{day}T08:00:00Z")
        run = store.start_run(bundle_id="b1", kind="sensor")
        store.finish_run(run, window_rows(lots, 0.9), KEYS)
    record_truth(store, pd.DataFrame({"lot": ["A1", "A2"], "label": ["bad", "good"]}))
    later = predictions_with_truth_between(store, "2026-03-03", "2026-03-04")
    assert later["lot"].tolist() == ["A2", "A2", "A3", "A3"]
    assert later["truth"].fillna("-").tolist() == ["good", "good", "-", "-"]
    assert predictions_with_truth_between(store, "2026-03-02", "2026-03-03")["lot"].tolist() == [
        "A1",
        "A1",
    ]
