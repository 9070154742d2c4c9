"""The demo's days: the quality line scored run by run into its history, one sensor drifting
over the days, the inspection results arriving a day later; a second start redoes nothing."""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import sqlalchemy as sa

import mfgtx
from mfgtx.jobs import load_config
from mfgtx.jobs.demo import demo_configs
from mfgtx.jobs.demo_days import DRIFTING, SPREADS, plan_days, run_days
from tests.hardening.conftest import quality_bundle

__all__ = ["quality_bundle"]  # the fixture: a tiny quality bundle on the small plant

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def test_the_sample_plant_is_cut_into_days_with_a_sensor_drifting_two_spreads(tmp_path) -> None:
    job = demo_configs(SAMPLE, tmp_path / "out")["sample_quality"]
    days, files = plan_days(job, tmp_path / "out")
    again = plan_days(job, tmp_path / "out")[1]
    assert files == again  # derived without a random draw: the same bytes every start
    assert len(days) == 10 and [d.index for d in days] == list(range(10))
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    spread = sensors[DRIFTING].std()
    assert days[0].offset == 0
    assert abs(days[-1].offset - SPREADS * spread) < 0.02  # two spreads by the last day
    assert all(a.offset < b.offset for a, b in itertools.pairwise(days))
    for day in (days[3], days[-1]):
        drifted = pd.read_csv(pd.io.common.StringIO(files[day.sensors]))
        original = sensors[sensors["lot"].isin(day.lots)]
        assert drifted["lot"].tolist() == original["lot"].tolist()
        shift = (drifted[DRIFTING].to_numpy() - original[DRIFTING].to_numpy()).round(2)
        kept = ~pd.isna(shift)
        assert set(shift[kept].tolist()) == {day.offset}  # the drift, and only the drift
        assert drifted["pressure_bar"].equals(original["pressure_bar"].reset_index(drop=True))
    every_lot = [lot for d in days for lot in d.lots]
    assert sorted(every_lot) == sorted(sensors["lot"].unique())
    arrived = pd.concat(
        [pd.read_csv(pd.io.common.StringIO(files[d.inspections])) for d in days if d.inspections]
    )
    quality = pd.read_csv(SAMPLE / "quality.csv")
    last_end = pd.Timestamp(days[-1].date, tz="UTC") + pd.Timedelta(days=1)
    due = quality[pd.to_datetime(quality["inspected_at"], utc=True) < last_end]
    assert sorted(arrived["lot"]) == sorted(due["lot"])  # each once, on the day it came
    assert len(due) < len(quality)  # the last lots' results are still to come


def test_each_day_is_a_run_of_the_history_and_a_second_start_redoes_none(
    quality_bundle, tmp_path
) -> None:
    job, _ = quality_bundle
    config = load_config(job, [f"score.output.path={tmp_path / 'results' / 'scores.parquet'}"])
    bundle_id = mfgtx.load(str(config.bundle)).bundle_id
    steps = list(run_days(config, tmp_path, bundle_id))
    days = [s for s in steps if s.get("day")]
    assert len(days) >= 3 and steps[-1]["phase"] == "days" and steps[-1]["ran"] == len(days)
    assert [s["drift"][DRIFTING] for s in days] == sorted(s["drift"][DRIFTING] for s in days)
    assert days[-1]["drift"][DRIFTING] > 0
    assert sum(s["truth"] for s in days) > 0  # inspection results arrived through the days

    db = tmp_path / "results" / "history.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    with engine.connect() as conn:
        runs = conn.execute(sa.text("SELECT status FROM history_runs")).scalars().all()
        truth = conn.execute(sa.text("SELECT COUNT(*) FROM history_truth")).scalar_one()
    assert runs == ["ok"] * len(days)  # one run per day, all in the job's history
    assert truth == sum(s["truth"] for s in days)

    second = list(run_days(config, tmp_path, bundle_id))
    assert second == [{**steps[-1], "ran": 0, "cached": True}]  # every day up to date
    with engine.connect() as conn:
        n = conn.execute(sa.text("SELECT COUNT(*) FROM history_runs")).scalar_one()
    engine.dispose()
    assert n == len(days)
    db.unlink()  # the history gone: the days are there to fill it, so they run again
    third = list(run_days(config, tmp_path, bundle_id))
    assert third[-1]["ran"] == len(days) and db.is_file()
