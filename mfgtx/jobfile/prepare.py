"""From a job's ``data`` and ``windows`` sections to the windows a kind trains or is judged on.

:func:`read_windows` reads the source lot-complete in chunks (joining labels, deriving
``defect`` and label times as ``data`` says), validates each chunk and keeps only its
windows, so an input larger than memory can train as long as its windows fit. The kind
says how a table is cut (:meth:`~mfgtx.kinds.Kind.cut`) and whether its data needs targets.
:func:`split` splits them by lot and time with the job's ``split`` plan and audits the split.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
from typing import Any

import pandas as pd

from mfgtx.data import (
    TIME_KIND_WORDS,
    ColumnMap,
    DataError,
    DataWarning,
    SensorTable,
    Windows,
    read_table,
)
from mfgtx.jobfile.config import ConfigError, JobConfig
from mfgtx.jobfile.sources import (
    UngroupedLotsError,
    add_segments,
    describe,
    iter_lot_frames,
    prepare,
    read_frame,
)
from mfgtx.kinds import Kind, SplitWindows, WindowKind, split_windows

__all__ = ["read_windows", "split", "windows_by_chunk"]

log = logging.getLogger(__name__)


def windows_by_chunk(
    config: JobConfig, cols: ColumnMap, cut: Callable[[SensorTable], Windows], need: int
) -> tuple[Windows, ColumnMap]:
    """Windows of ``config.data``, read lot-complete ``source.chunk_rows`` rows at a time.

    Each chunk is joined, validated (:func:`~mfgtx.data.read_table`) and windowed with
    ``cut``, and only its windows are kept (float32 sensor values, not the text of the
    export). An input whose lots do not come together cannot be read that way: a warning,
    then it is read whole. ``need``: rows a lot needs for one window; a chunk whose lots are
    all shorter gives none (with ``windows.on_short: skip``).
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
            iter_lot_frames(
                data.source, cols.lot, cols.time, segment=data.segment, time_format=cols.time_format
            ),
            label_frame,
            need,
        )
    except UngroupedLotsError as e:
        log.warning("%s; reading the whole input at once instead", e)
        whole = read_frame(data.source)
        if data.segment is not None:
            whole = add_segments(whole, cols.lot, cols.time, data.segment, describe(data.source),
                                 cols.time_format)  # fmt: skip
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
        frame = prepare(chunk, data, label_frame=label_frame, words=config.labels)  # _file, _line
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
                f"{TIME_KIND_WORDS[table.time_kind]}, but lot {first_kind[1]} has "
                f"{TIME_KIND_WORDS[first_kind[0]]}; export every time the same way",
                column=cols.time,
                lot=table.lots[0],
            )
        lengths = {lot: b - a for lot, (a, b) in table.lot_bounds().items()}
        if config.windows.on_short == "skip" and max(lengths.values(), default=0) < need:
            short = [f"{lot} ({n} rows)" for lot, n in lengths.items()]
            warnings.warn(
                f"{len(short)} lot(s) shorter than the {need} rows a window needs: "
                f"{', '.join(short[:10])}{' ...' if len(short) > 10 else ''}; left out",
                DataWarning,
                stacklevel=2,
            )
            continue
        try:
            windows = cut(table)
        except ValueError as e:
            if isinstance(e, DataError):
                raise
            raise ConfigError(f"{config.source_file}: {e}") from e
        if len(windows):
            parts.append(windows)
    if columns is None:
        raise DataError(f"{describe(data.source)}: no rows")
    if not parts:
        w = config.windows
        what = "windows.min_rows" if w.min_rows is not None and need == w.min_rows else "window"
        if need > w.window:
            what = "window + forecast.horizon"
        raise ConfigError(f"{config.source_file}: windows.window: no lot has {need} rows ({what})")
    return Windows.concat(parts), columns


def read_windows(config: JobConfig, kind: Kind[Any, Any, Any]) -> tuple[Windows, ColumnMap]:
    """Read (in lot-complete chunks), join, validate and window the job's data as ``kind``
    trains on it.

    Raises:
        ConfigError: a missing section, no targets for a kind that needs them, or settings
            that do not fit the data.
        DataError: the data cannot be read or a value is bad.
    """
    config.require("data")
    data = config.data
    if data is None:  # require() raised already; this narrows the type
        raise ConfigError(f"{config.source_file}: data: required")
    if not isinstance(kind, WindowKind):
        raise ConfigError(f"{config.source_file}: a {kind.name} model does not read sensor rows")
    section = kind.section(config)
    labelled = kind.labelled
    if labelled and not data.columns.targets:
        raise ConfigError(f"{config.source_file}: data.columns.targets: name the target(s)")
    cols = data.column_map(targets=labelled)  # with the regime columns
    if data.regimes is not None and not kind.takes_regimes:
        raise ConfigError(
            f"{config.source_file}: data.regimes: operating regimes are for sensor jobs "
            f"(mfgtx train sensor), not {kind.name}"
        )
    windows, columns = windows_by_chunk(
        config,
        cols,
        kind.cut(config.windows, section),
        kind.need(config.windows, section),
    )
    log.info(
        "%d windows of %d rows from %d lots (%s)",
        len(windows),
        windows.window,
        len(windows.lots),
        describe(data.source),
    )
    return windows, columns


def split(config: JobConfig, windows: Windows, *, strict: bool = True) -> SplitWindows:
    """:func:`~mfgtx.kinds.split_windows` with the job's ``split`` plan.

    Raises:
        LeakageError: the audit failed (``strict``).
        ConfigError: sizes or a gap that leave a set empty.
    """
    try:
        regimes = config.data.regimes if config.data is not None else None
        return split_windows(windows, config.split, strict=strict, regimes=regimes)
    except DataError:
        raise
    except ValueError as e:
        from mfgtx.split import LeakageError

        if isinstance(e, LeakageError):
            raise
        raise ConfigError(f"{config.source_file}: split: {e}") from e
