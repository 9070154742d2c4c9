"""TemperatureScaler: recovers a known temperature, never worsens the fitted log loss, errors."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize_scalar
from scipy.special import logsumexp

from mfgtx.calibration import TEMPERATURE_RANGE, CalibrationWarning, TemperatureScaler
from mfgtx.metrics import brier, expected_calibration_error, log_loss


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _multiclass(n: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True logits ``z (n, k)`` and labels drawn from ``softmax(z)``: calibrated at T = 1."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=(n, k))
    cum = np.cumsum(_softmax(z), axis=1)  # (n, k)
    y = (rng.random(n)[:, None] > cum).sum(axis=1)
    return z, np.minimum(y, k - 1)


def _binary(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """True logits ``z (n,)`` and labels drawn from ``sigmoid(z)``."""
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=2.0, size=n)
    return z, (rng.random(n) < _sigmoid(z)).astype(np.int64)


@pytest.fixture(scope="module")
def multiclass() -> tuple[np.ndarray, np.ndarray]:
    return _multiclass(10_000, 4, seed=0)


@pytest.fixture(scope="module")
def binary() -> tuple[np.ndarray, np.ndarray]:
    return _binary(20_000, seed=1)


@pytest.mark.parametrize("factor", [3.0, 0.5], ids=["over-confident", "under-confident"])
def test_recovers_known_temperature_multiclass(multiclass, factor: float) -> None:
    z, y = multiclass
    model_logits = z * factor  # the model is off by exactly this factor
    scaler = TemperatureScaler.fit(model_logits, y)
    assert scaler.temperature == pytest.approx(factor, rel=0.1)
    before, after = _softmax(model_logits), scaler.transform(model_logits)
    assert expected_calibration_error(y, after) < expected_calibration_error(y, before)
    assert log_loss(y, after) < log_loss(y, before)
    assert brier(y, after) < brier(y, before)


@pytest.mark.parametrize("factor", [3.0, 0.5], ids=["over-confident", "under-confident"])
def test_recovers_known_temperature_binary(binary, factor: float) -> None:
    z, y = binary
    scaler = TemperatureScaler.fit(z * factor, y)
    assert scaler.temperature == pytest.approx(factor, rel=0.1)
    before, after = _sigmoid(z * factor), scaler.transform(z * factor)
    assert after.shape == (z.size,)  # (N,) in, (N,) P(class 1) out
    assert expected_calibration_error(y, after) < expected_calibration_error(y, before)
    assert log_loss(y, after) < log_loss(y, before)


def test_binary_logit_equals_two_class_logits(binary) -> None:
    """One logit z means the two-class logits [0, z]: same temperature, same probabilities."""
    z, y = binary
    z3 = 3 * z[:2000]
    two = np.stack([np.zeros_like(z3), z3], axis=1)
    a, b = TemperatureScaler.fit(z3, y[:2000]), TemperatureScaler.fit(two, y[:2000])
    assert a.temperature == pytest.approx(b.temperature, rel=1e-9)
    np.testing.assert_allclose(a.transform(z3), b.transform(two)[:, 1], rtol=1e-12)


def _reference_temperature(z: np.ndarray, y: np.ndarray) -> float:
    """Independent reference: scipy's bounded scalar search on log T, NLL by scipy's logsumexp."""

    def nll(log_t: float) -> float:
        s = z / math.exp(log_t)
        return float(np.mean(logsumexp(s, axis=1) - s[np.arange(y.size), y]))

    low, high = TEMPERATURE_RANGE
    res = minimize_scalar(
        nll, bounds=(math.log(low), math.log(high)), method="bounded", options={"xatol": 1e-10}
    )
    return math.exp(res.x)


@pytest.mark.parametrize("factor", [3.0, 0.5])
def test_matches_scipy_reference(multiclass, factor: float) -> None:
    z, y = multiclass[0][:2000], multiclass[1][:2000]
    ours = TemperatureScaler.fit(z * factor, y).temperature
    assert ours == pytest.approx(_reference_temperature(z * factor, y), rel=1e-5)


@settings(max_examples=60, deadline=None)
@given(
    z=arrays(
        np.float64, st.tuples(st.integers(2, 40), st.integers(2, 4)), elements=st.floats(-10, 10)
    ),
    data=st.data(),
)
def test_log_loss_never_increases_on_the_fitting_set(z: np.ndarray, data: st.DataObject) -> None:
    n, k = z.shape
    y = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    y[:2] = [0, 1]  # two classes present
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CalibrationWarning)  # bounds are fine here
        scaler = TemperatureScaler.fit(z, y)
    low, high = TEMPERATURE_RANGE
    assert low <= scaler.temperature <= high
    # |z| <= 10, so softmax(z) needs no clipping in log_loss; the fit can only lower it
    assert log_loss(y, scaler.transform(z)) <= log_loss(y, _softmax(z)) + 1e-12


def test_deterministic_and_accepts_torch(multiclass) -> None:
    z, y = multiclass
    a = TemperatureScaler.fit(3 * z, y)
    assert TemperatureScaler.fit(3 * z, y) == a  # bit for bit
    t = torch.tensor(3 * z, dtype=torch.float32, requires_grad=True)
    b = TemperatureScaler.fit(t, torch.tensor(y))
    assert b.temperature == pytest.approx(a.temperature, rel=1e-5)
    out = b.transform(t)
    assert isinstance(out, np.ndarray) and out.dtype == np.float64
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-12)


def test_transform_keeps_the_ranking_and_t1_is_identity() -> None:
    z = np.array([[2.0, 0.0, -1.0], [0.5, 0.4, 3.0]])
    np.testing.assert_allclose(TemperatureScaler(1.0).transform(z), _softmax(z), rtol=1e-12)
    hot = TemperatureScaler(4.0).transform(z)
    assert (np.argsort(hot, axis=1) == np.argsort(z, axis=1)).all()
    assert hot.max() < _softmax(z).max()  # softer
    # extreme binary logits stay finite, in [0, 1]
    p = TemperatureScaler(0.05).transform(np.array([-1e4, 0.0, 1e4]))
    np.testing.assert_array_equal(p, [0.0, 0.5, 1.0])


def test_a_separated_validation_set_leaves_the_model_as_it_is() -> None:
    logits = np.array([5.0, -5.0, 4.0, -3.0, 6.0])
    labels = np.array([1, 0, 1, 0, 1])
    with pytest.warns(CalibrationWarning, match=r"perfectly separated.*left at 1"):
        scaler = TemperatureScaler.fit(logits, labels)
    assert scaler.temperature == 1.0  # not 0.05, which would tie every confident part at 1
    multi = np.array([[3.0, 0.0, -1.0], [0.0, 2.0, 1.0], [-2.0, 0.0, 0.5]])
    with pytest.warns(CalibrationWarning, match="perfectly separated"):
        assert TemperatureScaler.fit(multi, [0, 1, 2]).temperature == 1.0


def test_an_almost_separated_set_takes_the_lowest_temperature() -> None:
    logits = np.r_[np.linspace(0.1, 0.3, 200), -np.linspace(0.1, 0.3, 200), 1e-4]
    labels = np.r_[np.ones(200, int), np.zeros(200, int), 0]  # one miss, by a hair
    with pytest.warns(CalibrationWarning, match=r"almost separated.*set to 0\.05"):
        scaler = TemperatureScaler.fit(logits, labels)
    assert scaler.temperature == TEMPERATURE_RANGE[0]
    assert np.isfinite(scaler.transform(logits)).all()


def test_uninformative_logits_hit_the_upper_bound() -> None:
    with pytest.warns(CalibrationWarning, match=r"wrong way.*set to 20\.0"):
        scaler = TemperatureScaler.fit([2.0, -2.0, 2.0, -2.0], [0, 1, 0, 1])
    assert scaler.temperature == TEMPERATURE_RANGE[1]


def test_too_few_iterations_warn(multiclass) -> None:
    z, y = multiclass
    with pytest.warns(CalibrationWarning, match=r"did not converge in max_iter=1"):
        TemperatureScaler.fit(3 * z, y, max_iter=1)


def test_round_trip_through_json(multiclass) -> None:
    z, y = multiclass
    scaler = TemperatureScaler.fit(3 * z, y)
    back = TemperatureScaler.from_dict(json.loads(json.dumps(scaler.to_dict())))
    assert back == scaler
    np.testing.assert_array_equal(back.transform(z), scaler.transform(z))


@pytest.mark.parametrize(
    ("logits", "labels", "match"),
    [
        (np.zeros((0, 3)), [], r"no samples"),
        (np.zeros(0), [], r"no samples"),
        (np.zeros((4, 3)), [0, 1, 2], r"labels must have shape \(4,\).*found \(3,\)"),
        (np.zeros((4, 1)), [0, 0, 0, 0], r"\(N, K\) with K >= 2.*found shape \(4, 1\)"),
        (np.zeros((2, 2, 2)), [0, 1], r"found shape \(2, 2, 2\)"),
        ([0.0, math.nan, 1.0], [0, 1, 0], r"logits has 1 NaN or infinite.*index \(1,\)"),
        ([[0.0, 1.0], [math.inf, 0.0]], [0, 1], r"logits has 1 NaN or infinite.*index \(1, 0\)"),
        ([0.1, 0.2, 0.3], [0, 1, 2], r"labels\[2\] = 2 is not a class label 0\.\.1.*binary"),
        (np.zeros((3, 3)), [0, -1, 2], r"labels\[1\] = -1 is not a class label 0\.\.2"),
        ([0.1, 0.2], [0, 0.5], r"labels\[1\] = 0\.5 is not a class label"),
        ([0.1, 0.2, 0.3], [1, 1, 1], r"only class 1 \(3 samples\).*needs both classes"),
    ],
)
def test_fit_errors(logits, labels, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        TemperatureScaler.fit(logits, labels)


def test_other_errors() -> None:
    with pytest.raises(ValueError, match=r"max_iter must be a positive integer, found 0"):
        TemperatureScaler.fit([0.0, 1.0], [0, 1], max_iter=0)
    for bad in (0.0, -1.0, math.nan, math.inf, True, "2"):
        with pytest.raises(ValueError, match=r"temperature must be a positive finite number"):
            TemperatureScaler(bad)
    with pytest.raises(ValueError, match=r"keys \['temperature'\], found \['T'\]"):
        TemperatureScaler.from_dict({"T": 2.0})
    with pytest.raises(ValueError, match=r"found -2\.0"):
        TemperatureScaler.from_dict({"temperature": -2.0})
    with pytest.raises(ValueError, match=r"logits has 1 NaN"):
        TemperatureScaler(2.0).transform([[0.0, math.nan]])
