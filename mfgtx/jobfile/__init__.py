"""mfgtx.jobfile: a job file and the data it names, read; never written.

A job is described by one YAML file read into frozen, validated dataclasses
(:func:`load_config`, :mod:`mfgtx.jobfile.config`); a bundle records the job that trained it
(:func:`recorded_job`). The data the file names is read here too: CSV/Parquet files or folders
(through :mod:`mfgtx.data.io`) and SQL databases through read-only engines, lot by lot
(:mod:`mfgtx.jobfile.sources`); cut into the windows a kind trains or is judged on
(:func:`read_windows`); and the known results an evaluation compares with
(:mod:`mfgtx.jobfile.truth`). Nothing here writes a file or a table: running jobs and writing
their outputs is :mod:`mfgtx.jobs`'s, which the dashboard never imports.
"""

from mfgtx.jobfile._sql import read_engine
from mfgtx.jobfile.config import ConfigError, JobConfig, SourceSection, load_config, recorded_job
from mfgtx.jobfile.limits import Limit
from mfgtx.jobfile.prepare import read_windows, split
from mfgtx.jobfile.sources import FILE, LINE, csv_delimiter, read_csv_bytes, without_position

__all__ = [
    "FILE",
    "LINE",
    "ConfigError",
    "JobConfig",
    "Limit",
    "SourceSection",
    "csv_delimiter",
    "load_config",
    "read_csv_bytes",
    "read_engine",
    "read_windows",
    "recorded_job",
    "split",
    "without_position",
]
