"""LotTimeSplit and audit on NASA C-MAPSS FD001, read in place (skipped when absent)."""

from __future__ import annotations

import numpy as np
import pytest

from mfgtx.data import ColumnMap, SensorScaler, make_windows, read_table
from mfgtx.datasets import CMAPSS_SENSORS, cmapss_fleet, read_cmapss
from mfgtx.split import LotTimeSplit, audit


def fleet_table(datasets_dir):
    """FD001 as a fleet history (engines one after another on one clock, see cmapss_fleet)."""
    path = datasets_dir / "cmapss_fd001" / "train_FD001.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    cols = ColumnMap(
        lot="unit", time="time", sensors=CMAPSS_SENSORS, targets="rul", label_time="failed_at"
    )
    return read_table(cmapss_fleet(read_cmapss(path)), cols)


def test_cmapss_split_is_engine_disjoint_time_ordered_and_passes_audit(datasets_dir) -> None:
    windows = make_windows(fleet_table(datasets_dir), 30, stride=1)
    splitter = LotTimeSplit(test_size=0.2, val_size=0.1, gap="1h")
    (sets,) = list(splitter.split_sets(windows))
    train_units, val_units, test_units = (
        set(windows.lot[s]) for s in (sets.train, sets.val, sets.test)
    )
    assert len(test_units) == 20 and len(val_units) == 10
    assert (
        not (train_units & test_units)
        and not (train_units & val_units)
        and not (val_units & test_units)
    )
    assert windows.end[sets.train].max() + np.timedelta64(1, "h") <= windows.start[sets.test].min()
    assert windows.end[sets.val].max() + np.timedelta64(1, "h") <= windows.start[sets.test].min()
    scaler = SensorScaler.fit(windows, sets.train)
    report = audit(windows, sets, scaler=scaler)
    assert report.passed
    assert {c.name for c in report.checks} >= {
        "lot_disjoint",
        "time_order_gap",
        "label_availability",
        "scaler_train_only",
    }
    # the same audit catches a scaler fitted on every window
    leaky = audit(
        windows, sets, scaler=SensorScaler.fit(windows, np.arange(len(windows))), strict=False
    )
    assert not leaky.passed and [c.name for c in leaky.checks if not c.passed] == [
        "scaler_train_only"
    ]


def test_cmapss_rolling_origin_folds(datasets_dir) -> None:
    windows = make_windows(fleet_table(datasets_dir), 30, stride=5)
    folds = list(LotTimeSplit(3, test_size=10, gap="1h").split_sets(windows))
    assert len(folds) == 3
    for sets in folds:
        assert audit(windows, sets).passed
        assert len(set(windows.lot[sets.test])) == 10
    assert len(folds[0].train) < len(folds[1].train) < len(folds[2].train)  # expanding window


def test_cmapss_fold_placed_last_is_the_held_out_engines_and_passes_audit(datasets_dir) -> None:
    """Cross-fitting by engine: each fold's engines go last on the clock, so the time split
    holds out exactly that fold, and the audit still checks every rule."""
    path = datasets_dir / "cmapss_fd001" / "train_FD001.txt.gz"
    if not path.exists():
        pytest.skip(f"{path} not found")
    raw = read_cmapss(path)
    fold = list(range(21, 41))
    order = [u for u in range(1, 101) if u not in fold] + fold
    cols = ColumnMap(
        lot="unit", time="time", sensors=CMAPSS_SENSORS, targets="rul", label_time="failed_at"
    )
    windows = make_windows(read_table(cmapss_fleet(raw, order=order), cols), 30, stride=1)
    (sets,) = LotTimeSplit(test_size=20, val_size=0, gap="1h").split_sets(windows)
    assert sorted(set(windows.lot[sets.test].astype(int))) == fold
    assert len(set(windows.lot[sets.train])) == 80
    assert audit(windows, sets, scaler=SensorScaler.fit(windows, sets.train)).passed


def test_cmapss_history_windows_predict_where_30_cycle_windows_do_and_pass_audit(
    datasets_dir,
) -> None:
    """The RUL benchmark's encoder input: each engine's life so far, up to 362 cycles, from
    its 30th cycle on. It predicts at the same cycles with the same labels as the 30-cycle
    windows, reads only its own engine's rows, and the audit checks it like any split."""
    table = fleet_table(datasets_dir)
    plain = make_windows(table, 30)
    hist = make_windows(table, 362, min_rows=30)
    assert np.array_equal(hist.lot, plain.lot) and np.array_equal(hist.end, plain.end)
    assert np.array_equal(hist.y, plain.y)
    first_cycle = {lot: a for lot, (a, _) in table.lot_bounds().items()}
    assert (hist.row_start == [first_cycle[lot] for lot in hist.lot]).all()  # all < 362 long
    x, observed = hist.features(np.arange(5))  # engine 1 at cycles 30-34
    assert observed[:, -30:].all() and not observed[:, :-34].any()
    np.testing.assert_array_equal(x[:, -30:], plain.features(np.arange(5))[0])
    (sets,) = LotTimeSplit(test_size=20, val_size=10, gap="1h").split_sets(hist)
    assert audit(hist, sets, scaler=SensorScaler.fit(hist, sets.train)).passed
    leaky = audit(hist, sets, scaler=SensorScaler.fit(hist, np.arange(len(hist))), strict=False)
    assert leaky.failed == ("scaler_train_only",)
