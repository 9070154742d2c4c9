"""mfgtx.models: the application models built on :mod:`mfgtx.nn`."""

from mfgtx.models.forecast_backtest import (
    FoldScore,
    ForecastWindows,
    interval_coverage,
    rolling_backtest,
)
from mfgtx.models.forecaster import CausalForecaster, ForecasterConfig
from mfgtx.models.sensor_encoder import MaskedPretraining, SensorEncoder, SensorEncoderConfig

__all__ = [
    "CausalForecaster",
    "FoldScore",
    "ForecastWindows",
    "ForecasterConfig",
    "MaskedPretraining",
    "SensorEncoder",
    "SensorEncoderConfig",
    "interval_coverage",
    "rolling_backtest",
]
