"""The forecast and defect pages run real (untrained) CausalForecaster and DefectViT bundles."""

from __future__ import annotations

import sys

import pytest

from tests.bundles import save

from .conftest import ROOT
from .test_dashboard import _app, _clean, _png, _specs, _texts

sys.path.insert(0, str(ROOT / "app"))


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
            dropout=0.2,
        )
    )
    cols = ColumnMap(lot="lot", time="timestamp", keys="line", sensors=sensors)
    save(tmp_path / "forecaster", model, spec=_forecast_spec(cols, sensors, ()))
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    return tmp_path


def _forecast_spec(cols, targets, covariates):
    from mfgtx.data import Windowing
    from mfgtx.kinds import ForecastSpec

    return ForecastSpec(
        columns=cols, windowing=Windowing(window=32, stride=8), horizon=16,
        targets=tuple(targets), covariates=tuple(covariates), time_kind="utc", scaler=None,
    )  # fmt: skip


def test_forecast_page_draws_the_forecast_and_its_band(app_env, forecaster_dir):
    at = _app("views/forecast.py")
    _clean(at)
    assert at.selectbox(key="forecast_bundle").value == "forecaster"
    assert not any("No forecaster model bundle" in t for t in _texts(at.info))
    assert not at.warning, [w.value for w in at.warning]
    spec = _specs(at)[0]
    names = [trace.get("name") for trace in spec["data"]]
    assert names == [
        "history", "upper quantile", "quantile band", "baseline: repeating the last reading",
        "forecast",
    ]  # fmt: skip
    at.select_slider(key="forecast_horizon").set_value(10).run()
    _clean(at)
    forecast = _specs(at)[0]["data"][-1]
    assert len(forecast["x"]) == 10  # 10 minutes of 1-minute readings


def test_forecast_page_with_covariates_forecasts_only_its_targets(app_env, tmp_path, monkeypatch):
    """A forecaster of two sensors that reads the other two as past covariates (as
    ``mfgtx train forecast`` makes with ``forecast.targets``)."""
    import torch

    from mfgtx.data import ColumnMap
    from mfgtx.models import CausalForecaster, ForecasterConfig

    torch.manual_seed(0)
    sensors = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
    model = CausalForecaster(
        ForecasterConfig(n_channels=2, context_length=32, horizon=16, patch_len=8, d_model=16,
                         n_heads=2, n_layers=1, d_ff=32, n_past_covariates=2,
                         dropout=0.2, quantiles=())
    )  # fmt: skip
    cols = ColumnMap(lot="lot", time="timestamp", keys="line", sensors=sensors)
    spec = _forecast_spec(cols, sensors[:2], sensors[2:])
    save(tmp_path / "cov", model, spec=spec)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    at = _app("views/forecast.py")
    _clean(at)
    assert not at.warning, [w.value for w in at.warning]
    assert [t.get("name") for t in _specs(at)[0]["data"]][-1] == "forecast"
    # only the forecaster's targets are offered: the covariates are read, not forecast
    assert at.multiselect(key="forecast_sensors").options == ["temperature_c", "pressure_bar"]
    at.multiselect(key="forecast_sensors").set_value(["pressure_bar"]).run()
    _clean(at)
    assert _specs(at)[0]["layout"]["title"]["text"] == "pressure_bar"


@pytest.fixture
def defect_dir(tmp_path, monkeypatch):
    """A real (untrained) DefectViT bundle with a calibration and a defect threshold."""
    import torch

    from mfgtx.calibration import Calibration, TemperatureScaler, ThresholdChoice
    from mfgtx.models import DefectViT, ViTConfig

    torch.manual_seed(0)
    model = DefectViT(
        ViTConfig(image_size=32, patch_size=8, num_classes=3, d_model=16, n_heads=2,
                  n_layers=1, d_ff=32, dropout=0.0, stem="linear")
    )  # fmt: skip
    choice = ThresholdChoice(0.0, cost_missed_defect=5.0, cost_false_alarm=1.0, tp=1, fp=1,
                             tn=1, fn=1)  # fmt: skip
    cal = Calibration(TemperatureScaler(1.5), choice, good_class=1)
    from mfgtx.kinds import VitSpec

    spec = VitSpec(image_size=32, mode="L", min_size=8, mean=0.5, std=0.5,
                   class_names=("crack", "none", "pit"), good_class="none")  # fmt: skip
    save(tmp_path / "defects", model, spec=spec, calibration=cal)
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path))
    return tmp_path


def test_defect_page_classifies_with_the_map_notice_and_deletion_test(app_env, defect_dir):
    at = _app("views/defects.py")
    _clean(at)
    assert at.selectbox(key="defect_bundle").value == "defects"
    at.file_uploader(key="defect_uploads").set_value([("a.png", _png(), "image/png")]).run()
    _clean(at)
    assert any(t.startswith("a.png:") for t in _texts(at.success))
    text = " ".join(m.value for m in at.markdown)
    assert "P(defect) **" in text and "decision: **flagged as defective**" in text  # at 0
    assert "the threshold 0.0%" in text
    specs = _specs(at)
    kinds = [spec["layout"].get("meta", {}).get("kind") for spec in specs]
    assert kinds.count("non-causal diagnostic") == 2  # the overlay and the deletion test
    assert any("Deletion test" in spec["layout"]["title"]["text"] for spec in specs)
    assert any("Attention rollout" in spec["layout"]["title"]["text"] for spec in specs)
    at.radio(key="defect_map").set_value("layer").run()
    _clean(at)
    titles = [spec["layout"]["title"]["text"] for spec in _specs(at)]
    assert any(t.startswith("Last layer attention (heads averaged)") for t in titles), titles
