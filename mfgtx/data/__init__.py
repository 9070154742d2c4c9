"""mfgtx.data: reading plant files, sensor tables, validation, windowing per lot, and
train-only scaling.

Typical use::

    table = read_table("sensors.csv", ColumnMap(lot="lot", time="timestamp", targets="rul"))
    windows = make_windows(table, window=64, stride=8)

Files are read by :mod:`mfgtx.data.io` (CSV dialects, compressed CSV, Parquet batches, in
bounded memory, each row with its file and line): ``io.file_chunks(path)`` iterates a
file's chunks, ``io.read_csv_bytes(data, name)`` reads an upload whole. How a plant writes
its files (CSV dialect, time format and zone, pass/fail words) is one
:class:`~mfgtx.data.read_options.ReadOptions`, saved in a bundle's input spec.
"""

from mfgtx.data.batches import evaluation_batches, evaluation_loader
from mfgtx.data.columns import ColumnMap
from mfgtx.data.dataset import WindowDataset
from mfgtx.data.errors import DataError, DataWarning
from mfgtx.data.forecast_dataset import ForecastWindows
from mfgtx.data.plan import Windowing
from mfgtx.data.problems import Problems
from mfgtx.data.read_options import LabelWords, ReadOptions
from mfgtx.data.regimes import RegimePlan, Regimes
from mfgtx.data.scaling import SensorScaler
from mfgtx.data.table import TIME_KIND_WORDS, SensorTable, read_table, read_times
from mfgtx.data.windowing import make_windows
from mfgtx.data.windows import Windows

__all__ = [
    "TIME_KIND_WORDS",
    "ColumnMap",
    "DataError",
    "DataWarning",
    "ForecastWindows",
    "LabelWords",
    "Problems",
    "ReadOptions",
    "RegimePlan",
    "Regimes",
    "SensorScaler",
    "SensorTable",
    "WindowDataset",
    "Windowing",
    "Windows",
    "evaluation_batches",
    "evaluation_loader",
    "make_windows",
    "read_table",
    "read_times",
]
