"""The watch's rows in the history and the scores it judges a model on, in SQLite and (with
``MFGTX_TEST_PG_URL``) PostgreSQL, in a schema of its own so other tests' tables are apart."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.history import (
    judged_scores,
    latest_watches,
    open_history,
    record_truth,
    record_watch,
    watches_of,
)
from tests.history.conftest import window_rows

KEYS = ("lot", "window_end")


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    if request.param == "postgresql":
        yield open_history(request.getfixturevalue("pg_schema"), "postgresql")
        return
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'history.db'}")
    yield open_history(engine, "sqlite")
    engine.dispose()


def test_each_watch_is_kept_and_the_latest_per_bundle_is_read(store) -> None:
    record_watch(
        store,
        bundle_id="a",
        verdict="valid",
        summary="still valid",
        findings=[],
        checked_at="2026-12-01T00:00:00Z",
    )
    record_watch(
        store,
        bundle_id="a",
        verdict="not_valid",
        summary="not valid: drift",
        findings=[{"subject": "q", "reason": "drift:temp", "message": "m"}],
        checked_at="2026-12-02T00:00:00Z",
    )
    record_watch(
        store,
        bundle_id="b",
        verdict="unknown",
        summary="unknown",
        findings=[],
        checked_at="2026-12-01T12:00:00Z",
    )
    latest = latest_watches(store)
    assert latest[["bundle_id", "verdict"]].values.tolist() == [
        ["a", "not_valid"],
        ["b", "unknown"],
    ]
    assert latest["findings"].iloc[0] == [{"subject": "q", "reason": "drift:temp", "message": "m"}]
    assert watches_of(store, "a")["verdict"].tolist() == ["not_valid", "valid"]
    with pytest.raises(ValueError, match="verdict 'fine'"):
        record_watch(store, bundle_id="a", verdict="fine", summary="", findings=[])


def test_a_bundles_scores_are_joined_to_their_truth_and_no_others(store) -> None:
    for bundle, p in (("a", 0.9), ("b", 0.1)):
        run = store.start_run(bundle_id=bundle, kind="sensor")
        store.finish_run(run, window_rows(["L1", "L2"], p), KEYS)
    record_truth(store, pd.DataFrame({"lot": ["L1"], "defect": ["1.0"]}), targets=("defect",))
    got = judged_scores(store, "a", "defect")
    assert got["lot"].tolist() == ["L1", "L1"] and set(got["truth"]) == {"1.0"}
    assert [p["p_bad"] for p in got["predictions"]] == [0.9, 0.9]
    assert not got["truth_of_window"].any()
    assert judged_scores(store, "a", "label").empty
    assert judged_scores(store, "a", "defect", since="2999-01-01").empty
