"""Cutting a sensor table into windows, lot by lot.

Shape legend: ``N`` windows, ``T`` window length, ``H`` horizon, ``K`` target columns.

Within each lot, window ``j`` covers rows ``s .. s+T-1`` with ``s = j * stride``; with a
forecast horizon the next ``H`` rows hold its target. A window never crosses lots, and a lot
too short for one window is an error (or, with ``on_short="skip"``, left out with a warning
that names it). The prediction time of a window is the time of its last feature row; its
label becomes known at the label-availability time of its label row, or, for forecasts, at
the latest of its horizon rows' label-availability times. Without a ``label_time`` column the
row's own time stands in, and the windows record that it was filled in
(:attr:`~mfgtx.data.Windows.label_time_filled`), except for a forecast of sensors only: a
reading is known at the time it is stamped with, so that time is given by the data.
"""

from __future__ import annotations

import logging
import warnings
from typing import Literal

import numpy as np
import pandas as pd

from mfgtx.data.errors import DataError, DataWarning
from mfgtx.data.table import SensorTable
from mfgtx.data.windows import Windows

__all__ = ["make_windows"]

log = logging.getLogger(__name__)


def _as_array(s: pd.Series) -> np.ndarray:
    """Times as ``datetime64[ns]`` (UTC, zone dropped) or float; numbers as float."""
    if pd.api.types.is_datetime64_any_dtype(s):
        if s.dt.tz is not None:
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
        return s.to_numpy(dtype="datetime64[ns]")
    return s.to_numpy(dtype=float)


