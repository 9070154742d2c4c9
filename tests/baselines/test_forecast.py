"""Forecast baselines: in-window values only, NaN fall-backs, seasonal repeats, clear errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mfgtx.baselines import LinearRidge, Naive, SeasonalNaive, TrainMeanForecast, fit_baselines
from mfgtx.data import SensorScaler
from mfgtx.metrics import forecast_metrics

NAN = np.nan


def test_naive_repeats_the_last_in_window_value_never_a_horizon_row(make_periodic_windows) -> None:
    w = make_periodic_windows()  # through read_table / make_windows, forecasting "wave"
    train = np.flatnonzero(w.lot != "L2")
    test = np.flatnonzero(w.lot == "L2")
    pred = Naive().fit(w, train).predict(w, test)
    assert pred.shape == (len(test), w.horizon, 1)
    wave = w.sensors.index("wave")
    last_rows = w.row_start[test] + w.window - 1
    np.testing.assert_array_equal(
        pred, np.repeat(w.values[last_rows, wave][:, None, None], w.horizon, 1)
    )
    # the first horizon row differs from the last window row, so reading it would show
    assert not np.allclose(pred[:, 0, 0], w.y[test, 0, 0])


def test_horizon_rows_cannot_change_a_naive_forecast(make_hand_windows) -> None:
    values = np.arange(24, dtype=float).reshape(12, 2)
    starts = [0, 6]  # windows of 3 rows, each followed by 3 horizon rows
    y = np.stack([values[s + 3 : s + 6, [0]] for s in starts])  # (2, H, 1) of s0
    w = make_hand_windows(values, starts, 3, y, horizon=3, targets=("s0",))
    before = {b.name: b.fit(w, [0]).predict(w, [1]) for b in (Naive(), SeasonalNaive(2))}
    changed = values.copy()
    changed[[3, 4, 5, 9, 10, 11]] = 1e9  # the horizon rows
    w2 = dataclasses.replace(w, values=changed.astype(np.float32))
    for b in (Naive(), SeasonalNaive(2)):
        np.testing.assert_array_equal(b.fit(w2, [0]).predict(w2, [1]), before[b.name])
    assert before["Naive"][0, :, 0].tolist() == [16.0, 16.0, 16.0]  # row 8, column s0
    assert before["SeasonalNaive(2)"][0, :, 0].tolist() == [14.0, 16.0, 14.0]  # rows 7, 8, 7


def test_missing_values_fall_back_to_earlier_rows_then_the_train_mean(make_hand_windows) -> None:
    values = np.array(
        [[1.0], [2.0], [3.0], [9.0],  # window 0: complete
         [4.0], [5.0], [NAN], [9.0],  # window 1: last value missing -> 5
         [NAN], [NAN], [NAN], [9.0]]  # window 2: all missing -> train mean
    )  # fmt: skip
    y = np.array([[[10.0]], [[20.0]], [[9.0]]])  # (N, H, K); the horizon rows are not used
    w = make_hand_windows(values, [0, 4, 8], 3, y, horizon=1, targets=("s0",))
    naive = Naive().fit(w, [0, 1])  # train mean of the forecast column: 15
    assert naive.predict(w, [0, 1, 2])[:, 0, 0].tolist() == [3.0, 5.0, 15.0]
    seasonal = SeasonalNaive(1).fit(w, [0, 1])
    assert seasonal.predict(w, [0, 1, 2])[:, 0, 0].tolist() == [3.0, 5.0, 15.0]
    assert TrainMeanForecast().fit(w, [0, 1]).predict(w, [2]).tolist() == [[[15.0]]]


def test_seasonal_naive_looks_one_period_further_back_when_the_phase_is_missing(
    make_hand_windows,
) -> None:
    values = np.array([[1.0], [2.0], [3.0], [NAN], [2.0], [3.0], [0.0], [0.0]])
    y = np.zeros((1, 2, 1))
    w = make_hand_windows(values, [0], 6, y, horizon=2, targets=("s0",))
    pred = SeasonalNaive(3).fit(w, [0]).predict(w, [0])
    assert pred[0, :, 0].tolist() == [1.0, 2.0]  # step 0: row 3 missing -> row 0


def test_seasonal_naive_is_perfect_on_a_periodic_series(make_periodic_windows) -> None:
    w = make_periodic_windows(period=4, window=8, horizon=6)
    train = np.flatnonzero(w.lot == "L0")
    test = np.flatnonzero(w.lot != "L0")
    scores = {
        b.name: forecast_metrics(w.y[test], b.predict(w, test))
        for b in fit_baselines(w, train, "forecast", period=4)
    }
    assert scores["SeasonalNaive(4)"] == {"mse": 0.0, "mae": 0.0}
    assert scores["Naive"]["mse"] > 1.0 and scores["TrainMeanForecast"]["mse"] > 1.0
    # a wrong period is not perfect (the test can fail)
    wrong = SeasonalNaive(3).fit(w, train).predict(w, test)
    assert forecast_metrics(w.y[test], wrong)["mse"] > 1.0


def test_forecast_errors(make_periodic_windows, make_hand_windows) -> None:
    w = make_hand_windows(
        np.zeros((6, 1)), [0], 3, np.zeros((1, 3, 1)), horizon=3, targets=("quality",)
    )
    with pytest.raises(
        ValueError,
        match=r"Naive repeats values .* but \['quality'\] is not a sensor .* use TrainMeanForecast",
    ):
        Naive().fit(w, [0])
    with pytest.warns(UserWarning, match=r"forecast columns \['quality'\] are not sensors"):
        fitted = fit_baselines(w, [0], "forecast", period=2)
    assert [b.name for b in fitted] == ["TrainMeanForecast"]
    periodic = make_periodic_windows(window=8)
    with pytest.raises(
        ValueError, match=r"SeasonalNaive period 9 is longer than the window \(8 rows\)"
    ):
        SeasonalNaive(9).fit(periodic, [0])
    with pytest.raises(ValueError, match="period must be an integer > 0, found 0"):
        SeasonalNaive(0)
    flat = make_hand_windows(np.zeros((4, 1)), [0, 2], 2, np.zeros((2, 1)))
    with pytest.raises(ValueError, match="needs windows with horizon > 0, found horizon 0"):
        TrainMeanForecast().fit(flat, [0])


def test_linear_ridge_learns_a_periodic_series_at_any_level(make_periodic_windows) -> None:
    w = make_periodic_windows(period=4, window=8, horizon=6)  # lot k sits 10*k higher
    train = np.flatnonzero(w.lot == "L0")
    test = np.flatnonzero(w.lot != "L0")
    pred = LinearRidge(alpha=1e-6).fit(w, train).predict(w, test)
    assert pred.shape == (len(test), 6, 1)
    assert forecast_metrics(w.y[test], pred)["mse"] < 1e-6  # the lookback minus its last value
    naive = Naive().fit(w, train).predict(w, test)
    assert forecast_metrics(w.y[test], naive)["mse"] > 1.0
    # one step of lookback cannot tell the phase: the test can fail
    short = LinearRidge(lookback=1, alpha=1e-6).fit(w, train).predict(w, test)
    assert forecast_metrics(w.y[test], short)["mse"] > 0.1


def test_linear_ridge_never_reads_horizon_rows_and_scales_back(make_hand_windows) -> None:
    t = np.arange(400, dtype=float)
    values = np.stack([np.sin(2 * np.pi * t / 12), 500 + 80 * np.cos(2 * np.pi * t / 7)], 1)
    starts = np.arange(0, 400 - 30, 3)
    y = np.stack([values[s + 24 : s + 30] for s in starts])  # (N, 6, 2)
    w = make_hand_windows(values, starts, 24, y, horizon=6, targets=("s0", "s1"))
    train, test = np.arange(80), np.arange(90, len(starts))
    scaler = SensorScaler.fit(w, train)
    model = LinearRidge(alpha=1e-4).fit(w, train, scaler)
    pred = model.predict(w, test)
    err = np.abs(pred - w.y[test]).max(axis=(0, 1))
    assert err[0] < 1e-2 and err[1] < 1.0  # in the units of y: s1 swings by 80 around 500
    changed = values.copy()
    horizon_rows = (w.row_start[test][:, None] + 24 + np.arange(6)).ravel()
    changed[np.setdiff1d(horizon_rows, w.rows(test))] = 1e6
    w2 = dataclasses.replace(w, values=changed.astype(np.float32))
    np.testing.assert_array_equal(model.predict(w2, test[-1:]), pred[-1:])


def test_linear_ridge_errors(make_periodic_windows) -> None:
    w = make_periodic_windows(window=8)
    with pytest.raises(
        ValueError, match=r"LinearRidge lookback 9 is longer than the window \(8 rows\)"
    ):
        LinearRidge(lookback=9).fit(w, [0])
    with pytest.raises(ValueError, match="alpha must be a number > 0, found 0"):
        LinearRidge(alpha=0)
    with pytest.raises(RuntimeError, match="LinearRidge is not fitted yet"):
        LinearRidge().predict(w, [0])


def test_every_forecast_baseline_survives_its_json_state(make_periodic_windows) -> None:
    import json

    from mfgtx.baselines import forecast_baseline

    w = make_periodic_windows()
    train = np.flatnonzero(w.lot != "L2")
    test = np.flatnonzero(w.lot == "L2")
    scaler = SensorScaler.fit(w, train)
    for b in (Naive(), SeasonalNaive(3), LinearRidge(lookback=4), TrainMeanForecast()):
        fitted = b.fit(w, train, scaler)
        state = json.loads(json.dumps(fitted.state(), allow_nan=False))  # strict JSON
        again = forecast_baseline(state)
        assert again.name == fitted.name
        np.testing.assert_allclose(again.predict(w, test), fitted.predict(w, test), rtol=1e-12)
    with pytest.raises(ValueError, match="not a forecast baseline's state"):
        forecast_baseline({"class": "LinearRidge", "params": {}, "fitted": {"mean_": [0.0]}})
    with pytest.raises(RuntimeError, match="not fitted yet"):
        LinearRidge().state()
