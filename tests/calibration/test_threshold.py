"""choose_threshold against hand-worked cases and a brute-force enumeration; Bayes rule; errors."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mfgtx.calibration import (
    ThresholdChoice,
    apply_threshold,
    bayes_threshold,
    choose_threshold,
)

# Worked by hand (flag p > t), costs with a miss = 1 false alarm:
#   t = 0:   flag all            fp 2, fn 0 -> 2
#   t = 0.1: flag .3 .4 .8 .9    fp 1, fn 0 -> 1   (best)
#   t = 0.3: flag .4 .8 .9       fp 1, fn 1 -> 2
#   t = 0.4: flag .8 .9          fp 0, fn 1 -> 1   (best, higher: wins the tie)
#   t = 0.8: flag .9             fp 0, fn 2 -> 2
#   t = 0.9: flag none           fp 0, fn 3 -> 3
# With a miss = 20 alarms only t = 0.1 is best (cost 1); t = 0.4 costs 20.
P = np.array([0.1, 0.3, 0.4, 0.8, 0.9])
Y = np.array([0, 1, 0, 1, 1])


def test_hand_worked_equal_costs_tie_goes_high_and_to_the_middle() -> None:
    c = choose_threshold(P, Y, cost_missed_defect=1.0)
    assert c.threshold == pytest.approx(0.6)  # middle of [0.4, 0.8), not 0.1 nor 0.4
    assert (c.tp, c.fp, c.tn, c.fn) == (2, 0, 2, 1)
    assert c.expected_cost == pytest.approx(1 / 5)
    assert c.recall == pytest.approx(2 / 3)
    assert c.precision == 1.0
    assert c.false_alarm_rate == 0.0
    assert c.cost_ratio == 1.0


def test_hand_worked_costly_misses_move_the_threshold_down() -> None:
    cheap = choose_threshold(P, Y, cost_missed_defect=1.0)
    costly = choose_threshold(P, Y, cost_missed_defect=20.0)
    assert costly.threshold == pytest.approx(0.2)  # middle of [0.1, 0.3)
    assert (costly.tp, costly.fp, costly.tn, costly.fn) == (3, 1, 1, 0)
    assert costly.expected_cost == pytest.approx(1 / 5)
    assert costly.cost_ratio == 20.0
    assert costly.threshold < cheap.threshold
    assert costly.recall > cheap.recall and costly.false_alarm_rate > cheap.false_alarm_rate


def test_a_run_of_tied_thresholds_gives_its_middle() -> None:
    # t = 0.1 (flag .5 .5 .8: one false alarm) and t = 0.5 (flag .8: one miss) both cost 1;
    # they are neighbours, so the run is [0.1, 0.8) and its middle 0.45 flags .5 .5 .8
    c = choose_threshold([0.1, 0.5, 0.5, 0.8], [0, 1, 0, 1], cost_missed_defect=1.0)
    assert c.threshold == pytest.approx(0.45)
    assert (c.tp, c.fp, c.tn, c.fn) == (2, 1, 1, 0)


def test_ties_survive_floating_point_rounding() -> None:
    # flag nothing: 3 misses * 0.1 = 0.30000000000000004; flag from 0.1 up: 1 alarm * 0.3 = 0.3
    p, y = [0.1, 0.3, 0.3, 0.3, 0.5], [0, 1, 1, 1, 0]
    assert 3 * 0.1 != 0.3
    c = choose_threshold(p, y, cost_missed_defect=0.1, cost_false_alarm=0.3)
    assert c.threshold == pytest.approx(0.75)  # the tie goes to the higher threshold
    assert (c.tp, c.fp) == (0, 0)


def test_only_the_cost_ratio_matters() -> None:
    a = choose_threshold(P, Y, cost_missed_defect=20.0)
    b = choose_threshold(P, Y, cost_missed_defect=200.0, cost_false_alarm=10.0)
    assert a.threshold == b.threshold and (a.tp, a.fp) == (b.tp, b.fp)
    assert b.expected_cost == pytest.approx(10 * a.expected_cost)


def test_flag_none_and_flag_all_ends() -> None:
    # every defect scored below every good part: flagging nothing beats flagging anything
    c = choose_threshold([0.1, 0.2, 0.7, 0.8], [1, 0, 0, 0], cost_missed_defect=1.0)
    assert (c.tp, c.fp) == (0, 0)
    assert c.threshold == pytest.approx(0.9)  # middle of [0.8, 1]
    assert math.isnan(c.precision) and c.to_dict()["precision"] is None
    # misses very costly: flag everything, half way between 0 and the lowest probability
    c = choose_threshold([0.1, 0.2, 0.7, 0.8], [1, 0, 0, 0], cost_missed_defect=100.0)
    assert (c.fn, c.tn) == (0, 0)
    assert c.threshold == pytest.approx(0.05)


def test_on_calibrated_data_the_choice_approaches_the_bayes_threshold() -> None:
    rng = np.random.default_rng(0)
    p = rng.random(20_000)
    y = (rng.random(p.size) < p).astype(int)  # perfectly calibrated by construction
    choices = []
    for ratio in (1.0, 4.0, 20.0):
        c = choose_threshold(p, y, cost_missed_defect=ratio)
        assert c.threshold == pytest.approx(bayes_threshold(cost_missed_defect=ratio), abs=0.05)
        choices.append(c)
    thresholds = [c.threshold for c in choices]
    assert thresholds == sorted(thresholds, reverse=True)  # dearer misses, lower threshold
    assert [c.fn for c in choices] == sorted((c.fn for c in choices), reverse=True)
    assert [c.fp for c in choices] == sorted(c.fp for c in choices)


def _brute_force(p: np.ndarray, y: np.ndarray, c_md: float, c_fa: float) -> tuple[float, float]:
    """Minimal total cost, and the threshold the documented tie rule gives, by enumeration."""
    candidates = sorted({0.0, 1.0, *p.tolist()})
    costs = []
    for t in candidates:
        fn = sum(1 for pi, yi in zip(p, y, strict=True) if yi == 1 and not pi > t)
        fp = sum(1 for pi, yi in zip(p, y, strict=True) if yi == 0 and pi > t)
        costs.append(c_md * fn + c_fa * fp)
    best = min(costs)
    tied = [math.isclose(c, best, rel_tol=1e-9) for c in costs]
    hi = max(i for i, is_tied in enumerate(tied) if is_tied)
    lo = hi
    while lo > 0 and tied[lo - 1]:
        lo -= 1
    top = candidates[hi + 1] if hi + 1 < len(candidates) else 1.0
    return best, (candidates[lo] + top) / 2


@settings(max_examples=120, deadline=None)
@given(
    data=st.lists(st.tuples(st.integers(0, 20), st.integers(0, 1)), min_size=2, max_size=30),
    c_md=st.one_of(st.sampled_from([0.5, 1.0, 2.0, 3.0, 6.0]), st.floats(0.1, 50.0)),
    c_fa=st.sampled_from([0.5, 1.0, 3.0]),
)
def test_against_brute_force_enumeration(
    data: list[tuple[int, int]], c_md: float, c_fa: float
) -> None:
    p = np.array([k / 20 for k, _ in data])  # a coarse grid, so ties and repeats are common
    y = np.array([label for _, label in data])
    assume(0 < y.sum() < y.size)
    best, expected_threshold = _brute_force(p, y, c_md, c_fa)
    c = choose_threshold(p, y, cost_missed_defect=c_md, cost_false_alarm=c_fa)
    assert c.expected_cost * y.size == pytest.approx(best, rel=1e-9)
    assert c.threshold == pytest.approx(expected_threshold, abs=1e-12)
    flag = apply_threshold(p, c.threshold)
    assert (c.tp, c.fp) == (int((flag & (y == 1)).sum()), int((flag & (y == 0)).sum()))
    assert c.tp + c.fp + c.tn + c.fn == y.size


def test_two_column_probabilities_mean_the_same() -> None:
    two = np.stack([1 - P, P], axis=1)
    assert choose_threshold(two, Y, cost_missed_defect=20.0) == choose_threshold(
        P, Y, cost_missed_defect=20.0
    )
    np.testing.assert_array_equal(apply_threshold(two, 0.35), apply_threshold(P, 0.35))


def test_numpy_scalars_are_accepted_and_stay_json_safe() -> None:
    c = choose_threshold(P, Y, cost_missed_defect=np.int64(20), cost_false_alarm=np.float32(1))
    assert c == choose_threshold(P, Y, cost_missed_defect=20.0)
    json.dumps(ThresholdChoice(np.float32(0.5), 2, 1, tp=1, fp=0, tn=1, fn=0).to_dict())


def test_bayes_threshold_values() -> None:
    assert bayes_threshold(cost_missed_defect=1.0) == 0.5
    assert bayes_threshold(cost_missed_defect=20.0) == pytest.approx(1 / 21)
    assert bayes_threshold(cost_missed_defect=3.0, cost_false_alarm=1.0) == 0.25
    assert bayes_threshold(cost_missed_defect=1.0, cost_false_alarm=3.0) == 0.75
    assert bayes_threshold(cost_missed_defect=50.0, cost_false_alarm=10.0) == pytest.approx(1 / 6)


def test_apply_threshold_is_strict() -> None:
    np.testing.assert_array_equal(
        apply_threshold([0.0, 0.5, 0.50001, 1.0], 0.5), [False, False, True, True]
    )
    assert not apply_threshold([1.0], 1.0).any()  # threshold 1 flags nothing
    assert apply_threshold([1e-9], 0).all()


def test_threshold_choice_round_trip_and_validation() -> None:
    c = choose_threshold(P, Y, cost_missed_defect=20.0)
    state = json.loads(json.dumps(c.to_dict()))
    assert state["cost_ratio"] == 20.0 and state["recall"] == 1.0
    assert ThresholdChoice.from_dict(state) == c
    with pytest.raises(ValueError, match=r"lacks \['fn'\]"):
        ThresholdChoice.from_dict({k: v for k, v in state.items() if k != "fn"})
    base = {"threshold": 0.5, "cost_missed_defect": 2.0, "cost_false_alarm": 1.0}
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\], found 1\.5"):
        ThresholdChoice(**(base | {"threshold": 1.5}), tp=1, fp=0, tn=1, fn=0)
    with pytest.raises(ValueError, match=r"fp must be a non-negative integer, found -1"):
        ThresholdChoice(**base, tp=1, fp=-1, tn=1, fn=0)
    with pytest.raises(ValueError, match=r"need both defects and good parts"):
        ThresholdChoice(**base, tp=1, fp=0, tn=0, fn=0)


@pytest.mark.parametrize(
    ("probabilities", "labels", "match"),
    [
        ([0.2, 0.7, 0.9], [0, 1, 2], r"y_true\[2\] = 2 is not a class label 0\.\.1"),
        ([[0.2, 0.3, 0.5]] * 3, [0, 1, 2], r"binary problems.*found 3 classes"),
        ([0.2, 1.2, 0.9], [0, 1, 1], r"probabilities of sample 1 outside \[0, 1\]"),
        ([0.2, -0.1, 0.9], [0, 1, 1], r"probabilities of sample 1 outside \[0, 1\]"),
        ([0.2, math.nan, 0.9], [0, 1, 1], r"NaN or infinite value"),
        ([0.2, 0.7], [0, 1, 1], r"shape"),
        (
            [0.2, 0.7, 0.9],
            [1, 1, 1],
            r"only class 1 \(3 parts\).*both defects \(1\) and good parts \(0\)",
        ),
        ([], [], r"no samples"),
    ],
)
def test_choose_threshold_input_errors(probabilities, labels, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        choose_threshold(probabilities, labels, cost_missed_defect=5.0)


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan, True, "20"])
def test_costs_must_be_positive_numbers(bad) -> None:
    with pytest.raises(ValueError, match=r"cost_missed_defect must be (a positive number|finite)"):
        choose_threshold(P, Y, cost_missed_defect=bad)
    with pytest.raises(ValueError, match=r"cost_false_alarm must be (a positive number|finite)"):
        choose_threshold(P, Y, cost_missed_defect=1.0, cost_false_alarm=bad)
    with pytest.raises(ValueError, match=r"cost_missed_defect must be"):
        bayes_threshold(cost_missed_defect=bad)


def test_apply_threshold_errors() -> None:
    with pytest.raises(ValueError, match=r"threshold must be a number in \[0, 1\], found -0\.1"):
        apply_threshold(P, -0.1)
    with pytest.raises(ValueError, match=r"probabilities\[0\] = 1\.5 is outside \[0, 1\]"):
        apply_threshold([1.5], 0.5)
    with pytest.raises(ValueError, match=r"binary problems.*found shape \(2, 3\)"):
        apply_threshold(np.full((2, 3), 1 / 3), 0.5)
