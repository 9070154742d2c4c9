"""Property tests: on random plants, every split that does not raise is leak-free.

Invariants are checked directly on the window times (not only through ``audit``), against an
independent oracle for the lot order, in the spirit of scikit-learn's ``check_cv_coverage``.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from mfgtx.data import SensorScaler
from mfgtx.split import LotTimeSplit, audit

# whole-lot purges are expected on random plants; test_purge_warning.py covers the warning
pytestmark = pytest.mark.filterwarnings("ignore::mfgtx.split.PurgeWarning")

T0 = pd.Timestamp("2024-03-01 06:00")
HALF_HOUR = pd.Timedelta("30min")


@st.composite
def plants(draw: st.DrawFn) -> dict:
    """Random lots (3-12, shuffled names, overlapping or with gaps) and split parameters."""
    n_lots = draw(st.integers(3, 12))
    names = draw(st.permutations([f"lot{i:02d}" for i in range(n_lots)]))
    lots, t = {}, T0
    for name in names:
        t = t + HALF_HOUR * draw(st.integers(-8, 40))  # negative: starts before the previous lot
        freq = draw(st.sampled_from(["10min", "30min", "1h"]))  # windows of different durations
        lots[name] = (t, draw(st.integers(1, 16)), freq)
    return {
        "lots": lots,
        "window": draw(st.integers(1, 4)),
        "stride": draw(st.integers(1, 3)),
        "label_delay": HALF_HOUR * draw(st.integers(0, 6)),
        "n_splits": draw(st.integers(1, 3)),
        "test_size": draw(st.one_of(st.integers(1, 3), st.floats(0.05, 0.45))),
        "val_size": draw(st.one_of(st.just(0.0), st.integers(1, 2), st.floats(0.05, 0.3))),
        "gap": HALF_HOUR * draw(st.integers(0, 8)),
    }


def lot_order(w) -> list[str]:
    """Oracle: lots sorted by first window start, then by name."""
    first = pd.Series(w.start).groupby(w.lot).min()
    return sorted(first.index, key=lambda lot: (first[lot], lot))


def n_lots_for(size: float | int, n: int) -> int:
    if isinstance(size, int):
        return size
    return 0 if size == 0 else max(1, math.ceil(round(size * n, 9)))


@settings(max_examples=50, deadline=None)
@given(case=plants())
def test_every_split_that_does_not_raise_is_leak_free(make_windows, case) -> None:
    w = make_windows(case["lots"], case["window"], case["stride"], case["label_delay"])
    gap = case["gap"].to_timedelta64()
    cv = LotTimeSplit(
        case["n_splits"], test_size=case["test_size"], val_size=case["val_size"], gap=case["gap"]
    )
    order = lot_order(w)
    n_test = n_lots_for(case["test_size"], len(order))
    n_val = n_lots_for(case["val_size"], len(order))
    try:
        folds = list(cv.split_sets(w))
    except ValueError as err:
        enough = len(order) >= case["n_splits"] * n_test + n_val + 1
        assert ("purging left no" in str(err)) if enough else ("needs at least" in str(err))
        event("raised: " + ("a set purged empty" if enough else "too few lots"))
        return
    event(f"split: {len(folds)} folds, {'with' if n_val else 'no'} validation")

    assert len(folds) == cv.get_n_splits()
    for (train, test), sets in zip(cv.split(w), folds, strict=True):
        np.testing.assert_array_equal(train, sets.train)
        np.testing.assert_array_equal(test, sets.test)

    for k, sets in enumerate(folds):
        tr, va, te, pu, un = sets.train, sets.val, sets.test, sets.purged, sets.unused
        # every window in exactly one set
        np.testing.assert_array_equal(
            np.sort(np.concatenate([tr, va, te, pu, un])), np.arange(len(w))
        )

        # lots: the oracle's blocks, and no lot in two sets
        hi = len(order) - (case["n_splits"] - 1 - k) * n_test
        blocks = {
            "train": order[: hi - n_test - n_val],
            "val": order[hi - n_test - n_val : hi - n_test],
            "test": order[hi - n_test : hi],
            "unused": order[hi:],
        }
        assert set(w.lot[te]) == set(blocks["test"])
        assert set(w.lot[un]) == set(blocks["unused"])
        assert set(w.lot[tr]) <= set(blocks["train"]) and set(w.lot[va]) <= set(blocks["val"])
        assert not (set(w.lot[tr]) & set(w.lot[va]) or set(w.lot[va]) & set(w.lot[te]))
        assert not set(w.lot[tr]) & set(w.lot[te])

        # time order with the gap, and labels known before the next set is used
        test_start = w.start[te].min()
        next_start = w.start[np.isin(w.lot, blocks["val"])].min() if n_val else test_start
        assert w.end[tr].max() + gap <= test_start
        assert w.end[tr].max() + gap <= next_start and w.label_time[tr].max() <= next_start
        if va.size:
            assert w.end[va].max() + gap <= test_start and w.label_time[va].max() <= test_start
            assert w.start[va].min() >= w.end[tr].max() + gap

        # nothing purged without a reason, and the reasons add up
        purged_train = pu[np.isin(w.lot[pu], blocks["train"])]
        purged_val = pu[np.isin(w.lot[pu], blocks["val"])]
        assert purged_train.size + purged_val.size == pu.size
        late = lambda idx, at: (w.end[idx] + gap > at) | (w.label_time[idx] > at)  # noqa: E731
        assert late(purged_train, next_start).all() and late(purged_val, test_start).all()
        assert sum(sets.purge_reasons.values()) == pu.size
        event("some windows purged" if pu.size else "nothing purged")

        report = audit(w, sets, scaler=SensorScaler.fit(w, tr))  # strict: raises on failure
        assert report.passed and report.summary["n_purged"] == pu.size


def reference_audit(w, sets: dict[str, np.ndarray], gap: np.timedelta64) -> dict[str, bool]:
    """The checks written out pair by pair, window by window: slow and obviously right."""
    names = [n for n in ("train", "val", "test") if len(sets[n])]
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    index_ok = all(not set(sets[a]) & set(sets[b]) for a, b in pairs)
    lot_ok = all(not set(w.lot[sets[a]]) & set(w.lot[sets[b]]) for a, b in pairs)
    overlap_ok = all(
        not (w.start[i] < w.end[j] and w.start[j] < w.end[i])
        for a, b in pairs
        for i in sets[a]
        for j in sets[b]
    )
    order_ok = all(w.start[j] >= w.end[i] + gap for a, b in pairs for i in sets[a] for j in sets[b])
    label_ok = all(
        w.label_time[i] <= min(w.start[j] for j in sets[b])
        for a, b in itertools.pairwise(names)
        for i in sets[a]
    )
    return {
        "index_disjoint": index_ok,
        "lot_disjoint": lot_ok,
        "no_overlap": overlap_ok,
        "time_order_gap": order_ok,
        "label_availability": label_ok,
    }


@settings(max_examples=50, deadline=None)
@given(case=plants(), data=st.data())
def test_audit_agrees_with_a_brute_force_reference_on_hand_made_splits(
    make_windows, case, data
) -> None:
    w = make_windows(case["lots"], case["window"], case["stride"], case["label_delay"])
    if len(w) < 2:
        return
    # each window to train (0), val (1), test (2) or nowhere (3); often whole lots in time order
    by_lot = data.draw(st.booleans())
    if by_lot:
        order = lot_order(w)
        cut = sorted(data.draw(st.lists(st.integers(0, len(order)), min_size=2, max_size=2)))
        rank = np.array([order.index(lot) for lot in w.lot])
        where = np.select([rank < cut[0], rank < cut[1]], [0, 1], 2)
    else:
        where = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(w), max_size=len(w))))
    sets = {name: np.flatnonzero(where == k) for k, name in enumerate(("train", "val", "test"))}
    if data.draw(st.integers(0, 4)) == 0:  # sometimes put one window in two sets
        sets["test"] = np.union1d(
            sets["test"], data.draw(st.sampled_from(sets["train"].tolist() or [0]))
        )
    if not (sets["train"].size and sets["test"].size):
        return
    report = audit(w, sets, gap=case["gap"], strict=False)
    expected = reference_audit(w, sets, case["gap"].to_timedelta64())
    assert {c.name: c.passed for c in report.checks} == expected
    event("by lot" if by_lot else "by window")
    for check in report.checks:
        event(f"{check.name} {'passed' if check.passed else 'failed'}")
