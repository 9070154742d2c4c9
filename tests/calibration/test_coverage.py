"""Realized coverage counted by lot, with its Clopper-Pearson interval."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import binomtest

from mfgtx.calibration.coverage import Coverage, clopper_pearson, lot_coverage


@pytest.mark.parametrize(("k", "n"), [(0, 5), (3, 10), (8, 10), (10, 10), (41, 50), (1, 1)])
def test_clopper_pearson_is_scipys_exact_interval(k, n) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    low, high = clopper_pearson(k, n, 0.95)
    assert low == pytest.approx(ci.low, abs=1e-12)
    assert high == pytest.approx(ci.high, abs=1e-12)


def test_clopper_pearson_known_case() -> None:
    """8 of 10 (textbook): 95 % interval 0.4439 to 0.9748."""
    low, high = clopper_pearson(8, 10)
    assert round(low, 4) == 0.4439 and round(high, 4) == 0.9748


@pytest.mark.parametrize(
    ("x", "n", "level"), [(-1, 5, 0.95), (6, 5, 0.95), (1, 0, 0.95), (1, 5, 1.0), (1, 2.5, 0.9)]
)
def test_clopper_pearson_refuses_bad_input(x, n, level) -> None:
    with pytest.raises(ValueError, match="clopper_pearson"):
        clopper_pearson(x, n, level)


def _lots(n_lots: int, per_lot: int, seed: int = 0):
    """``n_lots`` lots, ``per_lot`` windows each; a lot is inside its band or out (one draw
    per lot, its windows share it: they are one piece of evidence)."""
    rng = np.random.default_rng(seed)
    lot_in = rng.random(n_lots) < 0.8
    lots = np.repeat([f"L{i}" for i in range(n_lots)], per_lot)
    y = np.where(np.repeat(lot_in, per_lot), 0.0, 5.0)[:, None]
    return y, np.full_like(y, -1.0), np.full_like(y, 1.0), lots


def test_many_windows_of_one_lot_do_not_narrow_the_interval() -> None:
    few = lot_coverage(*_lots(10, 1), nominal=0.8)
    many = lot_coverage(*_lots(10, 200), nominal=0.8)
    assert many.lots == few.lots == 10 and many.windows == 2000
    assert (many.coverage, many.low, many.high) == pytest.approx((few.coverage, few.low, few.high))
    # counted by window instead, 2000 windows would claim a far narrower interval
    by_window = clopper_pearson(round(many.pooled * many.windows), many.windows)
    assert by_window[1] - by_window[0] < 0.5 * (many.high - many.low)


def test_each_lot_weighs_the_same() -> None:
    """Lot a: 1 window inside; lot b: 3 windows, 1 inside -> by lot (1 + 1/3) / 2."""
    y = np.array([[0.0], [0.0], [5.0], [5.0]])
    lots = np.array(["a", "b", "b", "b"])
    c = lot_coverage(y, y * 0 - 1, y * 0 + 1, lots, nominal=0.8)
    assert c.coverage == pytest.approx((1 + 1 / 3) / 2)
    assert c.pooled == pytest.approx(0.5)
    assert (c.low, c.high) == pytest.approx(clopper_pearson(1 + 1 / 3, 2))


def test_unrecorded_values_and_shapes() -> None:
    y = np.array([[[0.0, np.nan]], [[3.0, 0.5]]])  # (N=2, H=1, C=2)
    low, high = np.zeros_like(y), np.ones_like(y) * 2
    c = lot_coverage(y, low, high, np.array(["a", "b"]), nominal=0.8, method="cqr")
    assert c.values == 3 and c.coverage == pytest.approx((1 + 0.5) / 2) and c.width == 2.0
    with pytest.raises(ValueError, match="shape of the truth"):
        lot_coverage(y, low[:, :, :1], high, np.array(["a", "b"]), nominal=0.8)
    with pytest.raises(ValueError, match="one lot per window"):
        lot_coverage(y, low, high, np.array(["a"]), nominal=0.8)
    with pytest.raises(ValueError, match="method"):
        lot_coverage(y, low, high, np.array(["a", "b"]), nominal=0.8, method="guess")
    none = lot_coverage(y * np.nan, low, high, np.array(["a", "b"]), nominal=0.8)
    assert none.lots == 0 and math.isnan(none.coverage)


def test_coverage_round_trips_and_says_what_it_is() -> None:
    c = lot_coverage(*_lots(12, 3), nominal=0.8, method="conformal", calibration_lots=7)
    assert Coverage.from_dict(c.to_dict()) == c
    assert set(c.to_dict()) >= {"nominal", "coverage", "low", "high", "width", "lots"}
    assert c.band_words == "80 % conformal interval (calibrated on 7 validation lots)"
    assert "12 test lots" in c.sentence("cycles") and "cycles" in c.sentence("cycles")
    old = lot_coverage(*_lots(12, 3), nominal=0.8)
    assert old.band_words == "80 % band of uncalibrated quantiles"
    assert c.holds == (c.low <= 0.8 <= c.high)


def test_describe_band_says_calibrated_or_not() -> None:
    from mfgtx.calibration.conformal import IntervalCalibration
    from mfgtx.calibration.coverage import describe_band

    cal = IntervalCalibration("cqr", 0.8, (2.0,), (1,), 12)
    held = lot_coverage(*_lots(10, 3), nominal=0.8, method="cqr", calibration_lots=12)
    words = describe_band(cal, (0.1, 0.9), held)
    assert words is not None
    assert words.startswith("80 % conformalized quantile interval (calibrated on 12 validation")
    assert f"on the bundle's 10 test lots it held {held.coverage:.0%}" in words
    old = describe_band(None, (0.1, 0.5, 0.9))
    assert old is not None and "uncalibrated quantiles" in old and "10 % to 90 %" in old
    assert describe_band(None, (0.5,)) is None
