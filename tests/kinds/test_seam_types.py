"""The checks that stand where the type checker found a value that may be missing: each
raises a clear error instead of failing on ``None`` further in."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from mfgtx.artifacts import BundleError
from mfgtx.data import RegimePlan
from mfgtx.kinds import FORECAST, SENSOR, ForecastSection, SensorPredictor, Trained
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
            section=ForecastSection(),
            windowing=None,
            plan=SplitPlan(),
            train=TrainConfig(),
            regimes=RegimePlan(column="grade"),
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
