"""LotTimeSplit: the scikit-learn protocol, rolling origin by lot and time, purging rules."""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import cross_val_score, cross_validate

from mfgtx.split import LotTimeSplit, SplitSets

# whole-lot purges are expected on random plants; test_purge_warning.py covers the warning
pytestmark = pytest.mark.filterwarnings("ignore::mfgtx.split.PurgeWarning")

T0 = pd.Timestamp("2024-03-01 06:00")
H = pd.Timedelta("1h")


def lots_of(w, idx) -> list[str]:
    return sorted(set(w.lot[idx]))


# --- scikit-learn protocol -------------------------------------------------------------------


def test_params_are_stored_verbatim_and_shown_in_repr() -> None:
    gap = dt.timedelta(hours=2)
    cv = LotTimeSplit(3, test_size=2, val_size=0.1, gap=gap)
    assert (cv.n_splits, cv.test_size, cv.val_size) == (3, 2, 0.1)
    assert cv.gap is gap  # not converted to a Timedelta
    assert repr(cv) == (
        "LotTimeSplit(gap=datetime.timedelta(seconds=7200), n_splits=3, test_size=2, val_size=0.1)"
    )
    assert repr(LotTimeSplit()) == "LotTimeSplit(gap='0s', n_splits=1, test_size=0.2, val_size=0.0)"


def test_only_n_splits_is_positional() -> None:
    with pytest.raises(TypeError):
        LotTimeSplit(2, 0.3)  # type: ignore[misc]


def test_bad_params_are_kept_until_used_as_in_sklearn() -> None:
    cv = LotTimeSplit(0, test_size=-1, gap="-1h")  # no error yet
    assert cv.n_splits == 0 and cv.test_size == -1 and cv.gap == "-1h"
    with pytest.raises(ValueError, match="n_splits must be an integer >= 1, found 0"):
        cv.get_n_splits()


def test_get_n_splits_ignores_its_arguments(plant) -> None:
    cv = LotTimeSplit(3, test_size=1)
    assert cv.get_n_splits() == 3
    assert cv.get_n_splits(plant, np.zeros(len(plant)), plant.lot) == 3
    assert LotTimeSplit(np.int64(2), test_size=1).get_n_splits() == 2


def test_split_yields_sorted_int64_arrays_one_pair_per_fold(plant) -> None:
    cv = LotTimeSplit(3, test_size=1, val_size=1)
    folds = list(cv.split(plant))
    assert len(folds) == cv.get_n_splits() == 3
    for train, test in folds:
        for idx in (train, test):
            assert isinstance(idx, np.ndarray) and idx.dtype == np.int64 and idx.ndim == 1
            assert np.all(np.diff(idx) > 0)
        assert np.intersect1d(train, test).size == 0


def test_split_is_split_sets_without_validation(plant) -> None:
    cv = LotTimeSplit(2, test_size=2, val_size=1, gap="5h")
    for (train, test), sets in zip(cv.split(plant), cv.split_sets(plant), strict=True):
        np.testing.assert_array_equal(train, sets.train)
        np.testing.assert_array_equal(test, sets.test)
        assert sets.val.size and np.intersect1d(sets.val, np.r_[train, test]).size == 0


def test_cross_val_score_with_a_list_of_folds(plant) -> None:
    rng = np.random.default_rng(0)
    features, target = rng.normal(size=(len(plant), 4)), rng.normal(size=len(plant))
    folds = list(LotTimeSplit(3, test_size=1, gap="1h").split(plant))
    scores = cross_val_score(Ridge(), features, target, cv=folds, scoring="r2")
    assert scores.shape == (3,) and np.all(np.isfinite(scores))
    out = cross_validate(Ridge(), features, target, cv=folds, return_indices=True)
    for (train, test), used_train, used_test in zip(
        folds, out["indices"]["train"], out["indices"]["test"], strict=True
    ):
        np.testing.assert_array_equal(used_train, train)
        np.testing.assert_array_equal(used_test, test)


def test_passing_the_splitter_itself_with_a_feature_matrix_says_what_to_do(plant) -> None:
    features, target = np.zeros((len(plant), 2)), np.zeros(len(plant))
    with pytest.raises(ValueError, match=r"cannot split ndarray.*cv=list\(LotTimeSplit"):
        cross_val_score(Ridge(), features, target, cv=LotTimeSplit(test_size=1))


# --- lots and time order ---------------------------------------------------------------------


