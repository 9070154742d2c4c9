"""``mfgtx score`` records every run in the history beside its output (or where told)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from mfgtx.jobs import load_config, score


def _scores(db: Path) -> pd.DataFrame:
    with sqlite3.connect(db) as conn:
        return pd.read_sql("SELECT * FROM history_scores", conn)


def _runs(db: Path) -> pd.DataFrame:
    with sqlite3.connect(db) as conn:
        return pd.read_sql("SELECT * FROM history_runs", conn)


def test_scoring_the_same_input_twice_records_each_window_once(quality_bundle, tmp_path):
    job, _ = quality_bundle
    out = tmp_path / "line3" / "scores.parquet"
    config = load_config(job, [f"score.output.path={out}"])
    first = score(config)
    db = out.parent / "history.db"  # the default: beside the output
    assert first.history.startswith(f"{db} (run ")
    second = score(config)
    rows = pd.read_parquet(out)
    got = _scores(db)
    assert len(got) == len(rows) == first.output_rows == second.output_rows > 0
    assert not got.duplicated(["bundle_id", "lot", "window_end"]).any()
    assert set(got["run_id"]) == {second.history.split("run ")[1].split(",")[0]}
    assert (got["lot"].astype(str).tolist(), got["window_end"].tolist()) == (
        rows["lot"].astype(str).tolist(), rows["window_end"].tolist(),
    )  # fmt: skip
    runs = _runs(db)
    assert runs["status"].tolist() == ["ok", "ok"] and runs["rows"].tolist() == [len(rows)] * 2
    assert runs["job_file"].tolist() == ["job.yaml"] * 2
    assert got["decision"].tolist() == rows["decision"].tolist()


def test_history_off_records_nothing_and_a_named_file_is_used(quality_bundle, tmp_path):
    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    off = score(load_config(job, [f"score.output.path={out}", "history=off"]))
    assert off.history == "off" and not (tmp_path / "history.db").exists()
    named = tmp_path / "runs" / "line3.db"
    outcome = score(load_config(job, [f"score.output.path={out}", f"history={named}"]))
    assert outcome.history.startswith(str(named)) and len(_scores(named)) == outcome.output_rows


def test_a_history_that_cannot_be_written_never_costs_the_scores(quality_bundle, tmp_path, caplog):
    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    theirs = tmp_path / "history.db"
    with sqlite3.connect(theirs) as db:
        db.execute("CREATE TABLE setpoints (tag TEXT, value REAL)")
    outcome = score(load_config(job, [f"score.output.path={out}"]))
    assert outcome.history.startswith("not recorded: history ")
    assert "holds the tables setpoints" in outcome.history
    assert "history: not recorded" in outcome.message
    assert len(pd.read_parquet(out)) == outcome.output_rows > 0
    assert "not recorded in the history" in caplog.text


def test_a_history_key_that_is_neither_file_nor_url_is_refused() -> None:
    from mfgtx.jobs import ConfigError

    with pytest.raises(ConfigError, match=r"history: 'line3' is neither off, a database URL"):
        load_config(None, ["history=line3"])


def test_mfgtx_history_lists_the_runs_newest_first_without_changing_the_file(
    quality_bundle, tmp_path, capsys
) -> None:
    from mfgtx.cli import main

    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    args = ["history", str(job), "--set", f"score.output.path={out}"]
    assert main(args) == 2
    assert "history.db does not exist yet" in capsys.readouterr().err
    config = load_config(job, [f"score.output.path={out}"])
    first, second = score(config), score(config)
    db = tmp_path / "history.db"
    before = db.read_bytes()
    assert main([*args, "--runs", "5"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3 and '"runs": 2' in lines[-1]
    ids = [line.rsplit("[run ", 1)[1].rstrip("]") for line in lines[:2]]
    assert set(ids) == {s.history.split("run ")[1].split(",")[0] for s in (first, second)}
    assert f": {first.output_rows} rows, 0 bad lot(s) in " in lines[0] and " ok sensor " in lines[0]
    assert db.read_bytes() == before
