"""From a job's ``data``/``windows``/``split`` sections to audited, split windows."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from mfgtx.data import (
    ColumnMap,
    DataError,
    DataWarning,
    SensorScaler,
    SensorTable,
    Windows,
    make_windows,
    read_table,
)
from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.sources import (
    UngroupedLotsError,
    add_segments,
    describe,
    iter_lot_frames,
    prepare,
    read_frame,
    without_position,
)
from mfgtx.split import AuditReport, SplitSets, audit

__all__ = [
    "TIME_WORDS",
    "Prepared",
    "last_per_lot",
    "load_forecast_windows",
    "load_windows",
    "split_windows",
]

#: A table's time axis (:attr:`~mfgtx.data.SensorTable.time_kind`) in words.
TIME_WORDS = {
    "utc": "timestamps with a zone offset (e.g. +00:00)",
    "naive": "timestamps without a zone offset",
    "number": "numbers as times (cycles or seconds)",
}

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """Windows of a job's labelled data, split and audited.

    Attributes:
        windows: every window.
        sets: the split (train / val / test / purged).
        scaler: fitted on the training windows only.
        report: the split audit (passed, or :func:`split_windows` raised).
        val, test: the validation and test windows the model is judged on (every window, or
            each lot's last one with ``split.evaluate_on: last_per_lot``).
    """

    windows: Windows
    sets: SplitSets
    scaler: SensorScaler
    report: AuditReport
    val: np.ndarray
    test: np.ndarray


def last_per_lot(windows: Windows, idx: np.ndarray) -> np.ndarray:
    """The last window of each lot among ``idx`` (windows of a lot are in time order)."""
    lots = windows.lot[idx]
    return np.array([idx[np.flatnonzero(lots == lot)[-1]] for lot in pd.unique(lots)], np.int64)


def windows_by_chunk(
    config: JobConfig, cols: ColumnMap, cut: Callable[[SensorTable], Windows], need: int
) -> tuple[Windows, ColumnMap]:
    """Windows of ``config.data``, read lot-complete ``source.chunk_rows`` rows at a time.

    Each chunk is joined, validated (:func:`~mfgtx.data.read_table`) and windowed with
    ``cut``, and only its windows are kept (float32 sensor values, not the text of the
    export), so an input larger than memory can train as long as its windows fit. An input
    whose lots do not come together cannot be read that way: a warning, then it is read
    whole. ``need``: rows a lot needs for one window (window + horizon); a chunk whose lots
    are all shorter gives none (with ``windows.on_short: skip``).
    """
    data = config.data
    assert data is not None
    label_frame = None
    if data.labels is not None:
        label_frame = read_frame(data.labels.source)
    try:
        return _windows_of_chunks(
            config,
            cols,
            cut,
            iter_lot_frames(data.source, cols.lot, cols.time, segment=data.segment),
            label_frame,
            need,
        )
    except UngroupedLotsError as e:
        log.warning("%s; reading the whole input at once instead", e)
        whole = read_frame(data.source)
        if data.segment is not None:
            whole = add_segments(whole, cols.lot, cols.time, data.segment, describe(data.source))
        return _windows_of_chunks(config, cols, cut, [whole], label_frame, need)


def _windows_of_chunks(
    config: JobConfig,
    cols: ColumnMap,
    cut: Callable[[SensorTable], Windows],
    chunks: Iterable[pd.DataFrame],
    label_frame: pd.DataFrame | None,
    need: int,
) -> tuple[Windows, ColumnMap]:
    data = config.data
    assert data is not None
    parts: list[Windows] = []
    columns: ColumnMap | None = None
    first_kind: tuple[str, str] | None = None
    for chunk in chunks:
        frame = without_position(prepare(chunk, data, label_frame=label_frame))
        table = read_table(frame, cols)
        if columns is not None and table.columns.sensors != columns.sensors:
            raise DataError(
                f"{describe(data.source)}: the sensors differ between chunks "
                f"({list(columns.sensors or ())} vs {list(table.columns.sensors or ())}); "
                "list them in data.columns.sensors"
            )
        columns = table.columns
        if first_kind is None:
            first_kind = (table.time_kind, table.lots[0])
        elif table.time_kind != first_kind[0]:
            raise DataError(
                f"{describe(data.source)}: lot {table.lots[0]} has "
                f"{TIME_WORDS[table.time_kind]}, but lot {first_kind[1]} has "
                f"{TIME_WORDS[first_kind[0]]}; export every time the same way",
                column=cols.time,
                lot=table.lots[0],
            )
        lengths = {lot: b - a for lot, (a, b) in table.lot_bounds().items()}
        if config.windows.on_short == "skip" and max(lengths.values(), default=0) < need:
            short = [f"{lot} ({n} rows)" for lot, n in lengths.items()]
            warnings.warn(
                f"{len(short)} lot(s) shorter than window + horizon = {need} rows: "
                f"{', '.join(short[:10])}{' ...' if len(short) > 10 else ''}; left out",
                DataWarning,
                stacklevel=2,
            )
            continue
        windows = cut(table)
        if len(windows):
            parts.append(windows)
    if columns is None:
        raise DataError(f"{describe(data.source)}: no rows")
    if not parts:
        w = config.windows
        what = "window" if need == w.window else "window + horizon"
        if w.min_rows is not None and need == w.min_rows:
            what = "windows.min_rows"
        raise ConfigError(f"{config.source_file}: windows.window: no lot has {need} rows ({what})")
    return Windows.concat(parts), columns


def load_windows(config: JobConfig) -> tuple[Windows, ColumnMap]:
    """Read (in lot-complete chunks), join, validate and window the labelled data of
    ``config``."""
    config.require("data")
    data = config.data
    if data is None:  # require() raised already; this narrows the type
        raise ConfigError(f"{config.source_file}: data: required")
    if not data.columns.targets:
        raise ConfigError(f"{config.source_file}: data.columns.targets: name the target(s)")
    w = config.windows
    windows, columns = windows_by_chunk(
        config,
        data.columns.column_map(),
        # include_last: a lot's last window ends at its last row, so ``evaluate_on:
        # last_per_lot`` judges the prediction made when the lot ends, whatever the stride
        lambda table: make_windows(
            table,
            w.window,
            stride=w.step,
            on_short=w.on_short,
            min_rows=w.min_rows,
            include_last=True,
        ),
        w.need,
    )
    log.info(
        "%d windows of %d rows from %d lots (%s)",
        len(windows),
        windows.window,
        len(windows.lots),
        data.source.path or data.source.table or "query",
    )
    return windows, columns


def load_forecast_windows(config: JobConfig) -> tuple[Windows, ColumnMap, tuple[str, ...]]:
    """Read and window ``config``'s data for ``train forecast``: ``windows.window`` rows of
    context, then ``forecast.horizon`` rows of the forecast sensors as the label.

    Returns:
        ``(windows, columns, covariates)``: ``covariates`` are the sensors that are not
        forecast (given to the model as past-observed inputs).
    """
    config.require("data", "forecast")
    data, fc = config.data, config.forecast
    if data is None or fc is None:  # require() raised already; this narrows the type
        raise ConfigError(f"{config.source_file}: data and forecast: required")
    w = config.windows
    if w.min_rows is not None:
        raise ConfigError(
            f"{config.source_file}: windows.min_rows: forecasts need every context row of "
            f"their lot; leave min_rows out of a forecast job (found {w.min_rows})"
        )

    def cut(table: SensorTable) -> Windows:
        sensors = tuple(table.columns.sensors or ())
        unknown = [t for t in fc.targets if t not in sensors]
        if unknown:
            raise ConfigError(
                f"{config.source_file}: forecast.targets: {unknown} are not sensors of the "
                f"data (sensors: {list(sensors)})"
            )
        return make_windows(
            table,
            w.window,
            stride=w.step,
            horizon=fc.horizon,
            forecast=tuple(fc.targets) or sensors,
            on_short=w.on_short,
            include_last=True,
        )

    windows, columns = windows_by_chunk(
        config, data.columns.column_map(targets=False), cut, w.window + fc.horizon
    )
    sensors = tuple(columns.sensors or ())
    targets = tuple(windows.targets)
    log.info(
        "%d forecast windows (%d + %d rows) from %d lots",
        len(windows),
        windows.window,
        fc.horizon,
        len(windows.lots),
    )
    return windows, columns, tuple(s for s in sensors if s not in targets)


def split_windows(config: JobConfig, windows: Windows, *, strict: bool = True) -> Prepared:
    """Split by lot and time, fit the scaler on the training windows, audit the split.

    Raises:
        LeakageError: the audit failed (``strict``).
    """
    try:
        (sets,) = config.split.splitter().split_sets(windows)
    except DataError:
        raise
    except ValueError as e:  # sizes or gap that leave a set empty: the job file must change
        raise ConfigError(f"{config.source_file}: split: {e}") from e
    scaler = SensorScaler.fit(windows, sets.train)
    report = audit(windows, sets, scaler=scaler, strict=strict)
    last = config.split.evaluate_on == "last_per_lot"
    val = last_per_lot(windows, sets.val) if last else np.asarray(sets.val)
    test = last_per_lot(windows, sets.test) if last else np.asarray(sets.test)
    return Prepared(windows, sets, scaler, report, val, test)
