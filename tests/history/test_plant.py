"""The plant view's queries: a time range read through the time index, truth joined, the
latest lots with their verdicts; promotions; two bundles compared on the same lots."""

from __future__ import annotations

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.history import (
    disagreements,
    example_history,
    example_job,
    job_name,
    last_scored,
    latest_lots,
    open_history,
    promote,
    promoted,
    scored_jobs,
    side_by_side,
    trend,
    trend_columns,
    verdict,
)
from mfgtx.jobfile import Limit, load_config

END = "2026-03-10T12:00:00Z"


@pytest.fixture
def filled(store, tmp_path):
    """Ten days of hourly scores of lines L1..L3 by bundle ``a`` and (scored a minute
    earlier, another seed) bundle ``b``, the job file they name."""
    job = example_job(tmp_path / "line_quality.yaml", name="line_quality", history="h.db")
    example_history(store, bundle_id="a", job_file=str(job), days=10, end=END)
    example_history(store, bundle_id="b", job_file=str(job), days=10, end=END, seed=1,
                    lag_minutes=4)  # fmt: skip
    return store, job


def test_trend_reads_only_its_time_range_with_the_data_s_own_times(filled) -> None:
    store, _ = filled
    assert last_scored(store, "a") == "2026-03-10T12:05:00Z"
    assert last_scored(store, "nobody") is None
    day = trend(store, "a", "2026-03-09T12:05:00Z", "2026-03-10T12:05:01Z", group_key="line")
    assert len(day) == 25 * 3  # 25 hours (both ends) of three lines, bundle a only
    assert day["scored_at"].between("2026-03-09T12:05:00Z", "2026-03-10T12:05:00Z").all()
    assert sorted(day["group"].unique()) == ["L1", "L2", "L3"]
    assert str(day["time"].dt.tz) == "UTC"  # window_end, a time: the x axis
    assert (day["time"] + pd.Timedelta(minutes=5)).dt.strftime("%Y-%m-%dT%H:%M:%SZ").tolist() == (
        day["scored_at"].tolist()
    )
    one = trend(store, "a", "2026-03-09T12:05:00Z", "2026-03-10T12:05:01Z", group_key="line",
                groups=["L2"])  # fmt: skip
    assert set(one["lot"].str[:2]) == {"L2"} and len(one) == 25
    assert trend_columns(day) == ["p_bad"]  # p_good left out, the quantiles too


def test_trend_uses_the_time_index_not_the_whole_table(filled) -> None:
    store, _ = filled
    seen: list[str] = []

    def plan(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT") and "history_scores" in statement:
            rows = conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters).all()
            seen.append(" ".join(str(r[-1]) for r in rows))

    sa.event.listen(store.engine, "before_cursor_execute", plan)
    try:
        trend(store, "a", "2026-03-09T00:00:00Z", "2026-03-10T00:00:00Z", target="defect")
        last_scored(store, "a")
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", plan)
    assert len(seen) == 2
    for p in seen:
        assert "USING INDEX ix_history_scores_scored_at" in p, p


