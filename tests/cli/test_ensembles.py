"""``train.ensemble``: members cross-fitted by lot, one bundle, averaged when scoring."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import mfgtx
from mfgtx.cli import main
from mfgtx.jobs import load_config, train
from tests.cli.conftest import quality_job, summary, write_job
from tests.cli.test_jobs_forecast_vit import forecast_job

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow


def _ensemble(job: dict, members: int = 2) -> dict:
    job["train"]["ensemble"] = {"members": members}
    return job


@pytest.fixture(scope="module")
def quality_ensemble(plant, tmp_path_factory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("ensemble")
    job = write_job(out / "job.yaml", _ensemble(quality_job(plant, out)))
    outcome = train("sensor", load_config(job))
    return job, Path(str(outcome.bundle))


def test_an_ensemble_bundle_holds_its_members_and_their_audit(quality_ensemble) -> None:
    _, bundle = quality_ensemble
    predictor = mfgtx.load(bundle)
    assert type(predictor.model).__name__ == "SensorEncoderEnsemble"
    assert predictor.members == 2
    checks = {c.name: c for c in predictor.audit.checks}
    assert checks["member_0_lots_apart"].passed and checks["member_1_lots_apart"].passed
    assert predictor.audit.passed and predictor.bundle.manifest["split"]["ensemble_members"] == 2
    assert predictor.report.rows[0].name == "SensorEncoder"


def test_the_ensemble_scores_the_mean_of_its_members(quality_ensemble, plant, tmp_path) -> None:
    job, bundle = quality_ensemble
    predictor = mfgtx.load(bundle)
    frame = pd.read_csv(plant / "sensors.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    x, observed = windows.features(idx, predictor.input_spec.scaler)
    xt, ot = torch.from_numpy(x), torch.from_numpy(observed)
    with torch.no_grad():
        members = torch.stack([m(xt, ot) for m in predictor.model.members]).mean(0)
    out, _ = predictor.outputs(windows, idx)
    assert np.allclose(out, members.numpy(), atol=1e-6)
    out_path = tmp_path / "scores.parquet"
    assert main(["score", str(job), "--set", f"score.output.path={out_path}"]) == 0
    written = pd.read_parquet(out_path).sort_values(["lot", "window_end"]).reset_index(drop=True)
    rows = predictor.predict(frame).sort_values(["lot", "window_end"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(rows, written, check_dtype=False)


def test_a_regression_ensemble_averages_the_members_quantiles(plant, tmp_path) -> None:
    job = quality_job(plant, tmp_path)
    job["data"] = {
        "source": {"path": str(plant / "degradation.csv")},
        "label_known": "lot_end",
        "columns": {"lot": "machine", "time": "timestamp", "targets": ["rul_cycles"],
                    "label_time": "failed_at",
                    "sensors": ["load_pct", "vibration_mm_s", "bearing_temp_c"]},
    }  # fmt: skip
    job["windows"] = {"window": 20, "stride": 10}
    job["split"] = {"test_size": 0.25, "val_size": 0.2, "gap": "2h"}
    job["model"] = {"task": "regression", "tokens": "sensor", "d_model": 8, "n_heads": 2,
                    "n_layers": 1, "d_ff": 16, "quantiles": [0.1, 0.9], "target_scale": 100.0,
                    "clip": True}  # fmt: skip
    job["calibration"] = {"intervals": "off"}  # the members' band as trained (no conformal margin)
    config = load_config(write_job(tmp_path / "rul.yaml", _ensemble(job, 3)))
    predictor = mfgtx.load(train("sensor", config).bundle)
    frame = pd.read_csv(plant / "degradation.csv")
    windows = predictor.windows(frame)
    idx = np.arange(len(windows))
    x, observed = windows.features(idx, predictor.input_spec.scaler)
    xt, ot = torch.from_numpy(x), torch.from_numpy(observed)
    with torch.no_grad():
        q = torch.stack([m.forward_quantiles(xt, ot) for m in predictor.model.members]).mean(0)
    low, high = predictor.input_spec.clip[0]
    rows = predictor.rows(windows, idx)
    assert np.allclose(rows["rul_cycles_q10"], np.clip(q[:, 0, 0].numpy(), low, high), atol=1e-5)
    assert rows["rul_cycles"].between(low, high).all()  # clipped to the training range
    learned = predictor.bundle.manifest["split"]
    assert 0.0 <= low < high <= float(frame["rul_cycles"].max())  # a training range, not all rows
    assert learned["ensemble_members"] == 3


def test_a_forecast_ensemble_trains_and_scores(plant, tmp_path, capsys) -> None:
    job = write_job(tmp_path / "f.yaml", _ensemble(forecast_job(plant, tmp_path)))
    assert main(["train", "forecast", str(job)]) == 0
    result = summary(capsys.readouterr().out)
    predictor = mfgtx.load(result["bundle"])
    assert type(predictor.model).__name__ == "ForecasterEnsemble" and predictor.members == 2
    assert main(["score", str(job)]) == 0
    scored = pd.read_parquet(load_config(job).score.output.path)
    assert {"forecast", "q10", "q90"} <= set(scored.columns) and len(scored)


def test_a_killed_ensemble_resumes_member_by_member(plant, tmp_path) -> None:
    from mfgtx.train import CheckpointError

    config = load_config(write_job(tmp_path / "job.yaml", _ensemble(quality_job(plant, tmp_path))))
    member_1 = Path(f"{config.bundle}.ckpt") / "member-1" / "last.ckpt"

    class Killed(Exception):
        pass

    def kill_in_member_1(step: int, loss: float) -> None:
        if member_1.exists():
            raise Killed

    with pytest.raises(Killed):
        train("sensor", config, on_step=kill_in_member_1)
    assert (Path(f"{config.bundle}.ckpt") / "member-0" / "last.ckpt").exists()
    with pytest.raises(CheckpointError, match="ensemble.members: 2 -> 3"):
        train("sensor", load_config(write_job(tmp_path / "job3.yaml",
              _ensemble(quality_job(plant, tmp_path), 3))), resume=True)  # fmt: skip
    outcome = train("sensor", config, resume=True)
    assert outcome.resumed_from_epoch >= 2  # member 0 whole, member 1 from its checkpoint
    whole = train(
        "sensor",
        load_config(
            write_job(
                tmp_path / "w.yaml",
                {**_ensemble(quality_job(plant, tmp_path)), "bundle": str(tmp_path / "whole")},
            )
        ),
    )
    from safetensors.torch import load_file

    a = load_file(Path(str(outcome.bundle)) / "weights.safetensors")
    b = load_file(Path(str(whole.bundle)) / "weights.safetensors")
    assert a.keys() == b.keys() and all(a[k].equal(b[k]) for k in a)


def test_an_ensemble_needs_two_members_and_enough_lots(plant, tmp_path, capsys) -> None:
    job = write_job(tmp_path / "one.yaml", _ensemble(quality_job(plant, tmp_path), 1))
    assert main(["train", "sensor", str(job)]) == 2
    assert "train.ensemble: members must be >= 2" in capsys.readouterr().err
    job = write_job(tmp_path / "many.yaml", _ensemble(quality_job(plant, tmp_path), 50))
    assert main(["train", "sensor", str(job)]) == 2
    assert "50 members need at least 50 lots" in capsys.readouterr().err
