"""Recording runs: no key twice, the latest run's values kept, truth joined later."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.history import (
    HistoryError,
    open_history,
    predictions_with_truth,
    record_truth,
    runs,
    scores_between,
)
from mfgtx.history.tables import METADATA
from mfgtx.jobs._sql import write_engine
from tests.history.conftest import window_rows

KEYS = ("lot", "window_end")


def _count(store, table: str) -> int:
    with store.engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT COUNT(*) FROM {table}")).scalar_one()


def test_scoring_the_same_windows_again_keeps_one_row_with_the_latest_values(store) -> None:
    first = store.start_run(bundle_id="b1", kind="sensor", job_file="job.yaml")
    assert store.finish_run(first, window_rows(["A1", "A2"], 0.2), KEYS) == 4
    second = store.start_run(bundle_id="b1", kind="sensor", job_file="job.yaml")
    assert store.finish_run(second, window_rows(["A2", "A3"], 0.9), KEYS, bad_lots=1) == 4
    assert _count(store, "history_scores") == 6  # A1 x2, A2 x2 (replaced), A3 x2
    got = scores_between(store, "2000-01-01", "2100-01-01")
    a2 = got[got["lot"] == "A2"]
    assert len(a2) == 2 and set(a2["run_id"]) == {second}
    assert [p["p_bad"] for p in a2["predictions"]] == [0.9, 0.9]
    assert set(a2["decision"]) == {"bad"}
    assert a2["keys"].iloc[0] == {"lot": "A2", "window_end": "2026-03-01T00:00:00"}
    assert a2["predictions"].iloc[0] == {"line": "L3", "p_bad": 0.9}  # line not named a key
    # another bundle scoring the same windows is another row
    other = store.start_run(bundle_id="b2", kind="sensor")
    store.finish_run(other, window_rows(["A1"], 0.5), KEYS)
    assert _count(store, "history_scores") == 8
    listed = runs(store, limit=10)
    assert set(listed["status"]) == {"ok"} and len(listed) == 3
    assert listed.set_index("run_id").loc[second, ["rows", "bad_lots"]].tolist() == [4, 1]


def test_a_labels_file_that_arrives_later_joins_to_its_predictions(store, tmp_path) -> None:
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(run, window_rows(["A1", "A2", "A3"], 0.7), KEYS)
    before = predictions_with_truth(store, "A1", "A3")
    assert before["truth"].isna().all() and len(before) == 6
    labels = tmp_path / "quality.csv"
    labels.write_text("lot,defect\nA1,1\nA3,0\nZ9,1\n")
    n = record_truth(store, pd.read_csv(labels), targets=("defect",), source=str(labels))
    assert n == 3
    joined = predictions_with_truth(store, "A1", "A3", target="defect")
    by_lot = joined.groupby("lot")["truth"].first().to_dict()
    assert by_lot["A1"] == "1" and by_lot["A3"] == "0" and pd.isna(by_lot["A2"])
    assert set(joined.loc[joined["lot"] == "A1", "truth_source"]) == {str(labels)}
    # a window's own truth wins over the lot's; a corrected label replaces the old one
    record_truth(store, pd.DataFrame({"lot": ["A1"], "window_end": ["2026-03-02T00:00:00"],
                                      "defect": [0]}), targets=("defect",),
                 window_end="window_end")  # fmt: skip
    record_truth(store, pd.DataFrame({"lot": ["A3"], "defect": [1]}), targets=("defect",))
    joined = predictions_with_truth(store, "A1", "A3", target="defect").set_index(
        ["lot", "window_end"]
    )
    assert joined.loc[("A1", "2026-03-01T00:00:00"), "truth"] == "1"
    assert joined.loc[("A1", "2026-03-02T00:00:00"), "truth"] == "0"
    assert set(joined.loc["A3", "truth"]) == {"1"}
    with pytest.raises(ValueError, match="no column defect"):
        record_truth(store, pd.DataFrame({"lot": ["A1"]}), targets=("defect",))


def test_scores_are_read_by_time_range_and_line(store) -> None:
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(run, window_rows(["A1"], 0.1), KEYS, extra_keys=("line",))
    assert len(scores_between(store, "2000-01-01", "2100-01-01", line="L3")) == 2
    assert len(scores_between(store, "2000-01-01", "2100-01-01", line="L4")) == 0
    assert len(scores_between(store, "2100-01-01", "2200-01-01")) == 0


def test_a_forecasters_interval_is_its_lowest_and_highest_quantile(store) -> None:
    rows = pd.DataFrame({"lot": ["F1", "F1"], "window_end": ["5", "5"], "sensor": ["t", "t"],
                         "step": [1, 2], "forecast": [1.0, 2.0], "q10": [0.5, 1.5],
                         "q50": [1.0, 2.0], "q90": [1.5, 2.5]})  # fmt: skip
    run = store.start_run(bundle_id="f", kind="forecast")
    assert store.finish_run(run, rows, ("lot", "window_end", "sensor", "step")) == 2
    got = scores_between(store, "2000-01-01", "2100-01-01")
    assert got[["interval_low", "interval_high"]].values.tolist() == [[0.5, 1.5], [1.5, 2.5]]
    assert got["decision"].isna().all()


def test_quality_flags_of_a_lot_are_kept_with_its_rows(store) -> None:
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.finish_run(run, window_rows(["A1", "A2"], 0.1), KEYS,
                     flags={"A1": ["pressure_bar: 3 values above the training range"]})  # fmt: skip
    got = scores_between(store, "2000-01-01", "2100-01-01").groupby("lot")["flags"].first()
    assert got["A1"] == ["pressure_bar: 3 values above the training range"] and got["A2"] == []


def test_a_sqlite_file_that_is_not_a_history_is_never_written_into(tmp_path) -> None:
    import sqlite3

    plant = tmp_path / "history.db"
    with sqlite3.connect(plant) as db:
        db.execute("CREATE TABLE setpoints (tag TEXT, value REAL)")
    engine = write_engine(f"sqlite:///{plant}")
    with pytest.raises(HistoryError, match=r"history history.db: holds the tables setpoints"):
        open_history(engine, "history.db")
    engine.dispose()
    with sqlite3.connect(plant) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert names == ["setpoints"]


def test_a_failed_run_is_listed_as_failed_with_no_rows(store) -> None:
    run = store.start_run(bundle_id="b1", kind="sensor")
    store.fail_run(run, "sensors.csv: nothing could be scored", seconds=0.5)
    (row,) = runs(store).to_dict("records")
    assert row["status"] == "failed" and row["message"].startswith("sensors.csv")
    assert _count(store, "history_scores") == 0


def test_postgresql_history_keeps_one_row_per_key(tmp_path) -> None:
    import os

    url = os.environ.get("MFGTX_TEST_PG_URL")
    if not url:
        pytest.skip("MFGTX_TEST_PG_URL is not set")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        for t in METADATA.tables:
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {t}"))
    try:
        store = open_history(engine, "pg")
        for p in (0.2, 0.8):
            store.finish_run(store.start_run(bundle_id="b", kind="sensor"),
                             window_rows(["P1"], p), KEYS, extra_keys=("line",))  # fmt: skip
        record_truth(store, pd.DataFrame({"lot": ["P1"], "label": ["bad"]}))
        got = predictions_with_truth(store, "P1", "P1")
        assert len(got) == 2 and set(got["truth"]) == {"bad"}
        assert [json.dumps(p) for p in got["predictions"]] == ['{"p_bad": 0.8}'] * 2
    finally:
        with engine.begin() as conn:
            for t in METADATA.tables:  # every version's tables (v3's left behind fail the next)
                conn.execute(sa.text(f"DROP TABLE IF EXISTS {t}"))
        engine.dispose()
