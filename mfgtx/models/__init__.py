"""mfgtx.models: the application models built on :mod:`mfgtx.nn`."""

from mfgtx.models.forecaster import CausalForecaster, ForecasterConfig
from mfgtx.models.sensor_encoder import MaskedPretraining, SensorEncoder, SensorEncoderConfig

__all__ = [
    "CausalForecaster",
    "ForecasterConfig",
    "MaskedPretraining",
    "SensorEncoder",
    "SensorEncoderConfig",
]
