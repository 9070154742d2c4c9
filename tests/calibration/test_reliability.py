"""reliability_curve: counts, parity with mfgtx.metrics ECE, JSON-safe output, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mfgtx.calibration import reliability_curve
from mfgtx.metrics import expected_calibration_error


@pytest.mark.parametrize("n_bins", [1, 5, 10, 15])
def test_counts_sum_to_n_and_bins_agree_with_ece(n_bins: int) -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(scale=2.0, size=(300, 3))
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    y = rng.integers(0, 3, size=300)
    curve = reliability_curve(p, y, n_bins=n_bins)
    assert curve["kind"] == "top_label"
    assert sum(curve["counts"]) == 300
    assert len(curve["bin_edges"]) == n_bins + 1 and len(curve["counts"]) == n_bins
    # ECE is the count-weighted gap between the two curves, with the same bins
    gap = sum(
        c * abs(o - m)
        for c, o, m in zip(
            curve["counts"], curve["observed_frequency"], curve["mean_predicted"], strict=True
        )
        if c
    )
    assert gap / 300 == pytest.approx(expected_calibration_error(y, p, n_bins=n_bins), abs=1e-12)


def test_binary_curve_is_about_the_defect_class() -> None:
    p = np.array([0.05, 0.1, 0.15, 0.55, 0.95, 1.0])
    y = np.array([0, 0, 1, 1, 1, 0])
    curve = reliability_curve(p, y, n_bins=4)
    assert curve["kind"] == "positive_class"
    assert curve["counts"] == [3, 0, 1, 2]  # 1.0 falls in the last bin
    assert curve["mean_predicted"][0] == pytest.approx(0.1)
    assert curve["observed_frequency"] == [pytest.approx(1 / 3), None, 1.0, 0.5]
    assert curve["bin_edges"] == [0.0, 0.25, 0.5, 0.75, 1.0]
    json.dumps(curve, allow_nan=False)  # JSON-safe: empty bins are None, not nan
    assert reliability_curve(np.stack([1 - p, p], axis=1), y, n_bins=4) == curve


def test_errors() -> None:
    with pytest.raises(ValueError, match=r"n_bins must be a positive integer, found 0"):
        reliability_curve([0.5], [1], n_bins=0)
    with pytest.raises(ValueError, match=r"reliability_curve: probabilities of sample 0 outside"):
        reliability_curve([1.5], [1])
    with pytest.raises(ValueError, match=r"reliability_curve: y_true has shape \(2,\)"):
        reliability_curve([0.5], [1, 0])