def test_rolling_origin_blocks_of_lots(plant) -> None:
    folds = list(LotTimeSplit(3, test_size=2, val_size=1).split_sets(plant))
    expected = [  # (train, val, test, unused) lots per fold; 8 lots, 3 folds of 2 test lots
        (["L0"], ["L1"], ["L2", "L3"], ["L4", "L5", "L6", "L7"]),
        (["L0", "L1", "L2"], ["L3"], ["L4", "L5"], ["L6", "L7"]),
        (["L0", "L1", "L2", "L3", "L4"], ["L5"], ["L6", "L7"], []),
    ]
    for k, (sets, lots) in enumerate(zip(folds, expected, strict=True)):
        assert sets.fold == k
        got = [lots_of(plant, getattr(sets, n)) for n in ("train", "val", "test", "unused")]
        assert got == [list(x) for x in lots]
        assert sets.purged.size == 0  # lots 4 h apart, gap 0: nothing straddles
        assert sets.test_start == T0 + 12 * H * (2 + 2 * k)
        assert sets.val_start == T0 + 12 * H * (1 + 2 * k)


def test_lots_are_ordered_by_first_start_then_lot_id(make_windows) -> None:
    # table order and lot names both disagree with time order; "b" and "a" start together
    spec = {"late": 40, "b": 20, "a": 20, "early": 0}  # first row at this many hours
    w = make_windows({lot: (T0 + hours * H, 5, "1h") for lot, hours in spec.items()})
    folds = list(LotTimeSplit(3, test_size=1).split_sets(w))
    assert [lots_of(w, s.test) for s in folds] == [["a"], ["b"], ["late"]]
    assert lots_of(w, folds[0].train) == ["early"]


def test_fractions_of_lots_round_up_and_ignore_float_noise(make_windows, lots_in_sequence) -> None:
    w25 = make_windows(lots_in_sequence(25, n_rows=3))
    sets = next(LotTimeSplit(test_size=0.28, val_size=0.1).split_sets(w25))
    assert len(lots_of(w25, sets.test)) == 7  # 0.28 * 25 = 7.000000000000001 -> 7, not 8
    assert len(lots_of(w25, sets.val)) == 3  # ceil(2.5)
    w5 = make_windows(lots_in_sequence(5, n_rows=3))
    assert len(lots_of(w5, next(LotTimeSplit(test_size=0.01).split(w5))[1])) == 1  # at least one


