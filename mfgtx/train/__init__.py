"""mfgtx.train: one training engine for every mfgtx model."""

from mfgtx.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mfgtx.train.config import TrainConfig
from mfgtx.train.distributed import DistEnv, ShardSampler, end_distributed
from mfgtx.train.heap import keep_freed_memory
from mfgtx.train.loop import FitResult, NonFiniteLossError, Trainable, evaluate, fit, predict
from mfgtx.train.optimizer import build_optimizer
from mfgtx.train.precision import (
    PrecisionChoice,
    bf16_could_be_fast,
    choose_precision,
    cpu_has_fast_bf16,
    resolve_precision,
)

__all__ = [
    "CheckpointError",
    "DistEnv",
    "FitResult",
    "NonFiniteLossError",
    "PrecisionChoice",
    "ShardSampler",
    "TrainConfig",
    "Trainable",
    "bf16_could_be_fast",
    "build_optimizer",
    "choose_precision",
    "cpu_has_fast_bf16",
    "end_distributed",
    "evaluate",
    "fit",
    "keep_freed_memory",
    "load_checkpoint",
    "predict",
    "resolve_precision",
    "save_checkpoint",
]
