"""mfgtx.data on real public data, read in place (never copied; ETT is CC BY-ND)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import ColumnMap, SensorScaler, make_windows, read_table
from mfgtx.datasets import CMAPSS_SENSORS, read_cmapss


def cmapss_train(datasets_dir) -> pd.DataFrame:
    path = datasets_dir / "cmapss_fd001" / "train_FD001.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    df = read_cmapss(path)
    df["rul"] = df.groupby("unit")["cycle"].transform("max") - df["cycle"]
    return df


def test_cmapss_reads_with_cycles_as_time(datasets_dir) -> None:
    df = cmapss_train(datasets_dir)
    cols = ColumnMap(lot="unit", time="cycle", sensors=CMAPSS_SENSORS, targets="rul")
    table = read_table(df, cols)
    assert table.numeric_time and len(table.lots) == 100 and len(table.frame) == 20631
    w = make_windows(table, 30, stride=1)
    assert len(w) == 20631 - 100 * 29
    # every window's RUL label is the one at its last cycle, within its own engine
    last = w.row_start + 29
    np.testing.assert_array_equal(w.y[:, 0], table.frame["rul"].to_numpy()[last])
    assert (w.lot == table.frame["unit"].to_numpy()[last]).all()


def test_ett_reads_in_memory_as_one_series(datasets_dir) -> None:
    path = datasets_dir / "ett_small" / "ETTh1.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    df = pd.read_csv(path)
    df.insert(0, "series", "ETTh1")  # one station = one lot; in memory only
    table = read_table(df, ColumnMap(lot="series", time="date"))  # OT is an input too
    assert len(table.frame) == 17420
    assert table.sensors == ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT")
    assert not table.numeric_time and table.frame["date"].dt.tz is None  # ETT times carry no zone
    w = make_windows(table, 336, stride=24, horizon=96, forecast=["OT"])
    assert w.y.shape[1:] == (96, 1)
    np.testing.assert_array_equal(w.y[0, :, 0], table.frame["OT"].to_numpy(np.float32)[336:432])
    # the standard ETTh1 train part is the first 12 months = 8640 hours; scale on it only
    train = np.flatnonzero(w.row_start + 336 + 96 <= 12 * 30 * 24)
    scaler = SensorScaler.fit(w, train)
    assert scaler.fitted_rows().max() < 12 * 30 * 24
