"""Calibration: the record of temperature and threshold that a bundle carries."""

from __future__ import annotations

import numpy as np
import pytest

from mfgtx.calibration import Calibration, TemperatureScaler, ThresholdChoice, choose_threshold


def _choice(threshold: float) -> ThresholdChoice:
    return ThresholdChoice(
        threshold, cost_missed_defect=4.0, cost_false_alarm=1.0, tp=3, fp=2, tn=10, fn=1
    )


def test_binary_decision_uses_the_saved_threshold_on_calibrated_probabilities() -> None:
    logits = np.array([-1.0, 0.0, 1.0])
    hot = Calibration(TemperatureScaler(4.0), _choice(0.4))  # p = 0.44, 0.5, 0.56
    assert hot.decide(logits).tolist() == [1, 1, 1]
    cold = Calibration(TemperatureScaler(0.25), _choice(0.4))  # p = 0.02, 0.5, 0.98
    assert cold.decide(logits).tolist() == [0, 1, 1]


def test_multiclass_without_threshold_is_the_argmax() -> None:
    logits = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 0.0]])
    cal = Calibration(TemperatureScaler(2.0))
    np.testing.assert_allclose(cal.probabilities(logits).sum(1), 1.0)
    assert cal.decide(logits).tolist() == [1, 0]


def test_round_trip_with_a_chosen_threshold() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 200)
    logits = 3 * (2 * y - 1) + rng.normal(0, 3, 200)
    t = TemperatureScaler.fit(logits, y)
    choice = choose_threshold(t.transform(logits), y, cost_missed_defect=5.0)
    cal = Calibration(t, choice)
    again = Calibration.from_dict(cal.to_dict())
    assert again == cal
    np.testing.assert_array_equal(again.decide(logits), cal.decide(logits))


@pytest.mark.parametrize(
    ("state", "match"),
    [
        ({"temperature": {"temperature": 1.0}}, "must have keys temperature, threshold"),
        ({"temperature": {"temperature": 0.0}, "threshold": None}, "positive finite"),
        ({"temperature": {"temperature": 1.0}, "threshold": {"threshold": 0.5}}, "lacks"),
    ],
)
def test_bad_state_is_refused(state, match) -> None:
    with pytest.raises(ValueError, match=match):
        Calibration.from_dict(state)


def test_types_are_checked() -> None:
    with pytest.raises(TypeError, match="temperature must be a TemperatureScaler"):
        Calibration(2.0)  # type: ignore[arg-type]


def test_multiclass_with_a_good_class_flags_any_defect() -> None:
    # classes: 0 scratch, 1 none (good), 2 pit; P(defect) = 1 - P(none)
    logits = np.log(np.array([[0.2, 0.7, 0.1], [0.1, 0.3, 0.6]]))
    cal = Calibration(TemperatureScaler(1.0), _choice(0.4), good_class=1)
    np.testing.assert_allclose(cal.defect_probability(logits), [0.3, 0.7])
    assert cal.decide(logits).tolist() == [0, 1]
    assert Calibration.from_dict(cal.to_dict()) == cal
    with pytest.raises(ValueError, match="say which is the good one"):
        Calibration(TemperatureScaler(1.0), _choice(0.4)).decide(logits)
