"""``evaluate`` on an external test set: a test source, a truth table joined on the lot (or
in lot order, NASA's RUL files), the last window per lot, baselines fitted on the training
data, every lot judged or listed."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mfgtx
from mfgtx.cli import main
from mfgtx.data import DataError
from mfgtx.jobs import evaluate, load_config, train
from tests.cli.conftest import SAMPLE, summary, write_job

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow

SENSORS = ["t24", "t30", "t50", "p30", "nc", "phi"]


def _one_after_another(frame: pd.DataFrame) -> pd.DataFrame:
    """The machines' runs placed one after another on the clock (the sample fleet's runs
    overlap in time, so its labels, known at failure, would leave no lot to split by time)."""
    t = pd.to_datetime(frame["timestamp"])
    parts, start = [], pd.Timestamp("2026-01-01T00:00:00Z")
    for _, idx in frame.groupby("machine", sort=False).groups.items():
        part = frame.loc[idx].copy()
        moved = t[idx] - t[idx].min() + start
        part["timestamp"] = moved.dt.strftime("%Y-%m-%dT%H:%M:%S+00:00")
        parts.append(part)
        start = moved.max() + pd.Timedelta("1D")
    return pd.concat(parts, ignore_index=True)


@pytest.fixture(scope="module", autouse=True)
def _fleet(tmp_path_factory) -> None:
    global FLEET
    FLEET = tmp_path_factory.mktemp("fleet")
    for name in ("train.csv", "test.csv"):
        _one_after_another(pd.read_csv(SAMPLE / "regimes" / name)).to_csv(FLEET / name, index=False)
    (FLEET / "test_rul.csv").write_bytes((SAMPLE / "regimes" / "test_rul.csv").read_bytes())


FLEET = SAMPLE / "regimes"


def fleet_job(out: Path) -> dict:
    return {
        "data": {
            "source": {"path": str(FLEET / "train.csv")},
            "label_known": "lot_end",
            "columns": {
                "lot": "machine",
                "time": "timestamp",
                "sensors": SENSORS,
                "targets": ["rul_cycles"],
                "label_time": "failed_at",
            },
        },
        "windows": {"window": 24, "stride": 4, "min_rows": 12},
        "split": {"test_size": 0.2, "val_size": 0.2, "gap": "4h"},
        "model": {
            "task": "regression",
            "tokens": "sensor",
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "target_scale": 100.0,
            "clip": True,
        },
        "train": {"epochs": 2, "batch_size": 64, "patience": None, "progress": "log"},
        "bundle": str(out / "fleet"),
        "evaluate": {
            "source": {"path": str(FLEET / "test.csv")},
            "truth": {"path": str(FLEET / "test_rul.csv"), "on": "machine"},
        },
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[dict, Path]:
    out = tmp_path_factory.mktemp("external")
    job = fleet_job(out)
    train("sensor", load_config(write_job(out / "job.yaml", job)))
    return job, out


def _run(job: dict, path: Path) -> tuple[dict, object]:
    return evaluate(load_config(write_job(path, job)))


def test_every_test_lot_is_judged_on_its_last_window_against_the_truth(trained, tmp_path):
    job, out = trained
    result, report = _run(job, tmp_path / "job.yaml")
    truth = pd.read_csv(FLEET / "test_rul.csv")
    ext = result["external"]
    assert ext["lots_in_source"] == ext["lots_judged"] == report.n_test == len(truth)
    assert not ext["not_judged"] and result["audit_passed"]
    names = [r.name for r in report.rows]
    assert names[0] == "bundle" and {"Ridge", "GradientBoosting"} <= set(names)
    # the model's row is the rows mfgtx.load(...).predict writes, as of each lot's last row,
    # joined on the machine (not in file order: the truth is shuffled here)
    rows = mfgtx.load(out / "fleet").predict(pd.read_csv(FLEET / "test.csv"))
    last = rows.groupby("lot").tail(1).set_index("lot")["rul_cycles"]
    joined = truth.set_index("machine")["rul_cycles"].loc[last.index]
    rmse = float(np.sqrt(np.mean((last.to_numpy() - joined.to_numpy()) ** 2)))
    assert report.rows[0].metrics["rmse"] == pytest.approx(rmse, rel=1e-5)
    shuffled = tmp_path / "shuffled.csv"
    truth.sample(frac=1.0, random_state=0).to_csv(shuffled, index=False)
    job2 = copy.deepcopy(job)
    job2["evaluate"]["truth"]["path"] = str(shuffled)
    again, _ = _run(job2, tmp_path / "job2.yaml")
    assert again["metrics"]["rmse"] == pytest.approx(result["metrics"]["rmse"], rel=1e-9)


def test_a_rul_file_in_lot_order_gives_the_same_report(trained, tmp_path):
    job, _ = trained
    by_table, _ = _run(job, tmp_path / "a.yaml")
    truth = pd.read_csv(FLEET / "test_rul.csv").sort_values("machine")
    rul = tmp_path / "RUL_fleet.txt"
    rul.write_text("".join(f"{v} \n" for v in truth["rul_cycles"]))
    job2 = copy.deepcopy(job)
    job2["evaluate"]["truth"] = {"path": str(rul), "format": "cmapss_rul"}
    by_order, _ = _run(job2, tmp_path / "b.yaml")
    assert by_order["metrics"] == by_table["metrics"]
    rul.write_text("".join(f"{v}\n" for v in truth["rul_cycles"][:-1]))  # one engine short
    with pytest.raises(DataError, match=r"19 values, but the test source has 20 lots"):
        _run(job2, tmp_path / "c.yaml")


def test_capping_the_truth_changes_the_figures(trained, tmp_path):
    job, _ = trained
    plain, _ = _run(job, tmp_path / "a.yaml")
    job2 = copy.deepcopy(job)
    job2["evaluate"]["truth"]["rul_cap"] = 20
    capped, _ = _run(job2, tmp_path / "b.yaml")
    assert capped["metrics"]["rmse"] != plain["metrics"]["rmse"]


def test_lots_without_truth_or_too_short_are_listed_and_the_rest_judged(trained, tmp_path):
    job, _ = trained
    test = pd.read_csv(FLEET / "test.csv")
    first, second = test["machine"].unique()[:2]
    short = test[test["machine"] != first]
    short = pd.concat([short[short["machine"] != second], short[short["machine"] == second][:5]])
    short.to_csv(tmp_path / "test.csv", index=False)
    truth = pd.read_csv(FLEET / "test_rul.csv")
    truth[truth["machine"] != test["machine"].unique()[2]].to_csv(tmp_path / "t.csv", index=False)
    job2 = copy.deepcopy(job)
    job2["evaluate"] = {"source": {"path": str(tmp_path / "test.csv")},
                        "truth": {"path": str(tmp_path / "t.csv"), "on": "machine"}}  # fmt: skip
    result, report = _run(job2, tmp_path / "job.yaml")
    reasons = {e["lot"]: e["reason"] for e in result["external"]["not_judged"]}
    assert set(reasons) == {second, test["machine"].unique()[2]}
    assert (
        "(5 readings)" in reasons[second]
        and "not in the truth table" in reasons[test["machine"].unique()[2]]
    )
    assert report.n_test == result["external"]["lots_judged"] == 17


def test_a_bad_truth_table_names_its_line_and_column(trained, tmp_path):
    job, _ = trained
    truth = pd.read_csv(FLEET / "test_rul.csv", dtype=str)
    bad = truth.copy()
    bad.loc[1, "rul_cycles"] = "about 40"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    job2 = copy.deepcopy(job)
    job2["evaluate"]["truth"]["path"] = str(tmp_path / "bad.csv")
    with pytest.raises(DataError, match=r"bad.csv line 3, column 'rul_cycles'.*'about 40'"):
        _run(job2, tmp_path / "a.yaml")
    pd.concat([truth, truth[:1]]).to_csv(tmp_path / "twice.csv", index=False)
    job2["evaluate"]["truth"]["path"] = str(tmp_path / "twice.csv")
    with pytest.raises(DataError, match=r"twice.csv line 22: lot C25 has a second row"):
        _run(job2, tmp_path / "b.yaml")
    job2["evaluate"]["truth"] = {"path": str(FLEET / "test_rul.csv")}  # lot column 'machine' ok
    job2["evaluate"]["truth"]["columns"] = ["rul"]
    with pytest.raises(DataError, match=r"missing column\(s\) \['rul'\]"):
        _run(job2, tmp_path / "c.yaml")


def test_training_rows_in_the_test_set_fail_the_audit(trained, tmp_path, capsys):
    job, _ = trained
    job2 = copy.deepcopy(job)
    job2["evaluate"] = {"source": {"path": str(FLEET / "train.csv")}}  # labelled, no truth
    path = write_job(tmp_path / "job.yaml", job2)
    assert main(["evaluate", str(path)]) == 0
    result = summary(capsys.readouterr().out)
    assert not result["audit_passed"]
    assert len(result["external"]["repeats_training_rows"]) == result["external"]["lots_judged"]


def test_a_labelled_test_source_needs_no_truth_table(trained, tmp_path):
    job, _ = trained
    train_rows = pd.read_csv(FLEET / "train.csv")
    machines = train_rows["machine"].unique()
    train_rows[train_rows["machine"].isin(machines[:-6])].to_csv(tmp_path / "a.csv", index=False)
    train_rows[train_rows["machine"].isin(machines[-6:])].to_csv(tmp_path / "b.csv", index=False)
    job2 = copy.deepcopy(job)
    job2["data"]["source"]["path"] = str(tmp_path / "a.csv")
    job2["evaluate"] = {"source": {"path": str(tmp_path / "b.csv")}}
    result, report = _run(job2, tmp_path / "job.yaml")
    assert result["audit_passed"] and report.n_test == 6
    job2["evaluate"]["last_per_lot"] = False
    _, report = _run(job2, tmp_path / "job2.yaml")
    assert report.n_test > 6


def test_the_evaluate_section_is_checked(tmp_path):
    from mfgtx.jobfile.config import ConfigError

    job = fleet_job(tmp_path)
    job["evaluate"]["truth"]["formt"] = "csv"
    with pytest.raises(
        ConfigError, match=r"evaluate.truth.formt: unknown key; did you mean 'format'"
    ):
        load_config(write_job(tmp_path / "a.yaml", job))
    job = fleet_job(tmp_path)
    job["evaluate"]["truth"] = {"path": "RUL.txt", "format": "cmapss_rul", "on": "machine"}
    with pytest.raises(ConfigError, match="a cmapss_rul file has no columns"):
        load_config(write_job(tmp_path / "b.yaml", job))
