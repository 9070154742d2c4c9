"""From a job's ``data`` and ``windows`` sections to the windows a kind trains or is judged on.

:func:`read_windows` reads the source lot-complete in chunks (joining labels, deriving
``defect`` and label times as ``data`` says), validates each chunk and keeps only its
windows, so an input larger than memory can train as long as its windows fit. A lot with a
bad value, time or label is left out (:class:`~mfgtx.data.Problems`, the collecting mode of
the validation) with an errors row naming its file, line and column, and a
:class:`~mfgtx.data.DataWarning` saying how many; a problem of the whole input (a missing
column, a name given twice, a file that cannot be read) still stops the job. The kind
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
    Problems,
    SensorTable,
    Windows,
    read_table,
)
from mfgtx.data.table import Where, pass_fail
from mfgtx.jobfile.config import ConfigError, DataSection, JobConfig
from mfgtx.jobfile.sources import (
    UngroupedLotsError,
    add_segments,
    describe,
    iter_lot_frames,
    prepare,
    read_frame,
)
from mfgtx.kinds import Kind, SplitWindows, WindowKind, split_windows

__all__ = ["checked_labels", "read_windows", "split", "windows_by_chunk"]

log = logging.getLogger(__name__)


def windows_by_chunk(
    config: JobConfig,
    cols: ColumnMap,
    cut: Callable[[SensorTable], Windows],
    need: int,
    left_out: list[dict[str, Any]] | None = None,
    lot_keys: dict[str, tuple[str, ...] | None] | None = None,
) -> tuple[Windows, ColumnMap]:
    """Windows of ``config.data``, read lot-complete ``source.chunk_rows`` rows at a time.

    Each chunk is joined, validated (:func:`~mfgtx.data.read_table`) and windowed with
    ``cut``, and only its windows are kept (float32 sensor values, not the text of the
    export). An input whose lots do not come together cannot be read that way: a warning,
    then it is read whole. ``need``: rows a lot needs for one window; a chunk whose lots are
    all shorter gives none (with ``windows.on_short: skip``). A lot with a bad value is left
    out (see the module docstring); ``left_out`` receives its errors rows.
    """
    data = config.data
    assert data is not None
    label_frame = None
    if data.labels is not None:
        label_frame = read_frame(data.labels.source)
    problems = Problems()
    try:
        return _windows_of_chunks(
            config,
            cols,
            cut,
            iter_lot_frames(
                data.source, cols.lot, cols.time, segment=data.segment, time_format=cols.time_format
            ),
            checked_labels(label_frame, data, problems),
            need,
            problems,
            left_out,
            lot_keys,
        )
    except UngroupedLotsError as e:
        log.warning("%s; reading the whole input at once instead", e)
        whole = read_frame(data.source)
        if data.segment is not None:
            whole = add_segments(whole, cols.lot, cols.time, data.segment, describe(data.source),
                                 cols.time_format)  # fmt: skip
        problems = Problems()
        labels = checked_labels(label_frame, data, problems)
        return _windows_of_chunks(
            config, cols, cut, [whole], labels, need, problems, left_out, lot_keys
        )


def checked_labels(
    labels: pd.DataFrame | None, data: DataSection, problems: Problems | None
) -> pd.DataFrame | None:
    """The label table with its pass/fail column (``data.pass_column``) read as 1/0, once
    for the whole job: a value not understood names the label file's line, and with
    ``problems`` is listed there (its lot left out) instead of raised."""
    column = data.pass_column
    if labels is None or data.labels is None or column is None or column not in labels:
        return labels
    on = data.labels.on
    lots = labels[on].astype(str) if on in labels.columns else pd.Series("", labels.index)
    out = labels.copy()
    out[column] = pass_fail(labels[column], column, Where.of(labels), lots, problems)
    return out


def _windows_of_chunks(
    config: JobConfig,
    cols: ColumnMap,
    cut: Callable[[SensorTable], Windows],
    chunks: Iterable[pd.DataFrame],
    label_frame: pd.DataFrame | None,
    need: int,
    problems: Problems,
    left_out: list[dict[str, Any]] | None,
    lot_keys: dict[str, tuple[str, ...] | None] | None = None,
) -> tuple[Windows, ColumnMap]:
    data = config.data
    assert data is not None
    parts: list[Windows] = []
    columns: ColumnMap | None = None
    first_kind: tuple[str, str] | None = None
    for chunk in chunks:
        # _file, _line: for messages; a lot with a bad value is listed in problems, left out
        frame = prepare(
            chunk, data, label_frame=label_frame, problems=problems, words=config.labels
        )
        table = read_table(frame, cols, problems=problems)
        if not len(table.frame):
            continue
        if lot_keys is not None:
            lot_keys.update(_keys_of_lots(table))
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
    _report_left_out(describe(data.source), problems, left_out, kept=columns is not None)
    if columns is None:
        raise DataError(f"{describe(data.source)}: no rows")
    if not parts:
        w = config.windows
        what = "windows.min_rows" if w.min_rows is not None and need == w.min_rows else "window"
        if need > w.window:
            what = "window + forecast.horizon"
        raise ConfigError(f"{config.source_file}: windows.window: no lot has {need} rows ({what})")
    return Windows.concat(parts), columns


def _keys_of_lots(table: SensorTable) -> dict[str, tuple[str, ...] | None]:
    """Each lot's values of the key columns as text (``None``: one missing; keys are
    constant per lot, :func:`~mfgtx.data.read_table` checked)."""
    keys = [k for k in table.columns.keys if k in table.frame.columns]
    if not keys or len(keys) != len(table.columns.keys):
        return {}
    first = table.frame.groupby(table.columns.lot, sort=False)[keys].first()
    return {
        str(lot): None if row.isna().any() else tuple(str(v) for v in row)
        for lot, row in first.iterrows()
    }


def _report_left_out(
    source: str, problems: Problems, left_out: list[dict[str, Any]] | None, *, kept: bool
) -> None:
    """Warn of the lots ``problems`` left out (and hand their rows to ``left_out``); with no
    lot ``kept``, raise naming the first reasons."""
    if not len(problems):
        return
    reasons = [str(e) for e in problems.errors[:3]]
    more = f" (and {len(problems) - 3} more problems)" if len(problems) > 3 else ""
    if not kept:
        raise DataError(
            f"{source}: every lot has a problem, none is left: {'; '.join(reasons)}{more}; "
            "run mfgtx check JOB to list them all",
            lot=problems.errors[0].lot,
            column=problems.errors[0].column,
            file=problems.errors[0].file,
            line=problems.errors[0].line,
        )
    if left_out is not None:
        left_out.extend(problems.rows())
    rows = problems.rows_without_lot
    without = f" and {rows} row(s) without a lot id" if rows else ""
    warnings.warn(
        f"{source}: {len(problems.lots)} lot(s){without} left out for bad values (first: "
        f"{reasons[0]}); mfgtx train lists them in <bundle>.errors.csv, mfgtx check JOB "
        "lists every problem",
        DataWarning,
        stacklevel=3,
    )


def read_windows(
    config: JobConfig,
    kind: Kind[Any, Any, Any],
    *,
    left_out: list[dict[str, Any]] | None = None,
    lot_keys: dict[str, tuple[str, ...] | None] | None = None,
) -> tuple[Windows, ColumnMap]:
    """Read (in lot-complete chunks), join, validate and window the job's data as ``kind``
    trains on it. A lot with a bad value, time or label is left out with a
    :class:`~mfgtx.data.DataWarning`; ``left_out`` receives its errors rows (``lot``,
    ``file``, ``line``, ``column``, ``reason``), ``lot_keys`` each lot's values of the key
    columns (``data.columns.keys``, as text; ``None``: one missing).

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
        left_out,
        lot_keys,
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
