"""Schema versions: an older history is upgraded on open, a newer one refused untouched."""

from __future__ import annotations

import importlib
import sqlite3

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.history import STEPS, HistoryError, open_history, predictions_with_truth, record_truth
from mfgtx.jobs._sql import write_engine

migrate_module = importlib.import_module("mfgtx.history.migrate")

#: A version-1 history as mfgtx 1 wrote it: runs and scores, no truth, no time index.
V1 = """
CREATE TABLE history_schema (version INTEGER NOT NULL);
INSERT INTO history_schema VALUES (1);
CREATE TABLE history_runs (run_id VARCHAR(32) PRIMARY KEY, job_file TEXT, bundle_id TEXT NOT NULL,
  kind TEXT NOT NULL, started_at VARCHAR(32) NOT NULL, finished_at VARCHAR(32),
  status VARCHAR(16) NOT NULL, rows INTEGER, bad_lots INTEGER, seconds FLOAT, message TEXT);
CREATE TABLE history_scores (run_id VARCHAR(32) NOT NULL, bundle_id TEXT NOT NULL,
  kind TEXT NOT NULL, scored_at VARCHAR(32) NOT NULL, lot TEXT, window_end TEXT,
  key TEXT NOT NULL, keys TEXT NOT NULL, predictions TEXT NOT NULL, interval_low FLOAT,
  interval_high FLOAT, decision TEXT, flags TEXT NOT NULL,
  CONSTRAINT ux_history_scores_key UNIQUE (bundle_id, key));
CREATE INDEX ix_history_scores_lot ON history_scores (lot, window_end);
INSERT INTO history_runs VALUES ('r1', 'job.yaml', 'b1', 'sensor', '2026-01-01T00:00:00Z',
  '2026-01-01T00:00:05Z', 'ok', 1, 0, 5.0, NULL);
INSERT INTO history_scores VALUES ('r1', 'b1', 'sensor', '2026-01-01T00:00:05Z', 'A1',
  '2026-01-01T00:00:00', '["A1", "2026-01-01T00:00:00"]',
  '{"lot": "A1", "window_end": "2026-01-01T00:00:00"}', '{"p_bad": 0.7}', NULL, NULL, 'bad', '[]');
"""


def _v1_file(path) -> None:
    with sqlite3.connect(path) as db:
        db.executescript(V1)


def _version(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT version FROM history_schema").fetchone()[0]


def test_a_version_1_history_is_upgraded_on_open_and_keeps_its_rows(tmp_path) -> None:
    path = tmp_path / "history.db"
    _v1_file(path)
    engine = write_engine(f"sqlite:///{path}")
    store = open_history(engine, "history.db")
    assert _version(path) == len(STEPS) == 3
    record_truth(store, pd.DataFrame({"lot": ["A1"], "label": ["bad"]}))
    (row,) = predictions_with_truth(store, "A1", "A1").to_dict("records")
    assert row["run_id"] == "r1" and row["predictions"] == {"p_bad": 0.7} and row["truth"] == "bad"
    with sqlite3.connect(path) as db:
        indexes = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "ix_history_scores_scored_at" in indexes
    open_history(engine, "history.db")  # opening again changes nothing
    assert _version(path) == 3
    engine.dispose()


def test_a_new_history_gets_every_step(tmp_path) -> None:
    path = tmp_path / "history.db"
    engine = write_engine(f"sqlite:///{path}")
    open_history(engine, "history.db")
    engine.dispose()
    assert _version(path) == len(STEPS)
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {
        "history_schema", "history_runs", "history_scores", "history_truth",
        "history_promoted", "history_watch", "history_alerts",
    }  # fmt: skip


def test_a_history_written_by_a_newer_mfgtx_is_refused_untouched(tmp_path) -> None:
    path = tmp_path / "history.db"
    _v1_file(path)
    with sqlite3.connect(path) as db:
        db.execute("UPDATE history_schema SET version = 7")
    before = path.read_bytes()
    engine = write_engine(f"sqlite:///{path}")
    with pytest.raises(HistoryError, match=r"history.db: was written by a newer mfgtx "
                       r"\(schema version 7; this mfgtx knows up to 3\)"):  # fmt: skip
        open_history(engine, "history.db")
    engine.dispose()
    assert path.read_bytes() == before


def test_a_step_that_fails_leaves_the_history_at_its_old_version(tmp_path, monkeypatch) -> None:
    path = tmp_path / "history.db"
    _v1_file(path)

    original = migrate_module.STEPS

    def broken(conn) -> None:
        original[1](conn)
        raise sa.exc.OperationalError("CREATE ...", {}, Exception("disk I/O error"))

    monkeypatch.setattr(migrate_module, "STEPS", (*migrate_module.STEPS[:1], broken))
    engine = write_engine(f"sqlite:///{path}")
    with pytest.raises(HistoryError, match="disk I/O error"):
        open_history(engine, "history.db")
    engine.dispose()
    assert _version(path) == 1
    with sqlite3.connect(path) as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "history_truth" not in tables  # the half-done step was rolled back