def test_dataframe_and_windows_give_the_same_split(plant, to_frame) -> None:
    cv = LotTimeSplit(2, test_size=1, val_size=1, gap="3h")
    frame = to_frame(plant)
    for a, b in zip(cv.split_sets(plant), cv.split_sets(frame), strict=True):
        for name in ("train", "val", "test", "purged", "unused"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_groups_supply_the_lot_column_or_must_match_it(plant, to_frame) -> None:
    cv = LotTimeSplit(2, test_size=2)
    expected = list(cv.split(plant))
    frame = to_frame(plant)
    for x, groups in ((plant, plant.lot), (frame.drop(columns="lot"), plant.lot), (frame, None)):
        for (tr, te), (tr0, te0) in zip(cv.split(x, groups=groups), expected, strict=True):
            np.testing.assert_array_equal(tr, tr0)
            np.testing.assert_array_equal(te, te0)


def test_tz_aware_times_are_compared_as_instants(plant, to_frame) -> None:
    # starts in UTC, ends in Berlin (wall clock 1 h ahead): the same instants as the naive frame
    frame = to_frame(plant)
    utc = {c: frame[c].dt.tz_localize("UTC") for c in ("start", "end", "label_time")}
    aware = frame.assign(
        start=utc["start"],
        end=utc["end"].dt.tz_convert("Europe/Berlin"),
        label_time=utc["label_time"].dt.tz_convert("Europe/Berlin"),
    )
    cv = LotTimeSplit(2, test_size=1, gap="4h")  # boundary exactly met: nothing purged
    for naive_sets, aware_sets in zip(cv.split_sets(frame), cv.split_sets(aware), strict=True):
        assert aware_sets.purged.size == 0
        np.testing.assert_array_equal(naive_sets.train, aware_sets.train)


# --- purging ---------------------------------------------------------------------------------


def test_boundary_is_inclusive_and_gap_purges_only_the_straddlers(plant) -> None:
    # every lot's last window ends 4 h before the next lot starts
    inclusive = next(LotTimeSplit(3, test_size=2, val_size=1, gap="4h").split_sets(plant))
    assert inclusive.purged.size == 0
    sets = next(LotTimeSplit(3, test_size=2, val_size=1, gap="5h").split_sets(plant))
    np.testing.assert_array_equal(sets.train, [0, 1, 2])
    np.testing.assert_array_equal(sets.val, [4, 5, 6])
    np.testing.assert_array_equal(sets.test, np.arange(8, 16))
    np.testing.assert_array_equal(sets.purged, [3, 7])
    np.testing.assert_array_equal(sets.unused, np.arange(16, 32))
    reasons = ("train_end_gap", "train_label_time", "val_end_gap", "val_label_time")
    assert dict(sets.purge_reasons) == dict(zip(reasons, (1, 0, 1, 0), strict=True))
    assert sets.gap == pd.Timedelta("5h")


def test_concurrent_lot_windows_alongside_the_test_lot_are_purged(make_windows) -> None:
    # lot A runs 0..11 h, lot B starts at 8 h on another line; windows of 3 rows, stride 1
    w = make_windows({"A": (T0, 12, "1h"), "B": (T0 + 8 * H, 6, "1h")})
    sets = next(LotTimeSplit(test_size=1, gap="2h").split_sets(w))
    # A's windows end at 2..11 h; kept iff end + 2 h <= 8 h
    np.testing.assert_array_equal(sets.train, [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(sets.purged, [5, 6, 7, 8, 9])
    assert lots_of(w, sets.test) == ["B"] and sets.test.size == 4


def test_windows_whose_label_comes_after_the_next_start_are_purged(make_windows) -> None:
    # A: rows at 0..9 h, B starts at 10 h; windows of 2 rows end at 1..9 h, labels 3 h later
    w = make_windows({"A": (T0, 10, "1h"), "B": (T0 + 10 * H, 4, "1h")}, window=2, label_delay="3h")
    sets = next(LotTimeSplit(test_size=1).split_sets(w))
    np.testing.assert_array_equal(sets.train, np.arange(7))  # labels at 4..10 h
    np.testing.assert_array_equal(sets.purged, [7, 8])  # labels at 11 h and 12 h
    assert sets.purge_reasons["train_label_time"] == 2
    assert sets.purge_reasons["train_end_gap"] == 0


def test_validation_windows_are_purged_against_the_test_start(make_windows) -> None:
    lots = {"A": (T0, 4, "1h"), "V": (T0 + 10 * H, 10, "1h"), "T": (T0 + 18 * H, 4, "1h")}
    w = make_windows(lots, window=2, label_delay="1h")  # V's windows end 11..19 h
    sets = next(LotTimeSplit(test_size=1, val_size=1).split_sets(w))
    assert lots_of(w, sets.val) == ["V"]
    val_ends = (w.end[sets.val] - T0.to_datetime64()) // H.to_timedelta64()
    np.testing.assert_array_equal(val_ends, [11, 12, 13, 14, 15, 16, 17])  # label at end + 1 h
    assert sets.purge_reasons["val_end_gap"] == 1  # end at 19 h: straddles T's start at 18 h
    assert sets.purge_reasons["val_label_time"] == 1  # end at 18 h, label only at 19 h
    assert sets.val_start == T0 + 10 * H and sets.test_start == T0 + 18 * H


def test_purging_that_empties_the_training_set_explains_why(plant) -> None:
    with pytest.raises(
        ValueError, match=r"fold 0: purging left no train window.*minus the gap, 23 h"
    ):
        list(LotTimeSplit(3, test_size=2, gap="23h").split(plant))


def test_purging_that_empties_the_validation_set_explains_why(make_windows) -> None:
    lots = {"A": (T0, 4, "1h"), "V": (T0 + 10 * H, 4, "1h"), "T": (T0 + 11 * H, 4, "1h")}
    w = make_windows(lots)  # V's windows end at 12 h and 13 h, after T starts
    with pytest.raises(ValueError, match=r"no validation window.*test set starts at"):
        LotTimeSplit(test_size=1, val_size=1).split_sets(w)  # raises before iterating


def test_split_sets_is_a_frozen_record_with_read_only_arrays(plant) -> None:
    sets = next(LotTimeSplit(test_size=1).split_sets(plant))
    assert isinstance(sets, SplitSets)
    with pytest.raises(dataclasses.FrozenInstanceError):
        sets.train = np.arange(3)  # type: ignore[misc]
    with pytest.raises(ValueError, match="read-only"):
        sets.train[0] = 5
    with pytest.raises(TypeError):
        sets.purge_reasons["train_end_gap"] = 3  # type: ignore[index]


def test_every_window_is_in_exactly_one_set_per_fold(plant) -> None:
    for sets in LotTimeSplit(3, test_size=1, val_size=2, gap="5h").split_sets(plant):
        parts = [sets.train, sets.val, sets.test, sets.purged, sets.unused]
        np.testing.assert_array_equal(np.sort(np.concatenate(parts)), np.arange(len(plant)))


def test_test_blocks_of_the_folds_are_disjoint_and_end_with_the_last_lots(plant) -> None:
    tests = [te for _, te in LotTimeSplit(3, test_size=2).split(plant)]
    np.testing.assert_array_equal(np.concatenate(tests), np.arange(8, 32))
