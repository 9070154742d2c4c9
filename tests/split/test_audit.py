"""audit: our splits pass; every kind of leaky split is caught by the check made for it."""

from __future__ import annotations

import dataclasses
import json
import pickle

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import SensorScaler
from mfgtx.split import AuditReport, Check, LeakageError, LotTimeSplit, audit

T0 = pd.Timestamp("2024-03-01 06:00")
H = pd.Timedelta("1h")
ALWAYS = ["index_disjoint", "lot_disjoint", "no_overlap", "time_order_gap", "label_availability"]


def windows_of(w, *lots: str) -> list[int]:
    return np.flatnonzero(np.isin(w.lot, lots)).tolist()


@pytest.fixture(scope="module")
def two_lines(make_windows):
    """Lots A and B run concurrently on two lines (B starts at 4 h), C follows at 30 h."""
    lots = {"A": (T0, 10, "1h"), "B": (T0 + 4 * H, 10, "1h"), "C": (T0 + 30 * H, 6, "1h")}
    return make_windows(lots)


def failed_checks(excinfo: pytest.ExceptionInfo[LeakageError]) -> tuple[str, ...]:
    return excinfo.value.report.failed


# --- our splits ------------------------------------------------------------------------------


def test_lot_time_split_passes_every_check(plant) -> None:
    for sets in LotTimeSplit(3, test_size=1, val_size=1, gap="5h").split_sets(plant):
        scaler = SensorScaler.fit(plant, sets.train)
        report = audit(plant, sets, scaler=scaler)
        assert report.passed and report.failed == ()
        assert [c.name for c in report.checks] == [*ALWAYS, "scaler_train_only", "coverage"]
        assert all(isinstance(c, Check) and c.passed and c.examples == () for c in report.checks)


def test_summary_describes_each_set(plant) -> None:
    sets = next(LotTimeSplit(3, test_size=2, val_size=1, gap="5h").split_sets(plant))
    summary = audit(plant, sets).summary
    assert summary["sets"]["train"] == {
        "n_windows": 3,
        "n_lots": 1,
        "lots": ["L0"],
        "first_start": "2024-03-01T06:00:00",
        "last_end": "2024-03-01T12:00:00",
    }
    assert summary["sets"]["test"]["lots"] == ["L2", "L3"]
    assert summary["sets"]["unused"]["n_lots"] == 4
    assert summary["gap"] == "P0DT5H0M0S" and summary["gap_seconds"] == 5 * 3600
    assert summary["n_purged"] == 2 and summary["fold"] == 0
    assert summary["purge_reasons"]["val_end_gap"] == 1


def test_report_is_json(plant) -> None:
    sets = next(LotTimeSplit(test_size=1, gap="2h").split_sets(plant))
    report = audit(plant, sets, scaler=SensorScaler.fit(plant, np.arange(len(plant))), strict=False)
    as_dict = report.to_dict()
    assert json.loads(json.dumps(as_dict)) == as_dict == json.loads(report.to_json())
    assert as_dict["passed"] is False
    failing = next(c for c in as_dict["checks"] if not c["passed"])
    assert failing["name"] == "scaler_train_only" and failing["examples"]
    assert {"window", "lot", "start", "end", "set"} <= set(failing["examples"][0])


def test_report_is_frozen(plant) -> None:
    report = audit(plant, next(LotTimeSplit(test_size=1).split_sets(plant)))
    assert isinstance(report, AuditReport)
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.checks = ()  # type: ignore[misc]


def test_gap_defaults_to_the_split_gap_and_can_be_overridden(plant) -> None:
    sets = next(LotTimeSplit(3, test_size=2, gap="4h").split_sets(plant))
    assert audit(plant, sets).passed
    with pytest.raises(LeakageError) as err:
        audit(plant, sets, gap="6h")  # stricter than the split was made with
    assert failed_checks(err) == ("time_order_gap",)


def test_dataframe_without_label_time_leaves_label_availability_not_checked(
    plant, to_frame
) -> None:
    frame = to_frame(plant).drop(columns="label_time")
    report = audit(frame, next(LotTimeSplit(test_size=2).split_sets(frame)))
    assert report.passed and "label_availability" not in [c.name for c in report.checks]
    assert report.unchecked == ("label_availability", "scaler_train_only")
    assert "no time at which each label became known" in report.not_checked[0].reason
    assert report.summary["label_time_given"] is False


# --- leaky splits ----------------------------------------------------------------------------


def test_same_lot_in_train_and_test(plant) -> None:
    leaky = {"train": [*windows_of(plant, "L0", "L1"), 8], "test": [9, 10, 11]}  # 8..11: L2
    msg = r"lot_disjoint: lot 'L2' in train \(1 window\) and test \(3 windows\)"
    with pytest.raises(LeakageError, match=msg):
        audit(plant, leaky, gap="0s")


