"""mfgtx.jobs: batch jobs behind the ``mfgtx`` command (train, evaluate, score, audit).

A job is described by one YAML file read into frozen, validated dataclasses
(:func:`load_config`, from :mod:`mfgtx.jobfile`, re-exported here); the command line only
parses arguments, calls these functions and prints their summaries. Inputs are read by
:mod:`mfgtx.jobfile` (files through :mod:`mfgtx.data.io`, SQL databases read-only, lot by
lot); this package runs the jobs and writes what they produce: bundles, scores to
Parquet/CSV files or SQL tables, replaced by key (:mod:`mfgtx.jobs.sinks`).
"""

from mfgtx.jobfile import (
    FILE,
    LINE,
    ConfigError,
    JobConfig,
    SourceSection,
    csv_delimiter,
    load_config,
    read_csv_bytes,
    read_windows,
    recorded_job,
    without_position,
)
from mfgtx.jobs._lock import LockedError, output_lock
from mfgtx.jobs.evaluate import audit_split, bench, evaluate
from mfgtx.jobs.score import score
from mfgtx.jobs.train import TrainOutcome, train

__all__ = [
    "FILE",
    "LINE",
    "ConfigError",
    "JobConfig",
    "LockedError",
    "SourceSection",
    "TrainOutcome",
    "audit_split",
    "bench",
    "csv_delimiter",
    "evaluate",
    "load_config",
    "output_lock",
    "read_csv_bytes",
    "read_windows",
    "recorded_job",
    "score",
    "train",
    "without_position",
]
