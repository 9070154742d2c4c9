"""make_windows: per-lot windows, label times, as_of rules; scaler; evaluation batches."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mfgtx.data import (
    ColumnMap,
    DataError,
    DataWarning,
    SensorScaler,
    evaluation_batches,
    evaluation_loader,
    make_windows,
    read_table,
)


def table(lengths=(10, 7, 4), *, label_delay_h: float = 5.0, nan_at: int | None = None):
    rows = []
    t0 = pd.Timestamp("2026-03-02T06:00:00Z")
    for k, n in enumerate(lengths):
        start = t0 + pd.Timedelta(hours=3 * k)
        lot_end = start + pd.Timedelta(minutes=n - 1)
        for i in range(n):
            rows.append(
                {
                    "lot": f"L{k}",
                    "timestamp": start + pd.Timedelta(minutes=i),
                    "temp": 100.0 * k + i,
                    "pres": float(i % 3),
                    "quality": float(k),
                    "inspected_at": lot_end + pd.Timedelta(hours=label_delay_h),
                }
            )
    df = pd.DataFrame(rows)
    if nan_at is not None:
        df.loc[nan_at, "temp"] = np.nan
    cols = ColumnMap(
        lot="lot",
        time="timestamp",
        sensors=("temp", "pres"),
        targets="quality",
        label_time="inspected_at",
    )
    return read_table(df, cols)


def test_windows_stay_within_lots_and_record_times() -> None:
    w = make_windows(table(), 4, stride=2)
    # lot sizes 10, 7, 4 -> starts 0,2,4,6 | 0,2 and 3 (L1's last window ends at its last
    # row, which the stride steps over) | 0
    assert w.lot.tolist() == ["L0"] * 4 + ["L1"] * 3 + ["L2"]
    assert w.row_start.tolist() == [0, 2, 4, 6, 10, 12, 13, 17]
    x, observed = w.features(np.arange(len(w)))
    assert x.shape == (8, 4, 2) and observed.all()
    assert x[4, :, 0].tolist() == [100, 101, 102, 103]  # lot L1's own rows
    assert w.end[0] - w.start[0] == np.timedelta64(3, "m")
    assert (w.label_time > w.end).all()  # inspection known hours after the lot ends
    assert w.y[:, 0].tolist() == [0, 0, 0, 0, 1, 1, 1, 2]
    grid = make_windows(table(), 4, stride=2, include_last=False)  # the stride grid alone
    assert grid.row_start.tolist() == [0, 2, 4, 6, 10, 12, 17]


def test_no_window_crosses_a_lot_boundary_for_any_stride() -> None:
    t = table((9, 5, 6, 8))
    bounds = t.lot_bounds()
    for window in (1, 3, 5):
        for stride in (1, 2, 4):
            w = make_windows(t, window, stride=stride)
            for lot, start in zip(w.lot, w.row_start, strict=True):
                a, b = bounds[lot]
                assert a <= start and start + window <= b


def test_missing_values_become_mask_not_fill() -> None:
    w = make_windows(table(nan_at=2), 4)
    x, observed = w.features([0, 1])
    assert not observed[0, 2, 0] and observed[0, 2, 1]
    assert x[0, 2, 0] == 0.0
    scaler = SensorScaler.fit(w, [0, 1, 2])
    xs, obs = w.features([0], scaler)
    assert not obs[0, 2, 0] and xs[0, 2, 0] == 0.0  # missing reads as the training mean


def test_forecast_windows() -> None:
    t = table((12,))
    w = make_windows(t, 5, stride=1, horizon=3, forecast=["temp"])
    assert len(w) == 12 - 5 - 3 + 1
    assert w.y.shape == (5, 3, 1)
    assert w.y[0, :, 0].tolist() == [5.0, 6.0, 7.0]  # the rows after the window
    # a forecast label is known when its last horizon row is measured (no label column wins)
    assert (w.label_time >= w.end).all()


def test_short_lots_error_or_skip_with_warning() -> None:
    t = table((10, 3, 8))
    with pytest.raises(
        DataError, match=r"1 lot\(s\) shorter than the model's window of 5 readings: L1 \(3 "
        r"readings\); use a shorter window, or leave such lots out \(windows.on_short: skip"
    ):  # fmt: skip
        make_windows(t, 5)
    with pytest.raises(DataError, match=r"shorter than the 5 readings of a window \(4\) and "
                       r"its forecast horizon \(1\)"):  # fmt: skip
        make_windows(t, 4, horizon=1)
    with pytest.warns(DataWarning, match=r"L1 \(3 readings\); left out"):
        w = make_windows(t, 5, on_short="skip")
    assert "L1" not in set(w.lot)


def test_as_of_refuses_labels_not_yet_known_and_late_features() -> None:
    t = table((10, 10), label_delay_h=5)
    # after lot L1 ended but before its inspection result came in
    as_of = "2026-03-02T09:30:00+00:00"
    with pytest.raises(DataError, match=r"lot L0\) has a label that became known after as_of"):
        make_windows(t, 4, as_of=as_of)
    with pytest.raises(DataError, match=r"lot L1\) has feature rows stamped after as_of"):
        make_windows(t, 4, as_of="2026-03-02T09:05:00+00:00")  # while L1 was still running
    w = make_windows(t, 4)
    known = w.known_at("2026-03-02T11:30:00+00:00")  # L0's inspection known, L1's not yet
    assert set(w.lot[known]) == {"L0"} and len(known) == 7


def test_bad_window_arguments() -> None:
    t = table()
    with pytest.raises(ValueError, match="window must be an integer >= 1, found 0"):
        make_windows(t, 0)
    with pytest.raises(ValueError, match="stride must be an integer >= 1"):
        make_windows(t, 2, stride=0)
    with pytest.raises(ValueError, match=r"forecast columns \['flow'\] are neither"):
        make_windows(t, 2, horizon=1, forecast=["flow"])
    with pytest.raises(ValueError, match="forecast columns need horizon > 0"):
        make_windows(t, 2, forecast=["temp"])


def test_scaler_fits_training_rows_only_and_round_trips_json() -> None:
    w = make_windows(table(), 4, stride=2)
    train = np.flatnonzero(w.lot == "L0")
    s = SensorScaler.fit(w, train)
    rows = w.rows(train)
    assert s.fit_rows == ((0, 10),) and np.array_equal(s.fitted_rows(), rows)
    temp = w.values[rows, 0]
    assert s.center[0] == pytest.approx(temp.mean()) and s.scale[0] == pytest.approx(temp.std())
    again = SensorScaler.from_dict(json.loads(json.dumps(s.to_dict())))
    assert again == s
    x = w.values[:5]
    np.testing.assert_allclose(s.inverse_transform(s.transform(x)), x, rtol=1e-5, atol=1e-4)
    robust = SensorScaler.fit(w, train, method="robust")
    assert robust.center[0] == pytest.approx(np.median(temp))
    with pytest.raises(ValueError, match="scaler state must have keys"):
        SensorScaler.from_dict({"sensors": ["temp"]})
    with pytest.raises(ValueError, match="fitted on 2 sensors"):
        s.transform(np.zeros((3, 5)))


def test_evaluation_batches_cover_every_window_once() -> None:
    batches = list(evaluation_batches(np.arange(103), 10))
    assert len(batches) == 11 and len(batches[-1]) == 3
    assert np.array_equal(np.concatenate(batches), np.arange(103))


def test_evaluation_loader_keeps_the_last_partial_batch_and_refuses_drop_last() -> None:
    data = torch.utils.data.TensorDataset(torch.arange(103))
    seen = torch.cat([b[0] for b in evaluation_loader(data, 10)])
    assert seen.tolist() == list(range(103))
    with pytest.raises(ValueError, match="drop_last=True would leave the last test windows"):
        evaluation_loader(data, 10, drop_last=True)
    with pytest.raises(ValueError, match="shuffle"):
        evaluation_loader(data, 10, shuffle=True)


def test_window_dataset_warns_when_forecast_targets_would_stay_unscaled() -> None:
    import warnings

    import pandas as pd
    import pytest

    from mfgtx.data import ColumnMap, DataWarning, SensorScaler, WindowDataset, make_windows
    from mfgtx.data import read_table as _read

    df = pd.DataFrame({"lot": ["A"] * 12, "t": range(12), "s": [float(i) for i in range(12)]})
    w = make_windows(_read(df, ColumnMap("lot", "t")), 4, horizon=2, forecast=("s",))
    scaler = SensorScaler.fit(w, range(len(w)))
    with pytest.warns(DataWarning, match="ForecastWindows"):
        WindowDataset(w, range(len(w)), scaler)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        WindowDataset(w, range(len(w)))  # no scaler: x and y in the same units


def test_history_windows_pad_before_the_lot_and_read_only_its_rows() -> None:
    t = table((10, 7, 4))  # rows 0-9, 10-16, 17-20
    w = make_windows(t, 8, min_rows=3)
    # every row from each lot's third on ends one window: 8 + 5 + 2
    assert w.lot.tolist() == ["L0"] * 8 + ["L1"] * 5 + ["L2"] * 2
    ends = w.row_start + w.lengths - 1
    assert ends.tolist() == [*range(2, 10), *range(12, 17), 19, 20]
    assert w.pad.tolist() == [5, 4, 3, 2, 1, 0, 0, 0, 5, 4, 3, 2, 1, 5, 4]
    assert w.y[:, 0].tolist() == [0.0] * 8 + [1.0] * 5 + [2.0] * 2  # the label at the last row
    x, observed = w.features(np.arange(len(w)))
    assert x.shape == (15, 8, 2)
    # the lot-L1 window with 4 steps of padding: missing there, then L1's own first rows
    k = 9
    assert not observed[k, :4].any() and observed[k, 4:].all()
    assert x[k, 4:, 0].tolist() == [100, 101, 102, 103]
    assert (x[k, :4] == 0).all()  # never the previous lot's values
    assert w.start[k] == t.frame["timestamp"].to_numpy("datetime64[ns]")[10]  # first real row
    # rows covered: real rows only (the scaler fits on them and the audit checks them)
    assert w.rows([k]).tolist() == list(range(10, 14))
    assert np.array_equal(w.rows(), np.arange(21))
    s = SensorScaler.fit(w, np.flatnonzero(w.lot == "L1"))
    assert s.fit_rows == ((10, 17),)


def test_history_windows_match_plain_windows_where_no_padding_is_needed() -> None:
    t = table((10, 7, 9))
    plain = make_windows(t, 5)
    hist = make_windows(t, 5, min_rows=2)
    full = np.flatnonzero(hist.pad == 0)
    assert np.array_equal(hist.row_start[full], plain.row_start)
    np.testing.assert_array_equal(hist.features(full)[0], plain.features(np.arange(len(plain)))[0])
    assert make_windows(t, 5, min_rows=5).pad.tolist() == [0] * len(plain)  # nothing to pad


def test_history_window_errors_and_short_lots() -> None:
    t = table((10, 2, 8))
    with pytest.raises(
        ValueError, match=r"min_rows must be an integer in \[1, window=4\], found 5"
    ):
        make_windows(t, 4, min_rows=5)
    with pytest.raises(ValueError, match="min_rows needs horizon=0"):
        make_windows(t, 4, min_rows=2, horizon=1)
    with pytest.raises(DataError, match=r"shorter than the 3 readings a lot needs before its "
                       r"first prediction \(min_rows\): L1 \(2 readings\)"):  # fmt: skip
        make_windows(t, 20, min_rows=3)
    with pytest.warns(DataWarning, match="L1"):
        w = make_windows(t, 20, min_rows=3, on_short="skip")
    assert sorted(set(w.lot)) == ["L0", "L2"] and (w.pad > 0).all()


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 15), min_size=1, max_size=5),
    window=st.integers(1, 12),
    stride=st.integers(1, 4),
    data=st.data(),
)
def test_history_window_invariants(lengths, window, stride, data) -> None:
    """On random lots: every window ends at one of its lot's rows and reads nothing else;
    padding plus real rows make the window; labels sit at the last real row; every row from
    a lot's ``min_rows``-th on, ``stride`` apart, ends a window; short lots are left out."""
    min_rows = data.draw(st.integers(1, window))
    t = table(tuple(lengths))
    if max(lengths) < min_rows:
        with pytest.raises(DataError, match="long enough"), pytest.warns(DataWarning):
            make_windows(t, window, stride=stride, min_rows=min_rows, on_short="skip")
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        w = make_windows(
            t, window, stride=stride, min_rows=min_rows, on_short="skip", include_last=False
        )
    bounds = t.lot_bounds()
    assert (w.pad + w.lengths == window).all() and (w.lengths >= min_rows).all()
    x, observed = w.features(np.arange(len(w)))
    for k, lot in enumerate(w.lot):
        a, b = bounds[lot]
        first, last = w.row_start[k], w.row_start[k] + w.lengths[k] - 1
        assert a <= first and last < b and (w.pad[k] == 0 or first == a)
        assert not observed[k, : w.pad[k]].any() and observed[k, w.pad[k] :].all()
        np.testing.assert_array_equal(
            x[k, w.pad[k] :, 0], t.frame["temp"].to_numpy()[first : last + 1]
        )
        assert w.y[k, 0] == t.frame["quality"].to_numpy()[last]
    for lot, (a, b) in bounds.items():
        ends = (w.row_start + w.lengths - 1)[w.lot == lot]
        expected = list(range(a + min_rows - 1, b, stride)) if b - a >= min_rows else []
        assert ends.tolist() == expected


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(1, 15), min_size=1, max_size=5),
    window=st.integers(1, 8),
    stride=st.integers(1, 5),
    horizon=st.integers(0, 3),
    data=st.data(),
)
def test_include_last_adds_each_lots_latest_window_and_keeps_the_grid(
    lengths, window, stride, horizon, data
) -> None:
    """With ``include_last`` (the default) every lot's last window ends at its last usable
    row (the last row, or ``horizon`` before it); every other window is the plain stride
    grid's (``include_last=False``), in order, so scores keyed by window end do not move;
    rows appended to a lot keep the earlier ends."""
    min_rows = data.draw(st.sampled_from([None, *range(1, window + 1)])) if not horizon else None
    t = table(tuple(lengths))
    need = window + horizon if min_rows is None else min_rows
    if max(lengths) < need:
        return
    kw = {"stride": stride, "horizon": horizon, "min_rows": min_rows, "on_short": "skip"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        grid = make_windows(t, window, include_last=False, **kw)
        full = make_windows(t, window, **kw)  # include_last is the default
    bounds = t.lot_bounds()
    last_row = full.row_start + (full.lengths if min_rows else window) - 1
    for lot in grid.lots:
        b = bounds[lot][1]
        ends, grid_ends = last_row[full.lot == lot], grid.end[grid.lot == lot]
        assert ends[-1] == b - 1 - horizon  # the latest usable row
        assert (np.diff(ends) > 0).all()
        got = full.end[full.lot == lot]
        assert len(got) - len(grid_ends) in (0, 1)
        np.testing.assert_array_equal(got[: len(grid_ends)], grid_ends)  # the grid is untouched
    # a lot that grows keeps the ends of the windows it had (all but the added last one)
    grown = table(tuple(n + 3 for n in lengths))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        later = make_windows(grown, window, **kw)
    for lot in grid.lots:
        before = full.end[full.lot == lot]
        after = later.end[later.lot == lot]
        n_grid = len(grid.end[grid.lot == lot])
        np.testing.assert_array_equal(after[:n_grid], before[:n_grid])


def test_stride_1_windows_need_nothing_added() -> None:
    t = table()
    plain, full = make_windows(t, 3, include_last=False), make_windows(t, 3)
    np.testing.assert_array_equal(plain.row_start, full.row_start)