def make_windows(
    table: SensorTable,
    window: int,
    *,
    stride: int = 1,
    horizon: int = 0,
    forecast: tuple[str, ...] | list[str] | None = None,
    as_of: object | None = None,
    on_short: Literal["error", "skip"] = "error",
    min_rows: int | None = None,
    include_last: bool = True,
) -> Windows:
    """Windows of ``window`` rows over every lot of ``table``.

    Args:
        table: a validated :class:`~mfgtx.data.SensorTable`.
        window: rows per window ``T``.
        stride: rows between the starts of consecutive windows of a lot.
        horizon: ``0``: the label is the targets at the window's last row (quality, RUL).
            ``H > 0``: forecasting; the label is the next ``H`` rows of the ``forecast``
            columns.
        forecast: columns to forecast (sensors or targets); default: the targets if the
            table has any, else every sensor.
        as_of: build the data set as it was known at this time. Any window with a feature
            row stamped after ``as_of`` or a label that became known after it is an error
            (select the windows known by then with :meth:`Windows.known_at` instead).
        on_short: ``"error"`` (default) or ``"skip"`` for lots shorter than
            ``window + horizon`` rows (``min_rows`` rows with ``min_rows``).
        min_rows: let windows begin before their lot's first row, so that a lot's early
            rows (and lots shorter than ``window``) get windows too: every row from the
            ``min_rows``-th of a lot on ends a window, and the steps before the lot began
            are missing (``Windows.pad`` counts them). Use it to give a model a lot's whole
            history up to ``window`` rows, for example an engine's life so far. ``None``
            (default): every window is ``window`` rows of its lot. Needs ``horizon=0``.
        include_last: ``True`` (default): also end a window at each lot's last usable row
            (the last row, or ``horizon`` rows before it) when the ``stride`` grid steps
            over it, so that a lot's last window always holds its latest rows, as scoring
            "as of now" and judging a lot by its last window need. The other windows keep
            their grid, so a window's end stays the same as rows are appended to its lot.
            ``False``: the stride grid alone (a published protocol's windows, say).

    Returns:
        :class:`~mfgtx.data.Windows`.

    Example:
        >>> df = pd.DataFrame({"lot": ["A"] * 5 + ["B"] * 4, "t": list(range(5)) + list(range(4)),
        ...                    "x": range(9), "rul": [4, 3, 2, 1, 0, 3, 2, 1, 0]})
        >>> from mfgtx.data import ColumnMap, read_table
        >>> w = make_windows(read_table(df, ColumnMap("lot", "t", targets="rul")), 3)
        >>> len(w), w.lot.tolist(), w.y[:, 0].tolist()
        (5, ['A', 'A', 'A', 'B', 'B'], [2.0, 1.0, 0.0, 1.0, 0.0])
        >>> h = make_windows(read_table(df, ColumnMap("lot", "t", targets="rul")), 6, min_rows=4)
        >>> h.lot.tolist(), h.pad.tolist(), h.y[:, 0].tolist()  # B's 4 rows: 2 steps of padding
        (['A', 'A', 'B'], [2, 1, 2], [1.0, 0.0, 0.0])
        >>> cols = ColumnMap("lot", "t", targets="rul")
        >>> make_windows(read_table(df, cols), 2, stride=2).end.tolist()  # A ends at row 4
        [1.0, 3.0, 4.0, 1.0, 3.0]
        >>> make_windows(read_table(df, cols), 2, stride=2, include_last=False).end.tolist()
        [1.0, 3.0, 1.0, 3.0]
    """
    for name, value, low in (("window", window, 1), ("stride", stride, 1), ("horizon", horizon, 0)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, found {value!r}")
    if min_rows is not None:
        if not isinstance(min_rows, (int, np.integer)) or not 1 <= min_rows <= window:
            raise ValueError(
                f"min_rows must be an integer in [1, window={window}], found {min_rows!r}"
            )
        if horizon:
            raise ValueError(f"min_rows needs horizon=0 (labels at the last row), found {horizon}")
    if on_short not in ("error", "skip"):
        raise ValueError(f"on_short must be 'error' or 'skip', found {on_short!r}")
    cols = table.columns
    frame = table.frame
    sensors = table.sensors
    if horizon > 0:
        targets = tuple(forecast) if forecast is not None else (cols.targets or sensors)
        unknown = [c for c in targets if c not in (*sensors, *cols.targets)]
        if unknown:
            raise ValueError(
                f"forecast columns {unknown} are neither sensors nor targets of the table; "
                f"sensors {list(sensors)}, targets {list(cols.targets)}"
            )
    else:
        if forecast is not None:
            raise ValueError("forecast columns need horizon > 0")
        targets = cols.targets

    times = _as_array(frame[cols.time])
    label_rows = _as_array(frame[cols.label_time]) if cols.label_time else times
    # a target's row time says when it was measured, not when its value (an inspection
    # result, a lab value, a failure) became known; a sensor reading is known when stamped
    label_time_filled = (
        cols.label_time is None
        and bool(targets)
        and not (horizon > 0 and all(c in sensors for c in targets))
    )
    need = window + horizon if min_rows is None else min_rows
    starts: list[np.ndarray] = []  # first step of each window, before the lot's first row if padded
    firsts: list[np.ndarray] = []  # the lot's first row, per window
    short: list[str] = []
    for lot, (a, b) in table.lot_bounds().items():
        n = b - a
        if n < need:
            short.append(f"{lot} ({n} readings)")
            continue
        first_step = a if min_rows is None else a + min_rows - window
        final = b - window - horizon  # the start of the window ending at the last usable row
        lot_starts = np.arange(first_step, final + 1, stride)
        if include_last and lot_starts[-1] != final:
            lot_starts = np.append(lot_starts, final)
        starts.append(lot_starts)
        firsts.append(np.full(len(lot_starts), a))
    if short:
        if min_rows is not None:
            needed = f"the {need} readings a lot needs before its first prediction (min_rows)"
        elif horizon:
            needed = (
                f"the {need} readings of a window ({window}) and its forecast horizon ({horizon})"
            )
        else:
            needed = f"the model's window of {window} readings"
        msg = (
            f"{len(short)} lot(s) shorter than {needed}: "
            f"{', '.join(short[:10])}{' ...' if len(short) > 10 else ''}"
        )
        if on_short == "error":
            fix = "a smaller windows.min_rows" if min_rows is not None else "a shorter window"
            raise DataError(
                msg + f"; use {fix}, or leave such lots out (windows.on_short: skip in the "
                "job file)",
                lot=short[0].split()[0],
            )
        warnings.warn(msg + "; left out", DataWarning, stacklevel=2)
    if not starts:
        raise DataError(
            f"no lot of {table.source} is long enough for one window of {need} readings"
        )
    step_start = np.concatenate(starts).astype(np.int64)
    row_start = np.maximum(step_start, np.concatenate(firsts))  # (N,) first real row
    pad = row_start - step_start  # (N,) steps before the lot began
    last = step_start + window - 1  # (N,) last feature row: the prediction time

    if horizon == 0:
        label_time = label_rows[last]
        y = frame[list(targets)].to_numpy(dtype=np.float32)[last] if targets else None
    else:
        horizon_rows = last[:, None] + 1 + np.arange(horizon)[None, :]  # (N, H)
        label_time = label_rows[horizon_rows].max(axis=1)
        y = frame[list(targets)].to_numpy(dtype=np.float32)[horizon_rows]  # (N, H, K)

    result = Windows(
        values=frame[list(sensors)].to_numpy(dtype=np.float32),
        row_start=row_start,
        lot=frame[cols.lot].to_numpy(dtype=object)[row_start].astype(str),
        start=times[row_start],
        end=times[last],
        label_time=label_time,
        y=y,
        sensors=tuple(sensors),
        targets=tuple(targets),
        window=window,
        stride=stride,
        horizon=horizon,
        pad=None if min_rows is None else pad,
        time_kind=table.time_kind,
        categories={c: dict(names) for c, names in table.categories.items()} or None,
        label_time_filled=np.full(len(row_start), label_time_filled),
    )
    if as_of is not None:
        t = result.time_value(as_of)
        late_feature = result.end > t
        late_label = result.label_time > t
        for bad, what, when in (
            (late_feature, "has feature rows stamped after", result.end),
            (late_label, "has a label that became known after", result.label_time),
        ):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"window {i} (lot {result.lot[i]}) {what} as_of={as_of} ({when[i]}); "
                    f"{int(bad.sum())} windows in all. Use Windows.known_at(as_of) to keep only "
                    "windows known by then",
                    lot=str(result.lot[i]),
                )
    log.info("%d windows of %d rows from %d lots", len(result), window, len(starts))
    return result
