"""mfgtx.models: the application models built on :mod:`mfgtx.nn`."""

from mfgtx.models.ensemble import (
    ForecasterEnsemble,
    ForecasterEnsembleConfig,
    SensorEncoderEnsemble,
    SensorEncoderEnsembleConfig,
)
from mfgtx.models.forecaster import CausalForecaster, ForecasterConfig
from mfgtx.models.loss import ClassLoss
from mfgtx.models.sensor_encoder import MaskedPretraining, SensorEncoder, SensorEncoderConfig
from mfgtx.models.vit import (
    DefectSizeGuard,
    DefectSizeWarning,
    DefectViT,
    ViTConfig,
    resized_defect_px,
)

__all__ = [
    "CausalForecaster",
    "ClassLoss",
    "DefectSizeGuard",
    "DefectSizeWarning",
    "DefectViT",
    "ForecasterConfig",
    "ForecasterEnsemble",
    "ForecasterEnsembleConfig",
    "MaskedPretraining",
    "SensorEncoder",
    "SensorEncoderConfig",
    "SensorEncoderEnsemble",
    "SensorEncoderEnsembleConfig",
    "ViTConfig",
    "resized_defect_px",
]
