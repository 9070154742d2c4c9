"""Conformal interval calibration by lot: MAPIE parity, coverage by simulation, lot counting."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from mfgtx.calibration import CalibrationWarning
from mfgtx.calibration.conformal import (
    IntervalCalibration,
    bins_for,
    conformal_level,
    fit_cqr,
    fit_split,
    lot_quantile,
    min_lots,
)

# ------------------------------------------------------------------ level and quantile


def test_level_is_finite_sample_and_capped():
    assert conformal_level(9, 0.8) == pytest.approx(8 / 9)
    assert conformal_level(10, 0.8) == pytest.approx(9 / 10)
    assert conformal_level(9, 0.7) == pytest.approx(7 / 9)  # 0.7 * 10 = 7.000000000000001
    assert conformal_level(3, 0.8) == 1.0
    assert min_lots(0.8) == 4 and min_lots(0.9) == 9 and min_lots(0.5) == 1
    with pytest.raises(ValueError, match="lots"):
        conformal_level(0, 0.8)
    with pytest.raises(ValueError, match="coverage"):
        conformal_level(5, 1.0)


def test_one_window_per_lot_is_the_order_statistic():
    rng = np.random.default_rng(1)
    for n in (5, 9, 10, 37, 200):
        s = rng.exponential(size=n)
        k = math.ceil((n + 1) * 0.8)
        assert lot_quantile(s, np.arange(n), 0.8) == np.sort(s)[k - 1]


def test_a_lot_weighs_one_however_many_windows_it_has():
    # lot 0 has 1000 windows with score 100, lots 1..9 one window each with scores 1..9:
    # counted by windows the 80 % quantile is 100; by lots lot 0 is one lot of ten
    s = np.concatenate([np.full(1000, 100.0), np.arange(1.0, 10.0)])
    lots = np.concatenate([np.zeros(1000, int), np.arange(1, 10)])
    # 10 lots, rank ceil(11 * 0.8) = 9: the ninth of [1..9, 100] is 9
    assert lot_quantile(s, lots, 0.8) == 9.0
    # and duplicating a lot's windows changes nothing
    s2 = np.concatenate([s, np.arange(1.0, 10.0)])
    lots2 = np.concatenate([lots, np.arange(1, 10)])
    assert lot_quantile(s2, lots2, 0.8) == 9.0


def test_many_windows_of_few_lots_do_not_shrink_the_margin():
    # 3 lots x 500 windows: by windows n=1500 and the level ~0.8 (a tight margin); by lots the
    # level caps at 1 (3 < 4 lots): the largest score, with a warning that nothing is promised
    rng = np.random.default_rng(2)
    lots = np.repeat(np.arange(3), 500)
    s = np.abs(rng.normal(size=1500) + rng.normal(size=3)[lots] * 3)
    with pytest.warns(CalibrationWarning, match="3 lot"):
        q = lot_quantile(s, lots, 0.8)
    assert q == s.max()
    assert q > np.quantile(s, math.ceil(1501 * 0.8) / 1500, method="lower")


def test_nan_scores_are_left_out_and_a_lot_without_truth_does_not_count():
    s = np.array([1.0, 2.0, 3.0, 4.0, 5.0, np.nan, np.nan])
    lots = np.array([0, 1, 2, 3, 4, 5, 5])
    assert lot_quantile(s, lots, 0.5) == lot_quantile(s[:5], lots[:5], 0.5)
    with pytest.raises(ValueError, match="no calibration window"):
        lot_quantile(np.array([np.nan]), np.array([0]), 0.8)


# ------------------------------------------------------------------ MAPIE parity


class _Column:
    """A prefit 'regressor' that returns one column of X: the residuals are ours, verbatim."""

    def __init__(self, col: int = 0, alpha: float | None = None) -> None:
        self.col = col
        self.alpha = alpha
        self.loss = "quantile"
        self.fitted_ = True
        self.n_features_in_ = 3

    def fit(self, X, y):
        return self

    def predict(self, X):
        return np.asarray(X)[:, self.col]

    def get_params(self, deep=True):
        return {"col": self.col, "alpha": self.alpha}

    def set_params(self, **kw):
        for k, v in kw.items():
            setattr(self, k, v)
        return self

    def __sklearn_is_fitted__(self):
        return True


@pytest.mark.parametrize("n", [9, 10, 53, 200])
def test_split_conformal_matches_mapie(n):
    mapie = pytest.importorskip("mapie.regression")
    rng = np.random.default_rng(n)
    y = rng.normal(size=n) * 3
    point = y + rng.standard_t(3, size=n)
    ours = fit_split(y, point, np.arange(n), 0.8)  # one window per lot: MAPIE's i.i.d. case
    reg = mapie.SplitConformalRegressor(_Column(0), confidence_level=0.8, prefit=True)
    X = np.stack([point, point, point], axis=1)
    reg.conformalize(X, y)
    x_new = np.array([[1.5, 1.5, 1.5], [-2.0, -2.0, -2.0]])
    _, bands = reg.predict_interval(x_new)  # (2, 2, 1)
    lo, hi = ours.apply(x_new[:, :1])
    np.testing.assert_allclose(lo[:, 0], bands[:, 0, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(hi[:, 0], bands[:, 1, 0], rtol=0, atol=1e-9)


@pytest.mark.parametrize("n", [11, 20, 53, 200])  # MAPIE's CQR asks n >= 1 / 0.1
def test_cqr_matches_mapie(n):
    mapie = pytest.importorskip("mapie.regression")
    rng = np.random.default_rng(100 + n)
    y = rng.normal(size=n) * 3
    mid = y + rng.normal(size=n)
    low = mid - np.abs(rng.normal(size=n)) * 1.5
    high = mid + np.abs(rng.normal(size=n)) * 1.5
    ours = fit_cqr(y, low, high, np.arange(n), 0.8)
    X = np.stack([low, high, mid], axis=1)
    reg = mapie.ConformalizedQuantileRegressor(
        [_Column(0, 0.1), _Column(1, 0.9), _Column(2, 0.5)], confidence_level=0.8, prefit=True
    )
    reg.conformalize(X, y)
    x_new = np.array([[-1.0, 2.0, 0.5], [3.0, 3.5, 3.2]])
    _, bands = reg.predict_interval(x_new, symmetric_correction=True)  # one margin, as Romano
    lo, hi = ours.apply(None, x_new[:, :1], x_new[:, 1:2])
    np.testing.assert_allclose(lo[:, 0], bands[:, 0, 0], rtol=0, atol=1e-9)
    np.testing.assert_allclose(hi[:, 0], bands[:, 1, 0], rtol=0, atol=1e-9)


# ------------------------------------------------------------------ coverage by simulation


def _draw_lots(rng, n_lots, windows, rho):
    """Residuals of ``n_lots`` exchangeable lots, windows sharing a lot effect (correlation rho)."""
    effect = rng.normal(size=n_lots) * math.sqrt(rho)  # (L,)
    n_w = rng.integers(windows[0], windows[1] + 1, size=n_lots)  # (L,) unequal lots
    lots = np.repeat(np.arange(n_lots), n_w)
    resid = effect[lots] + rng.normal(size=lots.size) * math.sqrt(1 - rho)
    return resid, lots, n_w


def test_coverage_of_a_new_lots_window_within_the_binomial_band():
    # 2000 draws: 40 calibration lots (5-60 overlapping windows each, within-lot correlation
    # 0.6), a new lot, one of its windows at random. Realized coverage must lie within 3
    # binomial standard errors of nominal: 0.8 +/- 3 * sqrt(0.16 / 2000) = [0.773, 0.827].
    # Found: 0.814 (split conformal's own finite-sample allowance is 1 / 41 = 0.024); with 12
    # lots the same draws give 0.858, inside [0.8, 0.8 + 1 / 13 = 0.877].
    rng = np.random.default_rng(39)
    draws, hits = 2000, 0
    for _ in range(draws):
        resid, lots, _ = _draw_lots(rng, 41, (5, 60), 0.6)
        cal = lots < 40
        q = lot_quantile(np.abs(resid[cal]), lots[cal], 0.8)
        hits += abs(resid[rng.choice(np.flatnonzero(~cal))]) <= q
    realized = hits / draws
    band = 3 * math.sqrt(0.8 * 0.2 / draws)
    assert 0.8 - band <= realized <= 0.8 + band, realized


def test_counting_windows_as_independent_undercovers_where_lots_do_not():
    # the same kind of draws through the window-count level (a per-window conformal): with
    # 3 calibration lots of 20-40 windows, within-lot correlation 0.95, counting ~90 windows
    # as independent covers 0.743 of a new lot's windows (2000 draws; 3-SE band 0.773); by lot
    # the margin is the largest score (3 lots are too few, with a warning) and covers 0.864
    rng = np.random.default_rng(0)
    draws, by_lot, by_window = 2000, 0, 0
    for _ in range(draws):
        resid, lots, _ = _draw_lots(rng, 4, (20, 40), 0.95)
        cal = lots < 3
        s = np.abs(resid[cal])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", CalibrationWarning)
            q_lot = lot_quantile(s, lots[cal], 0.8)
        n = s.size
        q_win = np.quantile(s, math.ceil((n + 1) * 0.8) / n, method="lower")
        r = abs(resid[rng.choice(np.flatnonzero(~cal))])
        by_lot += r <= q_lot
        by_window += r <= q_win
    band = 3 * math.sqrt(0.16 / draws)
    assert by_lot / draws >= 0.8 - band, by_lot / draws
    assert by_window / draws < 0.8 - band, by_window / draws


# ------------------------------------------------------------------ the record


def test_apply_conformal_cqr_and_clip():
    cal = IntervalCalibration("conformal", 0.8, (2.0, 1.0), (2,), 10, lower=(0.0, None))
    lo, hi = cal.apply(np.array([[1.0, -5.0], [10.0, 0.0]]))
    assert lo.tolist() == [[0.0, -6.0], [8.0, -1.0]]
    assert hi.tolist() == [[3.0, -4.0], [12.0, 1.0]]
    cqr = IntervalCalibration("cqr", 0.8, (-1.0,), (1,), 10, lower=(0.0,))
    lo, hi = cqr.apply(None, np.array([[-3.0], [4.0]]), np.array([[5.0], [4.5]]))
    # widened by -1 (narrowed): [-2, 4] clipped to [0, 4]; [5, 3.5] crosses: swapped
    assert lo.ravel().tolist() == [0.0, 3.5] and hi.ravel().tolist() == [4.0, 5.0]
    assert (cal.clip(np.array([[-3.0, -3.0]])) == [[0.0, -3.0]]).all()


def test_forecaster_shape_per_step_and_channel_and_blocks():
    rng = np.random.default_rng(3)
    n, steps, channels = 400, 6, 2
    lots = np.repeat(np.arange(20), 20)
    scale = np.arange(1, steps + 1)[None, :, None] * np.array([1.0, 10.0])  # grows with step
    y = rng.normal(size=(n, steps, channels)) * scale
    cal = fit_split(y, np.zeros_like(y), lots, 0.8)
    assert cal.shape == (steps, channels) and cal.lots == 20
    m = cal.margins
    assert (np.diff(m[:, 0]) > 0).sum() >= 4 and (m[:, 1] > m[:, 0]).all()
    blocked = fit_split(y, np.zeros_like(y), lots, 0.8, horizon_block=3)
    mb = blocked.margins
    assert (mb[0] == mb[1]).all() and (mb[1] == mb[2]).all() and (mb[3] == mb[5]).all()
    assert not (mb[2] == mb[3]).all()


def test_round_trip_and_validation():
    cal = IntervalCalibration("cqr", 0.9, (0.5, -0.2, 1.0, 2.0), (2, 2), 7, upper=(None, 100.0))
    d = cal.to_dict()
    assert all(isinstance(v, float) for v in d["margin"])
    assert IntervalCalibration.from_dict(d) == cal
    with pytest.raises(ValueError, match="margin"):
        IntervalCalibration("conformal", 0.8, (1.0,), (2,), 3)
    with pytest.raises(ValueError, match="never < 0"):
        IntervalCalibration("conformal", 0.8, (-1.0,), (1,), 3)
    with pytest.raises(ValueError, match="method"):
        IntervalCalibration("jackknife", 0.8, (1.0,), (1,), 3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lacks"):
        IntervalCalibration.from_dict({"method": "cqr"})
    with pytest.raises(ValueError, match="shape"):
        cal.apply(None, np.zeros((3, 2)), np.zeros((3, 2)))


def test_fit_on_enough_lots_does_not_warn():
    y = np.arange(40.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit_split(y, y + 1, np.repeat(np.arange(4), 10), 0.8)


# ------------------------------------------------------------------ Mondrian bins


def _machines(rng: np.random.Generator, n_lots: int):
    """Run-to-failure machines: 30 windows each from young (remaining life ~100, errors of
    2 cycles) to worn (~10 cycles left, errors of 15): the error grows as life runs out."""
    lots = np.repeat(np.arange(n_lots), 30)
    life = np.tile(np.linspace(100.0, 10.0, 30), n_lots) + rng.normal(size=lots.size) * 3
    spread = np.where(life > 55.0, 2.0, 15.0)
    y = life + rng.normal(size=lots.size) * spread
    return y, life, lots


def test_bins_hold_the_band_within_each_range_of_the_prediction():
    # 400 draws of 20 calibration machines and a new one. One margin for all covers the
    # worn windows (predicted <= 55 cycles) far below 80 % because the young windows' small
    # errors set it; one margin per half of the predictions covers each half near 80 %.
    rng = np.random.default_rng(40)
    draws = 400
    hit = {"one": [0, 0], "bins": [0, 0]}  # [worn, young]
    total = [0, 0]
    for _ in range(draws):
        y, point, lots = _machines(rng, 21)
        cal, new = lots < 20, lots == 20
        one = fit_split(y[cal], point[cal], lots[cal], 0.8)
        two = fit_split(y[cal], point[cal], lots[cal], 0.8, bins=2)
        assert two.bins == 2 and len(two.edges) == 1 and 40 < two.edges[0] < 70
        for name, c in (("one", one), ("bins", two)):
            lo, hi = c.apply(point[new][:, None])
            inside = (y[new] >= lo[:, 0]) & (y[new] <= hi[:, 0])
            worn = point[new] <= 55.0
            hit[name][0] += int(inside[worn].sum())
            hit[name][1] += int(inside[~worn].sum())
        total[0] += int((point[new] <= 55.0).sum())
        total[1] += int((point[new] > 55.0).sum())
    one = [h / t for h, t in zip(hit["one"], total, strict=True)]
    two = [h / t for h, t in zip(hit["bins"], total, strict=True)]
    assert one[0] < 0.7 and one[1] > 0.95  # worn under, young over: right only on average
    assert all(0.77 <= c <= 0.9 for c in two), two  # each range near its 80 %


def test_binned_margins_apply_by_the_point_and_round_trip():
    cal = IntervalCalibration("cqr", 0.8, (1.0, 5.0), (1,), 12, lower=(0.0,), edges=(50.0,))
    assert cal.bins == 2 and cal.margins.shape == (2, 1)
    point = np.array([[20.0], [50.0], [80.0]])
    lo, _ = cal.apply(point, point - 2, point + 2)
    assert (point - lo).ravel().tolist() == [3.0, 3.0, 7.0]  # 50 is in the lower bin
    assert IntervalCalibration.from_dict(cal.to_dict()) == cal
    with pytest.raises(ValueError, match="point prediction"):
        cal.apply(None, point - 2, point + 2)
    with pytest.raises(ValueError, match="needs 4"):
        IntervalCalibration("cqr", 0.8, (1.0, 5.0), (2,), 12, edges=(50.0, 60.0))
    with pytest.raises(ValueError, match="point prediction"):
        fit_cqr(np.zeros(8), np.zeros(8) - 1, np.zeros(8) + 1, np.arange(8), 0.8, bins=2)
    old = IntervalCalibration("cqr", 0.8, (1.0,), (1,), 12).to_dict()
    assert "edges" not in old and IntervalCalibration.from_dict(old).bins == 1  # older bundles
    # machines run to failure span every range: 10 of them fill 4 bins; lots that each sit
    # in one range share the bins out (16 lots: 4 bins of 4; 12: 3 bins of 4; 3: one margin)
    machines, life = np.repeat(np.arange(10), 30), np.tile(np.linspace(100, 0, 30), 10)
    assert bins_for(life, machines, 0.8) == 4
    assert [bins_for(np.arange(n * 1.0), np.arange(n), 0.8) for n in (16, 12, 3)] == [4, 3, 1]
    assert bins_for(np.c_[life, np.zeros_like(life)], machines, 0.8) == 1  # per target: all
