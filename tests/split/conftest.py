"""Windows built directly from synthetic per-lot sensor data (no dependency on make_windows)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import Windows

T0 = pd.Timestamp("2024-03-01 06:00")

LotSpec = tuple[pd.Timestamp | str, int, str]  # (first row time, number of rows, row spacing)


def make_windows_for(
    lots: Mapping[str, LotSpec],
    window: int = 3,
    stride: int = 1,
    label_delay: str | pd.Timedelta = "0s",
    n_sensors: int = 2,
) -> Windows:
    """Windows of ``window`` rows every ``stride`` rows within each lot, lot after lot.

    The table holds the lots' rows one lot after another; row ``r`` of a lot starting at
    ``t`` with spacing ``freq`` is at ``t + r * freq``. A window's ``start``/``end`` are the
    times of its first/last row and its label is known ``label_delay`` after ``end``. A lot
    shorter than ``window`` rows gives no window.
    """
    values, row_start, lot, start, end = [], [], [], [], []
    offset = 0
    for name, (first, n_rows, freq) in lots.items():
        times = pd.date_range(first, periods=n_rows, freq=freq).to_numpy("datetime64[ns]")
        values.append(offset + np.arange(n_rows * n_sensors).reshape(n_rows, n_sensors) % 17)
        firsts = np.arange(0, n_rows - window + 1, stride)
        row_start.append(offset + firsts)
        lot += [name] * firsts.size
        start.append(times[firsts])
        end.append(times[firsts + window - 1])
        offset += n_rows
    end_arr = np.concatenate(end).astype("datetime64[ns]")
    n = end_arr.size
    return Windows(
        values=np.concatenate(values).astype(np.float32),
        row_start=np.concatenate(row_start).astype(np.int64),
        lot=np.array(lot, dtype=str),
        start=np.concatenate(start).astype("datetime64[ns]"),
        end=end_arr,
        label_time=end_arr + pd.Timedelta(label_delay).to_timedelta64(),
        y=np.arange(n, dtype=np.float32).reshape(n, 1),
        sensors=tuple(f"s{j}" for j in range(n_sensors)),
        targets=("y",),
        window=window,
        stride=stride,
        horizon=0,
    )


def sequential_lots(n_lots: int, n_rows: int = 10, every: str = "12h") -> dict[str, LotSpec]:
    """``n_lots`` hourly lots ``L0, L1, ...`` starting ``every`` apart (no overlap if short)."""
    step = pd.Timedelta(every)
    return {f"L{i}": (T0 + i * step, n_rows, "1h") for i in range(n_lots)}


def as_frame(w: Windows) -> pd.DataFrame:
    """The window table as a DataFrame (one row per window)."""
    return pd.DataFrame({"lot": w.lot, "start": w.start, "end": w.end, "label_time": w.label_time})


@pytest.fixture(scope="session")
def make_windows() -> Callable[..., Windows]:
    return make_windows_for


@pytest.fixture(scope="session")
def lots_in_sequence() -> Callable[..., dict[str, LotSpec]]:
    return sequential_lots


@pytest.fixture(scope="session")
def to_frame() -> Callable[[Windows], pd.DataFrame]:
    return as_frame


@pytest.fixture(scope="session")
def plant() -> Windows:
    """8 sequential lots of 10 hourly rows, 12 h apart; windows of 3 rows, stride 2 (4 per lot)."""
    return make_windows_for(sequential_lots(8), window=3, stride=2)
