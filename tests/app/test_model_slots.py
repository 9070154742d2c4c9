"""The forecast and defect pages find bundles by their registered model class.

The forecast page runs a real (untrained) CausalForecaster bundle; a stand-in class under a
test-only name plays the DefectViT until ``classify`` is wired to it.
"""

from __future__ import annotations

import dataclasses
import sys

import pytest
from torch import nn

from mfgtx.artifacts import register_model, save_bundle

from .conftest import ROOT
from .test_dashboard import _app, _clean, _png, _specs, _texts

sys.path.insert(0, str(ROOT / "app"))
import _common


@dataclasses.dataclass(frozen=True)
class StandInConfig:
    d_in: int = 2


@register_model(name="tests.app.StandIn")
class StandIn(nn.Module):
    def __init__(self, config: StandInConfig) -> None:
        super().__init__()
        self.config = config
        self.linear = nn.Linear(config.d_in, 1)


@pytest.fixture
def stand_in_dir(tmp_path, monkeypatch):
    save_bundle(tmp_path / "stand_in", StandIn(StandInConfig()))
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def forecaster_dir(tmp_path, monkeypatch):
    """A real (untrained) CausalForecaster bundle with quantiles over the four sensors."""
    import torch

    from mfgtx.data import ColumnMap
    from mfgtx.models import CausalForecaster, ForecasterConfig

    torch.manual_seed(0)
    sensors = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
    model = CausalForecaster(
        ForecasterConfig(
            n_channels=4,
            context_length=32,
            horizon=16,
            patch_len=8,
            stride=4,
            d_model=16,
            n_heads=2,
            n_layers=1,
            d_ff=32,
            quantiles=(0.1, 0.5, 0.9),
        )
    )
    cols = ColumnMap(lot="lot", time="timestamp", keys="line", sensors=sensors)
    save_bundle(tmp_path / "forecaster", model, data_schema=cols)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    return tmp_path


def test_forecast_page_draws_the_forecast_and_its_band(app_env, forecaster_dir):
    at = _app("pages/forecast.py")
    _clean(at)
    assert at.selectbox(key="forecast_bundle").value == "forecaster"
    assert not any("No forecaster model bundle" in t for t in _texts(at.info))
    assert not at.warning, [w.value for w in at.warning]
    spec = _specs(at)[0]
    names = [trace.get("name") for trace in spec["data"]]
    assert names == ["history", "upper quantile", "quantile band", "forecast"]
    at.slider(key="forecast_horizon").set_value(10).run()
    _clean(at)
    forecast = _specs(at)[0]["data"][-1]
    assert len(forecast["x"]) == 10  # 10 minutes of 1-minute readings


def test_defect_page_uses_a_bundle_of_the_defect_class(app_env, stand_in_dir, monkeypatch):
    monkeypatch.setattr(_common, "DEFECT_CLASS", "tests.app.StandIn")
    at = _app("pages/defects.py")
    _clean(at)
    assert at.selectbox(key="defect_bundle").value == "stand_in"
    at.file_uploader(key="defect_uploads").set_value([("a.png", _png(), "image/png")]).run()
    _clean(at)
    assert any(t.startswith("a.png:") for t in _texts(at.success))
    assert any("not wired into the dashboard yet" in t for t in _texts(at.warning))
