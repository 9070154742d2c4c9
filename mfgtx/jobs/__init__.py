"""mfgtx.jobs: batch jobs behind the ``mfgtx`` command (train, evaluate, score, audit).

A job is described by one YAML file read into frozen, validated dataclasses
(:func:`load_config`); the command line only parses arguments, calls these functions and
prints their summaries. Inputs come from CSV/Parquet files or folders (read by
:mod:`mfgtx.data.io`) and SQL databases, lot by lot (:mod:`mfgtx.jobs.sources`); scores go
to Parquet/CSV files or SQL tables, replaced by key (:mod:`mfgtx.jobs.sinks`).
"""

from mfgtx.jobs._lock import LockedError, output_lock
from mfgtx.jobs.config import ConfigError, JobConfig, SourceSection, load_config, recorded_job
from mfgtx.jobs.evaluate import audit_split, bench, evaluate
from mfgtx.jobs.prepare import read_windows
from mfgtx.jobs.score import score
from mfgtx.jobs.sources import FILE, LINE, csv_delimiter, read_csv_bytes, without_position
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