def test_window_in_two_sets(plant) -> None:
    leaky = {"train": windows_of(plant, "L0"), "test": [3, *windows_of(plant, "L7")]}
    with pytest.raises(
        LeakageError, match=r"index_disjoint: 1 window in both train and test \(3\)"
    ):
        audit(plant, leaky, gap="0s")


def test_overlapping_windows_across_sets(two_lines) -> None:
    leaky = {"train": windows_of(two_lines, "A"), "test": windows_of(two_lines, "B")}
    with pytest.raises(LeakageError) as err:
        audit(two_lines, leaky, gap="0s")
    assert "no_overlap" in failed_checks(err)
    overlap = err.value.report.checks[2]
    assert overlap.detail.startswith("5 windows of test overlapping a train window in time")
    assert overlap.examples[0]["overlaps_window"] in windows_of(two_lines, "A")
    # touching at one instant is not an overlap: B's windows start where A's are cut off
    only_early = [i for i in windows_of(two_lines, "A") if two_lines.end[i] <= two_lines.start[8]]
    assert (
        "no_overlap"
        not in audit(
            two_lines, {"train": only_early, "test": windows_of(two_lines, "B")}, gap="0s"
        ).failed
    )


def test_validation_overlapping_test_is_caught_too(two_lines) -> None:
    fine = {"train": [0], "val": windows_of(two_lines, "B"), "test": windows_of(two_lines, "C")}
    assert audit(two_lines, fine, gap="0s").passed  # A's window 0 ends at 2 h, B at 13 h, C 30 h
    leaky = {"train": [16], "val": windows_of(two_lines, "B"), "test": [3, 4, 5, 6, 7]}
    with pytest.raises(LeakageError) as err:
        audit(two_lines, leaky, gap="0s")
    assert "no_overlap" in failed_checks(err)
    assert "of test overlapping a val window in time" in str(err.value)


def test_test_window_earlier_than_train_end_plus_gap(plant) -> None:
    # L1's last window ends at 20 h; L2 starts at 24 h: fine with gap 4 h, leaky with 5 h
    split = {"train": windows_of(plant, "L0", "L1"), "test": windows_of(plant, "L2")}
    assert audit(plant, split, gap="4h").passed
    with pytest.raises(LeakageError) as err:
        audit(plant, split, gap="5h")
    assert failed_checks(err) == ("time_order_gap",)
    assert "1 window of test starting before 2024-03-02T07:00:00" in str(err.value)
    assert err.value.report.checks[3].examples[0]["after_window"] == 7


def test_train_label_known_only_after_test_start(make_windows) -> None:
    # A's windows end at 2..9 h, labels 5 h later; B starts at 10 h
    w = make_windows({"A": (T0, 10, "1h"), "B": (T0 + 10 * H, 4, "1h")}, label_delay="5h")
    split = {"train": windows_of(w, "A"), "test": windows_of(w, "B")}
    with pytest.raises(
        LeakageError, match="label_availability: 4 windows of train with the label known only after"
    ) as err:
        audit(w, split, gap="0s")
    assert failed_checks(err) == ("label_availability",)
    ok = next(LotTimeSplit(test_size=1).split_sets(w))  # the splitter purges those four
    assert ok.purge_reasons["train_label_time"] == 4 and audit(w, ok).passed


def test_scaler_fitted_on_all_rows_vs_on_train_rows(plant) -> None:
    sets = next(LotTimeSplit(test_size=2, val_size=1).split_sets(plant))
    on_all = SensorScaler.fit(plant, np.arange(len(plant)))
    with pytest.raises(
        LeakageError,
        match=r"scaler_train_only: the sensor scaling \(standard\) records fitting on 72 rows, 27 ",
    ):
        audit(plant, sets, scaler=on_all)
    detail = audit(plant, sets, scaler=on_all, strict=False).checks[5].detail
    assert "by val windows of lots 'L5'" in detail and "test windows of lots 'L6', 'L7'" in detail
    assert audit(plant, sets, scaler=SensorScaler.fit(plant, sets.train)).passed


def test_scaler_rows_outside_every_window_are_reported(plant) -> None:
    sets = next(LotTimeSplit(test_size=1).split_sets(plant))
    scaler = dataclasses.replace(SensorScaler.fit(plant, sets.train), fit_rows=((0, 4), (9, 10)))
    report = audit(plant, sets, scaler=scaler, strict=False)
    assert report.failed == ("scaler_train_only",)
    assert "1 covered by no window (e.g. row 9)" in report.checks[5].detail


def test_tampered_split_sets_fail_coverage(plant) -> None:
    sets = next(LotTimeSplit(test_size=1, gap="5h").split_sets(plant))
    dropped = dataclasses.replace(sets, purged=sets.purged[:0])
    with pytest.raises(
        LeakageError, match=r"coverage: 1 window in none of train, val, test, purged, unused \(27\)"
    ):
        audit(plant, dropped)
    doubled = dataclasses.replace(sets, unused=sets.test[:2])
    with pytest.raises(LeakageError, match=r"2 windows in more than one \(28, 29\)"):
        audit(plant, doubled)


