"""``data.regimes`` in a sensor job: trained, audited, saved in the bundle's input spec and
applied the same way by ``mfgtx.load(bundle).predict`` and ``mfgtx score``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import mfgtx
from mfgtx.cli import main
from mfgtx.data import ColumnMap
from mfgtx.jobfile.prepare import read_windows, split
from mfgtx.jobs import ConfigError, load_config, train
from mfgtx.kinds import SENSOR
from mfgtx.kinds.sensor import SensorSpec
from tests.cli.conftest import summary, write_job
from tests.regimes_fleet import fleet


def regimes_job(folder: Path, regimes: dict | None) -> dict:
    data = {
        "source": {"path": str(folder / "fleet.csv")},
        "columns": {"lot": "lot", "time": "t", "sensors": ["a", "b"], "targets": ["rul"]},
    }
    if regimes is not None:
        data["regimes"] = regimes
    return {
        "data": data,
        "windows": {"window": 8, "stride": 4},
        "split": {"test_size": 3, "val_size": 2, "gap": "0s"},
        "model": {
            "task": "regression",
            "tokens": "sensor",
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "dropout": 0.0,
        },
        "train": {"epochs": 2, "batch_size": 16, "patience": None, "progress": "log"},
        "bundle": str(folder / "model"),
        "score": {"output": {"path": str(folder / "scores.csv")}},
    }


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("regimes")
    fleet().to_csv(folder / "fleet.csv", index=False)
    job = regimes_job(folder, {"columns": ["setting_1", "setting_2"], "clusters": 3})
    path = write_job(folder / "job.yaml", job)
    outcome = train("sensor", load_config(path))
    return path, Path(str(outcome.bundle))


def test_the_bundle_holds_the_regimes_and_the_audit_checked_them(trained) -> None:
    _, bundle = trained
    predictor = mfgtx.load(bundle)
    regimes = predictor.input_spec.regimes
    assert regimes is not None and regimes.n_regimes == 3
    assert regimes.inputs == ("a", "b", "setting_1", "setting_2")
    assert predictor.model.config.n_channels == 2 + 3  # normalised a, b + one-hot regimes
    checks = {c.name: c for c in predictor.audit.checks}
    assert checks["regimes_train_only"].passed and checks["scaler_train_only"].passed
    spec = json.loads((bundle / "manifest.json").read_text())["input_spec"]
    assert spec["version"] == 2 and spec["regimes"]["plan"]["clusters"] == 3
    assert SensorSpec.from_dict(spec) == predictor.input_spec


def test_predict_reads_the_rows_as_training_did(trained) -> None:
    path, bundle = trained
    config = load_config(path)
    windows, _ = read_windows(config, SENSOR)
    prep = split(config, windows)
    predictor = mfgtx.load(bundle)
    frame = pd.read_csv(Path(config.data.source.path))
    scored = predictor.windows(frame)
    # the same regime assignment and normalisation as training, row for row
    assert scored.sensors == prep.windows.sensors
    assert np.array_equal(scored.values, prep.windows.values, equal_nan=True)
    assert predictor.input_spec.regimes == prep.regimes


def test_score_writes_what_predict_returns(trained, tmp_path) -> None:
    path, bundle = trained
    out = tmp_path / "scores.csv"
    assert main(["score", str(path), "--set", f"score.output.path={out}"]) == 0
    frame = pd.read_csv(Path(load_config(path).data.source.path))
    rows = mfgtx.load(bundle).predict(frame)
    written = pd.read_csv(out)
    assert len(written) == len(rows) > 0
    assert np.allclose(written["rul"], rows["rul"], atol=1e-5)


def test_an_old_input_spec_without_regimes_still_reads(trained) -> None:
    _, bundle = trained
    spec = mfgtx.load(bundle).input_spec.to_dict()
    spec.pop("regimes")
    spec["version"] = 1
    assert SensorSpec.from_dict(spec).regimes is None
    spec["version"] = 3
    with pytest.raises(ValueError, match="input_spec version 3, expected 1 or 2"):
        SensorSpec.from_dict(spec)


def test_a_grade_unseen_in_training_is_an_errors_file_row(tmp_path) -> None:
    frame = fleet()
    frame.to_csv(tmp_path / "fleet.csv", index=False)
    path = write_job(tmp_path / "job.yaml", regimes_job(tmp_path, {"column": "grade"}))
    train("sensor", load_config(path))
    new = frame[frame["lot"].isin(["M08", "M09"])].copy()
    new.loc[new["lot"] == "M09", "grade"] = 40  # a grade no training lot ran
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "new_scores.csv"
    argv = ["score", str(path), "--set", f"score.source.path={tmp_path / 'new.csv'}"]
    assert main([*argv, "--set", f"score.output.path={out}"]) == 0
    assert set(pd.read_csv(out)["lot"]) == {"M08"}
    errors = pd.read_csv(tmp_path / "new_scores.errors.csv")
    assert errors["lot"].tolist() == ["M09"]
    assert "runs grade 40 in 40 row(s), a regime the model never saw" in errors["reason"][0]
    assert errors["column"][0] == "grade"


def test_a_text_grade_trains_reads_in_chunks_and_names_an_unseen_grade(tmp_path) -> None:
    frame = fleet()
    frame["grade"] = frame["grade"].map({10: "S355", 20: "S420", 30: "S460 HT"})
    frame.to_csv(tmp_path / "fleet.csv", index=False)
    job = regimes_job(tmp_path, {"column": "grade"})
    job["data"]["source"]["chunk_rows"] = 90  # the names must get one code in every chunk
    path = write_job(tmp_path / "job.yaml", job)
    bundle = Path(str(train("sensor", load_config(path)).bundle))
    predictor = mfgtx.load(bundle)
    regimes = predictor.input_spec.regimes
    assert sorted(regimes.known) == ["S355", "S420", "S460 HT"]
    assert predictor.input_spec.columns.categories == ("grade",)
    assert {c.name: c.passed for c in predictor.audit.checks}["regimes_train_only"]

    new = frame[frame["lot"].isin(["M08", "M09"])].copy()
    new.loc[new["lot"] == "M09", "grade"] = "S690 QL"  # a grade no training lot ran
    new.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "new_scores.csv"
    argv = ["score", str(path), "--set", f"score.source.path={tmp_path / 'new.csv'}"]
    assert main([*argv, "--set", f"score.output.path={out}"]) == 0
    assert set(pd.read_csv(out)["lot"]) == {"M08"}
    reason = pd.read_csv(tmp_path / "new_scores.errors.csv")["reason"][0]
    assert "lot M09 runs grade S690 QL in 40 row(s), a regime the model never saw" in reason
    assert "(it knows S355, S420, S460 HT)" in reason
    scored = predictor.predict(new[new["lot"] == "M08"])
    assert len(scored) and scored["lot"].eq("M08").all()
    # a job that maps the columns without data.regimes still reads the grade as in training
    plain = predictor.with_columns(ColumnMap("lot", "t", sensors=("a", "b", "grade")))
    pd.testing.assert_frame_equal(plain.predict(new[new["lot"] == "M08"]), scored)


@pytest.mark.parametrize(
    ("regimes", "message"),
    [
        (
            {"colums": ["setting_1"], "clusters": 2},
            "data.regimes.colums: unknown key; did you mean",
        ),
        ({"column": "grade", "columns": ["setting_1"]}, "data.regimes: give exactly one of column"),
        ({"columns": ["setting_1"]}, "data.regimes: clusters must be >= 2"),
        ({"column": "rul"}, "data: regimes: 'rul' is columns.targets"),
    ],
)
def test_regime_settings_are_validated_with_the_file_named(tmp_path, regimes, message) -> None:
    path = write_job(tmp_path / "job.yaml", regimes_job(tmp_path, regimes))
    with pytest.raises(ConfigError, match=message) as caught:
        load_config(path)
    assert str(caught.value).startswith("job.yaml")


def test_a_regime_column_the_data_lacks_is_named(tmp_path, capsys) -> None:
    fleet().to_csv(tmp_path / "fleet.csv", index=False)
    path = write_job(tmp_path / "job.yaml", regimes_job(tmp_path, {"column": "altitude"}))
    assert main(["train", "sensor", str(path)]) == 2
    assert "altitude" in summary(capsys.readouterr().out)["error"]


def test_the_baselines_read_the_normalised_windows(trained) -> None:
    from mfgtx.baselines import fit_baselines

    path, bundle = trained
    config = load_config(path)
    windows, _ = read_windows(config, SENSOR)
    prep = split(config, windows)
    report = mfgtx.load(bundle).report
    boosting = next(r for r in report.rows if r.name == "GradientBoosting")
    fitted = fit_baselines(prep.windows, prep.sets.train, "regression", scaler=prep.scaler)
    gb = next(b for b in fitted if b.name == "GradientBoosting")
    pred = gb.predict(prep.windows, prep.test)[:, 0]
    rmse = float(np.sqrt(np.mean((pred - prep.windows.y[prep.test, 0]) ** 2)))
    assert boosting.metrics["rmse"] == pytest.approx(rmse, rel=1e-6)


def test_evaluate_judges_the_bundle_as_training_did(trained, capsys) -> None:
    path, bundle = trained
    assert main(["evaluate", str(path)]) == 0, capsys.readouterr().err
    out = summary(capsys.readouterr().out)
    report = mfgtx.load(bundle).report
    assert out["metrics"]["rmse"] == pytest.approx(report.rows[0].metrics["rmse"], rel=1e-5)


def test_a_forecast_job_with_regimes_is_refused(tmp_path) -> None:
    from mfgtx.kinds import FORECAST

    fleet().to_csv(tmp_path / "fleet.csv", index=False)
    job = regimes_job(tmp_path, {"column": "grade"})
    job["forecast"] = {"horizon": 2, "targets": ["a"]}
    config = load_config(write_job(tmp_path / "job.yaml", job))
    with pytest.raises(ConfigError, match="data.regimes: operating regimes are for sensor jobs"):
        read_windows(config, FORECAST)
