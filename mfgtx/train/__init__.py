"""mfgtx.train: one training engine for every mfgtx model."""

from mfgtx.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mfgtx.train.config import TrainConfig
from mfgtx.train.distributed import DistEnv, ShardSampler, end_distributed
from mfgtx.train.loop import FitResult, NonFiniteLossError, Trainable, evaluate, fit, predict
from mfgtx.train.precision import cpu_has_fast_bf16, resolve_precision

__all__ = [
    "CheckpointError",
    "DistEnv",
    "FitResult",
    "NonFiniteLossError",
    "ShardSampler",
    "TrainConfig",
    "Trainable",
    "cpu_has_fast_bf16",
    "end_distributed",
    "evaluate",
    "fit",
    "load_checkpoint",
    "predict",
    "resolve_precision",
    "save_checkpoint",
]