def test_truth_joins_where_it_has_arrived(filled) -> None:
    store, _ = filled
    frame = trend(store, "a", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z", target="defect")
    known = frame[frame["truth"].notna()]
    assert len(known) == 7 * 3  # 00:00 .. 06:00 inspected; the last 6 hours not yet
    assert set(known["actual"]) <= {0.0, 1.0}
    assert frame.loc[frame["truth"].isna(), "actual"].isna().all()
    assert frame.loc[frame["truth"].isna(), "time"].min() == pd.Timestamp("2026-03-10T07:00Z")
    bare = trend(store, "a", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z")
    assert bare["truth"].isna().all()


def test_remaining_life_trend_is_per_machine_with_its_interval(store, tmp_path) -> None:
    job = example_job(tmp_path / "rul.yaml", name="fleet", history="h.db", task="regression")
    example_history(store, bundle_id="r", job_file=str(job), task="regression", days=2,
                    lines=("M01", "M02"), end=END)  # fmt: skip
    frame = trend(store, "r", "2026-03-01", "2026-04-01", target="rul_cycles")
    assert sorted(frame["group"].unique()) == ["M01", "M02"]  # no keys: per machine
    assert trend_columns(frame) == ["rul_cycles"]
    assert (frame["low"] < frame["rul_cycles"]).all() and (
        frame["rul_cycles"] < frame["high"]
    ).all()
    assert frame["actual"].notna().sum() == 2 * (48 - 6)
    limits = load_config(job).limits
    latest = latest_lots(frame, n=3, limits=limits)
    assert latest.groupby("group").size().tolist() == [1, 1]  # a machine is one lot
    for _, row in latest.iterrows():
        expect = "alarm" if row["rul_cycles"] < 30 else "ok"
        assert row["level"] == expect, row


def test_latest_lots_per_line_newest_first_with_verdicts(filled) -> None:
    store, job = filled
    frame = trend(store, "a", "2026-03-09T12:00:00Z", "2026-03-11T00:00:00Z", group_key="line")
    latest = latest_lots(frame, n=4, limits=load_config(job).limits)
    assert latest.groupby("group").size().to_dict() == {"L1": 4, "L2": 4, "L3": 4}
    l1 = latest[latest["group"] == "L1"]
    assert l1["time"].is_monotonic_decreasing and l1["lot"].iloc[0] == "L1-0240"
    for _, row in latest.iterrows():
        expect = "alarm" if row["p_bad"] > 0.8 else "flag" if row["decision"] == "bad" else "ok"
        assert row["level"] == expect, row


def test_verdict_in_plant_words() -> None:
    rul = {"rul_cycles": Limit(alarm_below=30)}
    assert verdict(None, {"rul_cycles": 12.0}, limits=rul) == (
        "alarm", "rul_cycles 12 is below the alarm limit 30")  # fmt: skip
    assert verdict(None, {"rul_cycles": 80.0}, limits=rul) == ("ok", "within its limits")
    assert verdict("bad", {"p_bad": 0.7}) == ("flag", "flagged bad")
    assert verdict("good", {"p_bad": 0.1}, ["sensor pressure_bar: no reading"]) == (
        "check", "input checked: sensor pressure_bar: no reading")  # fmt: skip
    assert verdict(None, {"x": 1.0}) == ("none", "scored (no decision, no limit set)")


def test_promote_replaces_the_job_s_promoted_bundle(filled) -> None:
    store, job = filled
    assert job_name(load_config(job)) == "line_quality"
    assert promoted(store, "line_quality") is None
    promote(store, "line_quality", "a", "/models/a", "first")
    promote(store, "line_quality", "b", "/models/b", "better on L3")
    promote(store, "other_job", "a")
    row = promoted(store, "line_quality")
    assert row is not None
    assert (row["bundle_id"], row["bundle_path"], row["note"]) == ("b", "/models/b", "better on L3")
    assert promoted(store, "other_job")["bundle_id"] == "a"
    with pytest.raises(ValueError, match="name the bundle"):
        promote(store, "line_quality", " ")


def test_jobs_lists_each_job_file_and_its_bundles_latest_first(filled) -> None:
    store, job = filled
    listed = scored_jobs(store)
    assert listed["bundle_id"].tolist() == ["a", "b"]  # a scored a minute after b
    assert set(listed["job_file"]) == {str(job)} and set(listed["runs"]) == {240}


def test_two_bundles_disagree_where_their_calls_or_values_part(filled) -> None:
    store, _ = filled
    a = trend(store, "a", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z", group_key="line")
    b = trend(store, "b", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z", group_key="line")
    both = side_by_side(a, b, "p_bad")
    assert len(both) == len(a) == len(b)  # the same lots and windows
    apart = disagreements(both, "p_bad")
    differ = both["a_decision"] != both["b_decision"]
    far = (both["b_p_bad"] - both["a_p_bad"]).abs() > 0.1
    assert len(apart) == int((differ | far).sum()) > 0
    assert apart["difference"].abs().is_monotonic_decreasing
    same = disagreements(side_by_side(a, a, "p_bad"), "p_bad")
    assert same.empty


def test_postgresql_answers_the_same_trend(pg_schema) -> None:
    store = open_history(pg_schema, "pg")
    example_history(store, bundle_id="a", job_file="job.yaml", days=2, end=END)
    frame = trend(store, "a", "2026-03-10T00:00:00Z", "2026-03-11T00:00:00Z",
                  group_key="line", target="defect")  # fmt: skip
    assert len(frame) == 13 * 3 and frame["truth"].notna().sum() == 7 * 3
    assert last_scored(store, "a") == "2026-03-10T12:05:00Z"
    promote(store, "job", "a")
    assert promoted(store, "job")["bundle_id"] == "a"


def test_mfgtx_promote_marks_the_job_s_bundle_in_its_history(quality_bundle, tmp_path, capsys):
    from mfgtx.artifacts import verify_bundle
    from mfgtx.cli import main
    from mfgtx.history import read_history

    job, bundle = quality_bundle
    db = tmp_path / "history.db"
    args = ["promote", str(job), "--set", f"history={db}", "--note", "night shift trial"]
    assert main(args) == 0
    assert '"command": "promote"' in capsys.readouterr().out
    engine = sa.create_engine(f"sqlite:///{db}")
    row = promoted(read_history(engine, "history.db"), job_name(load_config(job)))
    engine.dispose()
    assert row is not None and row["bundle_id"] == verify_bundle(bundle)["bundle_id"]
    assert row["bundle_path"] == str(bundle.resolve()) and row["note"] == "night shift trial"
    assert main([*args[:4], str(tmp_path / "no_bundle")]) == 2  # a folder that is no bundle
    assert "no_bundle" in capsys.readouterr().err


def test_forecasts_trend_their_next_reading_per_sensor_and_images_trend_together(store) -> None:
    from mfgtx.history import ALL, NOT_RECORDED

    forecast = pd.DataFrame({
        "lot": "L1-0001", "window_end": "2026-03-02T10:00:00+00:00",
        "sensor": ["temperature_c", "temperature_c", "pressure_bar", "pressure_bar"],
        "step": [1, 2, 1, 2], "forecast": [186.0, 187.0, 5.0, 5.1],
        "q10": [185.0, 185.5, 4.9, 4.9], "q90": [187.0, 188.0, 5.1, 5.3],
    })  # fmt: skip
    run = store.start_run(bundle_id="f", kind="forecast")
    store.finish_run(run, forecast, ("lot", "window_end", "sensor", "step"))
    frame = trend(store, "f", "2000", "2100", group_key="line")
    assert len(frame) == 2
    assert dict(zip(frame["series"], frame["forecast"], strict=True)) == {
        "temperature_c": 186.0, "pressure_bar": 5.0}  # step 1 only  # fmt: skip
    assert set(frame["group"]) == {NOT_RECORDED} and trend_columns(frame) == ["forecast"]
    limits = {"temperature_c": Limit(spec=(180, 185))}  # a sensor's spec: its forecast judged
    latest = latest_lots(frame, limits=limits)
    assert latest["level"].tolist() == ["alarm"], latest
    images = pd.DataFrame({"image": ["a.png", "b.png"], "p_none": [0.9, 0.2],
                           "p_defect": [0.1, 0.8], "predicted": [0, 1],
                           "decision": ["good", "defect"]})  # fmt: skip
    run = store.start_run(bundle_id="v", kind="vit")
    store.finish_run(run, images, ("image",))
    frame = trend(store, "v", "2000", "2100")
    assert frame["lot"].tolist() == ["a.png", "b.png"] and set(frame["group"]) == {ALL}
    assert trend_columns(frame) == ["p_defect"]  # not the class index, not p_none
    assert latest_lots(frame)["level"].tolist() == ["flag", "ok"]
