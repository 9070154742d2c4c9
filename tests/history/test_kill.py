"""A run killed with SIGKILL half-way through writing its rows leaves none of them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import sqlalchemy as sa

from mfgtx.history import open_history, runs, scores_between
from mfgtx.jobs._sql import write_engine
from tests.history.conftest import window_rows

ROOT = Path(__file__).resolve().parents[2]

#: Records a run of 20 rows in chunks of 2, stopping inside the transaction after the third
#: chunk (the marker file says so) until it is killed.
CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import mfgtx.history.store as store_module
    from mfgtx.history import open_history
    from mfgtx.jobs._sql import write_engine
    from tests.history.conftest import window_rows

    db, marker = sys.argv[1], Path(sys.argv[2])
    store = open_history(write_engine(f"sqlite:///{db}"), db)
    run = store.start_run(bundle_id="b1", kind="sensor")
    store_module.CHUNK = 2
    upsert = store_module.upsert

    calls = []

    def upsert_then_stop(conn, table, records, key):
        upsert(conn, table, records, key)
        calls.append(len(records))
        if len(calls) == 3:  # 6 of the 20 rows inserted, 2 more chunks begun and ended
            marker.write_text(run)
            time.sleep(120)

    store_module.upsert = upsert_then_stop
    store.finish_run(run, window_rows([f"K{i}" for i in range(10)], 0.9), ("lot", "window_end"))
    """
)


def test_a_run_killed_mid_write_leaves_no_rows_and_the_history_usable(tmp_path) -> None:
    db, marker = tmp_path / "history.db", tmp_path / "inside.txt"
    engine = write_engine(f"sqlite:///{db}")
    store = open_history(engine, "history.db")
    kept = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(kept, window_rows(["A1"], 0.1), ("lot", "window_end"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(db), str(marker)], env=env, cwd=ROOT)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists():
            assert child.poll() is None, "the child ended before writing its first rows"
            assert time.monotonic() < deadline, "the child never reached its first rows"
            time.sleep(0.05)
        # the child holds the write lock with 6 of its 20 rows inserted: kill it there
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    killed = marker.read_text()
    got = scores_between(store, "2000-01-01", "2100-01-01")
    assert got["lot"].tolist() == ["A1", "A1"]  # the earlier run only, none of the killed one's
    status = runs(store).set_index("run_id")["status"]
    assert status[killed] == "abandoned" and status[kept] == "ok"  # its process is gone
    later = store.start_run(bundle_id="b1", kind="sensor")  # the lock died with the child
    assert store.finish_run(later, window_rows(["K1"], 0.2), ("lot", "window_end")) == 2
    with engine.connect() as conn:
        assert conn.execute(sa.text("PRAGMA integrity_check")).scalar_one() == "ok"
    engine.dispose()
