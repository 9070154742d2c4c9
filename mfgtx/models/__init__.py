"""mfgtx.models: the application models built on :mod:`mfgtx.nn`."""

from mfgtx.models.forecast_backtest import (
    FoldScore,
    ForecastWindows,
    interval_coverage,
    rolling_backtest,
)
from mfgtx.models.forecaster import CausalForecaster, ForecasterConfig
from mfgtx.models.sensor_encoder import MaskedPretraining, SensorEncoder, SensorEncoderConfig
from mfgtx.models.vit import DefectSizeWarning, DefectViT, ViTConfig, resized_defect_px

__all__ = [
    "CausalForecaster",
    "DefectSizeWarning",
    "DefectViT",
    "FoldScore",
    "ForecastWindows",
    "ForecasterConfig",
    "MaskedPretraining",
    "SensorEncoder",
    "SensorEncoderConfig",
    "ViTConfig",
    "interval_coverage",
    "resized_defect_px",
    "rolling_backtest",
]
