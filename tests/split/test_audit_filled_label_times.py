"""The audit never passes a label check whose label times were filled in rather than given.

Without a ``label_time`` column, :func:`mfgtx.data.make_windows` stands a label's row time in
for the time the label became known. A plant's inspections arrive hours after the lot: the
audit must then list ``label_availability`` as not checked, not as passed.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import ColumnMap, Windows, make_windows, read_table
from mfgtx.split import LeakageError, LotTimeSplit, audit

T0 = pd.Timestamp("2024-03-01 06:00")


def plant_rows(n_lots: int = 6, rows: int = 10, inspection_delay: str = "30h") -> pd.DataFrame:
    """Lots of hourly rows, one after another (12 h apart); each lot's inspection result
    arrives ``inspection_delay`` after its last row, well after the next lots started."""
    parts = []
    for i in range(n_lots):
        t = pd.date_range(T0 + pd.Timedelta(hours=12 * i), periods=rows, freq="1h")
        parts.append(
            pd.DataFrame(
                {
                    "lot": f"L{i}",
                    "timestamp": t,
                    "temp": np.arange(rows, dtype=float) + i,
                    "pressure": np.linspace(1, 2, rows) * (i + 1),
                    "defect": float(i % 2),
                    "inspected_at": t[-1] + pd.Timedelta(inspection_delay),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def cut(frame: pd.DataFrame, label_time: str | None, **kwargs) -> Windows:
    cols = ColumnMap(
        "lot", "timestamp", sensors=("temp", "pressure"), targets="defect", label_time=label_time
    )
    return make_windows(read_table(frame, cols), 4, stride=2, **kwargs)


def split_of(w: Windows):
    return next(LotTimeSplit(test_size=2, val_size=1, gap="0s").split_sets(w))


def test_windows_say_their_label_times_were_filled_in() -> None:
    frame = plant_rows()
    filled = cut(frame, None)
    assert filled.label_time_filled is not None and filled.label_time_filled.all()
    assert (filled.label_time == filled.end).all()  # the row's time stands in
    given = cut(frame, "inspected_at")
    assert given.label_time_filled is None
    assert not given.filled_label_times().any()


def test_filled_in_label_times_are_not_checked_where_given_ones_fail() -> None:
    frame = plant_rows()
    given = cut(frame, "inspected_at")
    filled = cut(frame, None)
    # the same hand-made split: train on L0-L2, test on L3-L5, inspections 30 h late
    train = np.flatnonzero(np.isin(given.lot, ["L0", "L1", "L2"]))
    test = np.flatnonzero(np.isin(given.lot, ["L3", "L4", "L5"]))
    with pytest.raises(LeakageError, match="label_availability"):
        audit(given, (train, test), gap="0s")
    report = audit(filled, (train, test), gap="0s")  # no other check fails
    assert report.passed and "label_availability" not in [c.name for c in report.checks]
    assert report.unchecked == ("label_availability", "scaler_train_only")
    reason = report.not_checked[0].reason
    assert f"label times of {len(train)} of the {len(train)} windows of train" in reason
    assert "filled in" in reason and "label_time" in reason
    assert report.summary["label_time_given"] is False


def test_a_splitter_split_of_filled_in_windows_is_not_checked_either() -> None:
    w = cut(plant_rows(inspection_delay="0s"), None)
    report = audit(w, split_of(w))
    assert "label_availability" in report.unchecked
    assert "label_availability" not in [c.name for c in report.checks]
    folds = list(LotTimeSplit(2, test_size=1, gap="0s").split_sets(w))
    assert "label_availability" in audit(w, folds).unchecked  # cross-validation folds too


def test_a_filled_in_window_ending_after_the_next_set_starts_still_fails() -> None:
    w = cut(plant_rows(), None)
    train = np.flatnonzero(np.isin(w.lot, ["L0", "L3"]))  # L3 ends after L1 starts
    test = np.flatnonzero(w.lot == "L1")
    report = audit(w, (train, test), gap="0s", strict=False)
    check = next(c for c in report.checks if c.name == "label_availability")
    assert not check.passed and "its label cannot be known by then" in check.detail
    assert "no label_time given for" in check.detail
    assert "label_time" not in check.examples[0]  # a filled-in time is not shown as a fact


def test_filled_in_label_times_only_matter_where_a_label_must_be_known_in_time() -> None:
    """The test set's labels are not needed before anything: a test set cut without label
    times (an external test set) does not stop the check on training labels."""
    frame = plant_rows(inspection_delay="1h")
    given, filled = cut(frame, "inspected_at"), cut(frame, None)
    early = np.isin(given.lot, ["L0", "L1", "L2", "L3"])
    both = Windows.concat(
        [
            _subset(given, np.flatnonzero(early)),
            _subset(filled, np.flatnonzero(~early)),
        ]
    )
    assert both.filled_label_times().tolist() == (~early).tolist()
    train = np.flatnonzero(np.isin(both.lot, ["L0", "L1", "L2"]))
    test = np.flatnonzero(np.isin(both.lot, ["L4", "L5"]))
    report = audit(both, (train, test), gap="0s")
    assert "label_availability" in [c.name for c in report.checks]
    # with a filled-in training lot, not checked again
    val = np.flatnonzero(both.lot == "L4")
    test = np.flatnonzero(both.lot == "L5")
    report = audit(both, (train, val, test), gap="0s")
    assert "label_availability" in report.unchecked
    assert "windows of val" in report.not_checked[0].reason


def _subset(w: Windows, idx: np.ndarray) -> Windows:
    """Windows ``idx`` of whole lots of ``w``, as their own ``Windows``."""
    rows = w.rows(idx)
    remap = np.full(len(w.values), -1)
    remap[rows] = np.arange(rows.size)
    return dataclasses.replace(
        w,
        values=w.values[rows],
        row_start=remap[w.row_start[idx]],
        lot=w.lot[idx],
        start=w.start[idx],
        end=w.end[idx],
        label_time=w.label_time[idx],
        y=None if w.y is None else w.y[idx],
        pad=None if w.pad is None else w.pad[idx],
        label_time_filled=None if w.label_time_filled is None else w.label_time_filled[idx],
    )


def test_the_flag_survives_replace_and_concat() -> None:
    frame = plant_rows()
    filled = cut(frame, None)
    assert dataclasses.replace(filled, y=None).label_time_filled is not None
    given = cut(frame, "inspected_at")
    lots_a = np.flatnonzero(np.isin(given.lot, ["L0", "L1", "L2"]))
    lots_b = np.flatnonzero(~np.isin(given.lot, ["L0", "L1", "L2"]))
    both_given = Windows.concat([_subset(given, lots_a), _subset(given, lots_b)])
    assert both_given.label_time_filled is None
    mixed = Windows.concat([_subset(given, lots_a), _subset(filled, lots_b)])
    assert mixed.filled_label_times().tolist() == [False] * len(lots_a) + [True] * len(lots_b)


def test_forecasts_of_sensors_have_their_label_times_given() -> None:
    """A future reading is known when it is stamped: a forecast's label times are given by the
    data; a forecast of a target (a lab value) without label times is filled in."""
    frame = plant_rows()
    sensors = cut(frame, None, horizon=2, forecast=["temp", "pressure"])
    assert sensors.label_time_filled is None
    cols = ColumnMap("lot", "timestamp", sensors=("temp",), targets=("defect",))
    target = make_windows(read_table(frame, cols), 4, stride=2, horizon=2, forecast=["defect"])
    assert target.label_time_filled is not None and target.label_time_filled.all()


def test_windows_without_targets_have_no_label_times_to_fill() -> None:
    cols = ColumnMap("lot", "timestamp", sensors=("temp", "pressure"))
    assert make_windows(read_table(plant_rows(), cols), 4).label_time_filled is None


def test_label_time_filled_is_one_bool_per_window() -> None:
    w = cut(plant_rows(), None)
    with pytest.raises(ValueError, match="label_time_filled must be one bool per window"):
        dataclasses.replace(w, label_time_filled=np.ones(len(w) - 1, dtype=bool))
    with pytest.raises(ValueError, match="found dtype int64"):
        dataclasses.replace(w, label_time_filled=np.ones(len(w), dtype=np.int64))
    assert (
        dataclasses.replace(w, label_time_filled=np.zeros(len(w), bool)).label_time_filled is None
    )
