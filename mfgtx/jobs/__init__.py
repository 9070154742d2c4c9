"""mfgtx.jobs: batch jobs behind the ``mfgtx`` command (train, evaluate, score, audit).

A job is described by one YAML file read into frozen, validated dataclasses
(:func:`load_config`); the command line only parses arguments, calls these functions and
prints their summaries. Inputs come from CSV/Parquet files or folders and SQL databases
(:mod:`mfgtx.jobs.sources`); scores go to Parquet/CSV files or SQL tables, replaced by key
(:mod:`mfgtx.jobs.sinks`).
"""

from mfgtx.jobs._lock import LockedError, output_lock
from mfgtx.jobs.config import ConfigError, JobConfig, load_config
from mfgtx.jobs.train import TRAINERS, NotAvailableError, TrainOutcome, train

__all__ = [
    "TRAINERS",
    "ConfigError",
    "JobConfig",
    "LockedError",
    "NotAvailableError",
    "TrainOutcome",
    "load_config",
    "output_lock",
    "train",
]
