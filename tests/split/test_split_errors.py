"""Bad parameters and bad inputs raise ValueError naming the parameter, the value, the window."""

from __future__ import annotations

import dataclasses
import re

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import DataError
from mfgtx.split import LotTimeSplit


@pytest.mark.parametrize("n_splits", [0, -2, 1.5, True, "3", None])
def test_bad_n_splits(plant, n_splits) -> None:
    msg = re.escape(f"n_splits must be an integer >= 1, found {n_splits!r}")
    with pytest.raises(ValueError, match=msg):
        LotTimeSplit(n_splits, test_size=1).split_sets(plant)
    with pytest.raises(ValueError, match=msg):
        LotTimeSplit(n_splits).get_n_splits()


@pytest.mark.parametrize("test_size", [0, 0.0, 1.0, 1.5, -0.1, -3, True, "0.2", None])
def test_bad_test_size(plant, test_size) -> None:
    msg = rf"test_size must be a fraction of lots in \(0, 1\) .*found {re.escape(repr(test_size))}"
    with pytest.raises(ValueError, match=msg):
        list(LotTimeSplit(test_size=test_size).split(plant))


@pytest.mark.parametrize("val_size", [-1, 1.0, -0.5, False, "0.1", None])
def test_bad_val_size(plant, val_size) -> None:
    msg = rf"val_size must be 0 \(no validation set\), .*found {re.escape(repr(val_size))}"
    with pytest.raises(ValueError, match=msg):
        list(LotTimeSplit(test_size=1, val_size=val_size).split(plant))


@pytest.mark.parametrize(
    ("gap", "reason"),
    [
        ("-1h", "it is negative"),
        (pd.Timedelta("-5min"), "it is negative"),
        ("two hours", "pandas cannot read it"),
        (5, "a bare number has no unit"),
        (2.5, "a bare number has no unit"),
        (None, "it is not a time"),
    ],
)
def test_bad_gap(plant, gap, reason) -> None:
    msg = rf"gap must be a duration >= 0 .*found {re.escape(repr(gap))}: {reason}"
    with pytest.raises(ValueError, match=msg):
        list(LotTimeSplit(test_size=1, gap=gap).split(plant))


@pytest.mark.parametrize("gap", ["0s", 0, "90min", np.timedelta64(2, "h"), pd.Timedelta("1h")])
def test_good_gaps(plant, gap) -> None:
    assert len(list(LotTimeSplit(test_size=1, gap=gap).split(plant))) == 1


def test_too_few_lots_shows_the_arithmetic(make_windows, lots_in_sequence) -> None:
    w = make_windows(lots_in_sequence(12, n_rows=4))
    msg = re.escape("needs at least 3*5 + 2 + 1 = 18 lots")
    with pytest.raises(ValueError, match=msg + r".*found 12"):
        LotTimeSplit(3, test_size=5, val_size=2).split_sets(w)
    with pytest.raises(ValueError, match=re.escape("test_size=0.4 of 12 lots -> 5")):
        LotTimeSplit(3, test_size=0.4).split_sets(w)
    assert len(list(LotTimeSplit(3, test_size=3, val_size=2).split(w))) == 3  # 12 = 3*3 + 2 + 1


@pytest.mark.parametrize("x", [np.zeros((5, 3)), [[0, 1]], None])
def test_input_without_window_times(x) -> None:
    with pytest.raises(ValueError, match=rf"cannot split {type(x).__name__}: .*Windows"):
        list(LotTimeSplit().split(x))


def test_groups_that_differ_from_the_lots(plant) -> None:
    groups = plant.lot.copy()
    groups[[5, 9]] = "L9"
    msg = "at window 5 groups is 'L9' and the lot is 'L1' (2 mismatching windows)"
    with pytest.raises(ValueError, match=re.escape(msg)):
        list(LotTimeSplit(test_size=1).split(plant, groups=groups))
    with pytest.raises(ValueError, match=r"groups has shape \(3,\) but the Windows has 32"):
        list(LotTimeSplit(test_size=1).split(plant, groups=groups[:3]))


def test_frame_without_lot_or_times(plant, to_frame) -> None:
    frame = to_frame(plant)
    with pytest.raises(ValueError, match=r"no column\(s\) \['lot', 'end'\]"):
        LotTimeSplit().split_sets(frame.drop(columns=["lot", "end"]))


def test_frame_with_text_times(plant, to_frame) -> None:
    frame = to_frame(plant).assign(start=lambda f: f["start"].astype(str))
    with pytest.raises(ValueError, match="column 'start' must hold datetime64 times, found"):
        LotTimeSplit().split_sets(frame)


def test_frame_with_missing_time_or_lot(plant, to_frame) -> None:
    frame = to_frame(plant)
    frame.loc[7, "end"] = pd.NaT
    with pytest.raises(ValueError, match=r"column 'end' is missing at window 7 \(1 such"):
        LotTimeSplit().split_sets(frame)
    frame = to_frame(plant).astype({"lot": object})
    frame.loc[3, "lot"] = None
    with pytest.raises(ValueError, match="window 3 has no lot id"):
        LotTimeSplit().split_sets(frame)


def test_window_ending_before_it_starts(plant, to_frame) -> None:
    frame = to_frame(plant)
    frame.loc[4, "end"] = frame.loc[4, "start"] - pd.Timedelta("1h")
    msg = r"DataFrame window 4 \(lot 'L1'\) ends at 2024-03-01T17:00:00, before it starts at 2024-03-01T18"
    with pytest.raises(ValueError, match=msg):
        LotTimeSplit().split_sets(frame)


def test_data_faults_are_data_errors_naming_the_column(plant, to_frame) -> None:
    frame = to_frame(plant)
    frame.loc[2, "label_time"] = pd.NaT
    with pytest.raises(DataError, match="'label_time' is missing at window 2") as err:
        LotTimeSplit().split_sets(frame)
    assert err.value.column == "label_time"


def test_cycle_indexed_windows_are_refused_with_what_to_use_instead(plant) -> None:
    cycles = np.arange(len(plant), dtype=float)
    w = dataclasses.replace(plant, start=cycles, end=cycles + 2, label_time=cycles + 2)
    with pytest.raises(DataError, match=r"'start' holds numbers \(float64\).*GroupKFold"):
        LotTimeSplit().split_sets(w)
