"""The forecast and defect pages find bundles by their registered model class.

Stand-in classes under test-only names play the CausalForecaster and DefectViT, so the
dispatch is tested now; wiring the real models in replaces ``forecast_band``/``classify``.
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


def test_forecast_page_uses_a_bundle_of_the_forecaster_class(app_env, stand_in_dir, monkeypatch):
    monkeypatch.setattr(_common, "FORECAST_CLASS", "tests.app.StandIn")
    at = _app("pages/forecast.py")
    _clean(at)
    assert at.selectbox(key="forecast_bundle").value == "stand_in"
    assert not any("No forecaster model bundle" in t for t in _texts(at.info))
    assert any("not wired into the dashboard yet" in t for t in _texts(at.warning))
    assert _specs(at), "the history is still drawn"


def test_defect_page_uses_a_bundle_of_the_defect_class(app_env, stand_in_dir, monkeypatch):
    monkeypatch.setattr(_common, "DEFECT_CLASS", "tests.app.StandIn")
    at = _app("pages/defects.py")
    _clean(at)
    assert at.selectbox(key="defect_bundle").value == "stand_in"
    at.file_uploader(key="defect_uploads").set_value([("a.png", _png(), "image/png")]).run()
    _clean(at)
    assert any(t.startswith("a.png:") for t in _texts(at.success))
    assert any("not wired into the dashboard yet" in t for t in _texts(at.warning))
