"""The checks that stand where the type checker found a value that may be missing: each
raises a clear error instead of failing on ``None`` further in."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mfgtx.artifacts import BundleError
from mfgtx.data import RegimePlan
from mfgtx.kinds import (
    FORECAST,
    SENSOR,
    FitRequest,
    ForecastSection,
    SensorPredictor,
    Trained,
)
from mfgtx.kinds._split import target_values
from mfgtx.split import SplitPlan
from mfgtx.train import TrainConfig


def test_windows_without_targets_are_refused_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="no targets.*data.columns.targets"):
        target_values(SimpleNamespace(y=None))


def test_a_forecast_refuses_operating_regimes_before_reading_its_windows() -> None:
    with pytest.raises(ValueError, match="data.regimes: operating regimes are for sensor jobs"):
        FORECAST.fit(
            None,  # never read: the regimes are refused first
            None,
            None,
            FitRequest(ForecastSection(), SplitPlan(), TrainConfig(), regimes=RegimePlan("grade")),
        )


def test_a_predictor_of_a_model_just_trained_has_no_bundle_directory() -> None:
    predictor = SensorPredictor(SENSOR, Trained(model=None, bundle_id="0123456789abcdef"), None)
    assert repr(predictor) == "SensorPredictor(just trained, id 0123456789ab)"
    with pytest.raises(BundleError, match="just trained: its bundle is not written yet"):
        _ = predictor.path


def test_an_old_sensor_bundle_without_its_scaler_names_what_it_lacks() -> None:
    old = SimpleNamespace(
        path=Path("runs/old"),
        input_spec=None,
        scaler=None,
        manifest={
            "data_schema": {"lot": "m", "time": "t", "sensors": ["x"], "targets": ["rul"]},
            "extra": {"job": {"window": 6, "targets": ["rul"], "task": "regression"}},
        },
    )
    with pytest.raises(BundleError, match=r"runs/old was written by an earlier mfgtx.*"
                       r"\(missing \['data_schema', 'scaler'\]\); retrain it"):  # fmt: skip
        SENSOR.spec_from_bundle(old)


def test_a_kind_asks_its_fit_with_the_job_s_settings_in_one_frozen_request(tmp_path) -> None:
    import dataclasses

    from mfgtx.jobs import load_config
    from mfgtx.kinds import FitSetup

    path = tmp_path / "job.yaml"
    path.write_text(
        "forecast:\n  horizon: 4\ntrain:\n  ensemble:\n    members: 3\n"
        "calibration:\n  cost_ratio: 7\nsplit:\n  gap: 2\n",
        encoding="utf-8",
    )
    job = load_config(path)
    on_step = print
    setup = FitSetup(TrainConfig(epochs=2), run_key={"k": 1}, on_step=on_step, judge=False)
    request = FORECAST.fit_request(job, setup)
    assert isinstance(request, FitRequest)
    assert request.section is job.forecast and request.plan is job.split
    assert (request.train, request.run_key, request.on_step, request.judge) == (
        setup.train, {"k": 1}, on_step, False,
    )  # fmt: skip
    assert (request.cost_ratio, request.members, request.regimes) == (7.0, 3, None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.members = 1  # type: ignore[misc]
