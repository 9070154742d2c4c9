"""mfgtx.models: the application models built on :mod:`mfgtx.nn`."""

from mfgtx.models.sensor_encoder import MaskedPretraining, SensorEncoder, SensorEncoderConfig

__all__ = ["MaskedPretraining", "SensorEncoder", "SensorEncoderConfig"]