def test_strict_false_returns_the_failing_report(plant) -> None:
    leaky = {"train": windows_of(plant, "L0", "L2"), "test": windows_of(plant, "L1")}
    report = audit(plant, leaky, gap="0s", strict=False)
    assert not report.passed and "time_order_gap" in report.failed


def test_leakage_error_lists_every_failure_and_pickles(plant) -> None:
    leaky = {"train": windows_of(plant, "L0", "L2"), "test": windows_of(plant, "L1", "L2")}
    with pytest.raises(LeakageError) as err:
        audit(plant, leaky, gap="0s")
    assert isinstance(err.value, ValueError)
    message = str(err.value)
    for name in err.value.report.failed:
        assert f"\n- {name}: " in message
    assert len(err.value.report.failed) >= 3
    again = pickle.loads(pickle.dumps(err.value))
    assert str(again) == message and again.report.failed == err.value.report.failed


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sets", "kwargs", "match"),
    [
        ({"train": [0], "test": [8]}, {}, "gap is required to audit a hand-made split"),
        ({"train": [0], "valid": [4], "test": [8]}, {"gap": 0}, r"keys 'train', 'test'.*'valid'"),
        ({"train": [0]}, {"gap": 0}, r"found \['train'\]"),
        ({"train": [0], "test": []}, {"gap": 0}, "the test set is empty"),
        ({"train": [0], "test": [32]}, {"gap": 0}, r"window position 32, outside 0\.\.31"),
        ({"train": [0.0], "test": [8]}, {"gap": 0}, "integer window positions, found dtype float"),
        ({"train": np.ones(32, bool), "test": [8]}, {"gap": 0}, "boolean mask"),
        ({"train": [0], "test": [8]}, {"gap": "-2h"}, "gap must be a duration >= 0"),
        ("train", {"gap": 0}, "sets must be a SplitSets, a mapping"),
        (([0], [4], [6], [8]), {"gap": 0}, r"\(train, test\) or \(train, val, test\).*found 4"),
    ],
)
def test_bad_audit_input(plant, sets, kwargs, match) -> None:
    with pytest.raises(ValueError, match=match) as err:
        audit(plant, sets, **kwargs)
    assert not isinstance(err.value, LeakageError)


def test_scaler_check_needs_windows(plant, to_frame) -> None:
    sets = next(LotTimeSplit(test_size=1).split_sets(plant))
    with pytest.raises(ValueError, match="scaler check needs X to be a mfgtx.data.Windows"):
        audit(to_frame(plant), sets, scaler=SensorScaler.fit(plant, sets.train))


def test_overlap_with_a_long_window_that_started_first_is_found() -> None:
    # train: A runs 0-10 h, B 1-2 h; test: C 5-6 h lies inside A only, after B
    start = T0 + H * np.array([0, 1, 5])
    end = T0 + H * np.array([10, 2, 6])
    frame = pd.DataFrame({"lot": ["A", "B", "C"], "start": start, "end": end})
    report = audit(frame, {"train": [0, 1], "test": [2]}, gap="0s", strict=False)
    overlap = report.checks[2]
    assert not overlap.passed and overlap.examples[0]["overlaps_window"] == 0
    assert (
        "test window 2 (lot 'C'" in overlap.detail and "train window 0 (lot 'A'" in overlap.detail
    )


def test_scaler_check_counts_only_the_real_rows_of_padded_history_windows() -> None:
    """With ``make_windows(min_rows=)`` a window's padding is no table row: the scaler check
    must place leaked rows by the rows each window really reads."""
    from mfgtx.data import ColumnMap, make_windows, read_table

    lots = {"A": 8, "B": 6, "C": 5}  # rows 0-7, 8-13, 14-18, one lot after another in time
    df = pd.DataFrame(
        {
            "lot": [lot for lot, n in lots.items() for _ in range(n)],
            "t": T0 + H * np.arange(sum(lots.values())),
            "x": np.arange(sum(lots.values()), dtype=float),
            "y": 1.0,
        }
    )
    w = make_windows(read_table(df, ColumnMap("lot", "t", targets="y")), 10, min_rows=2)
    assert (w.pad > 0).all()  # every window reaches back before its lot began
    sets = {"train": windows_of(w, "A"), "val": windows_of(w, "B"), "test": windows_of(w, "C")}
    assert audit(w, sets, gap="1h", scaler=SensorScaler.fit(w, sets["train"])).passed
    leaky = SensorScaler.fit(w, [*sets["train"], *sets["test"]])  # rows 0-7 and 14-18
    report = audit(w, sets, gap="1h", scaler=leaky, strict=False)
    assert report.failed == ("scaler_train_only",)
    detail = next(c.detail for c in report.checks if c.name == "scaler_train_only")
    assert "5 of them not training rows: 5 covered by test windows of lots 'C'" in detail
    assert "val windows" not in detail  # B's windows read rows 8-13 only, never C's
