"""Operating regimes (:class:`mfgtx.data.Regimes`): fitted on training rows only, applied the
same way everywhere, saved as plain numbers."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import ColumnMap, RegimePlan, Regimes, make_windows, read_table
from tests.regimes_fleet import fleet

KMEANS = RegimePlan(columns=("setting_1", "setting_2"), clusters=3)
GRADE = RegimePlan(column="grade")


def _windows(frame: pd.DataFrame):
    cols = ColumnMap(
        "lot", "t", sensors=("a", "b", "setting_1", "setting_2", "grade"), targets=("rul",)
    )
    return make_windows(read_table(frame, cols), 8, stride=4)


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return fleet()


@pytest.fixture(scope="module")
def windows(frame):
    return _windows(frame)


def _train(windows) -> np.ndarray:
    return np.flatnonzero(np.isin(windows.lot, ["M00", "M01", "M02", "M03", "M04", "M05"]))


def _true_condition(windows) -> np.ndarray:
    return windows.values[:, windows.sensors.index("grade")].astype(int) // 10 - 1


def test_kmeans_finds_the_conditions_and_is_deterministic(windows) -> None:
    train = _train(windows)
    one, two = Regimes.fit(windows, train, KMEANS), Regimes.fit(windows, train, KMEANS)
    assert one == two
    regime, truth = one.assign(windows.values), _true_condition(windows)
    # every true condition maps to one regime and back (a permutation)
    pairs = set(zip(truth.tolist(), regime.tolist(), strict=True))
    assert len(pairs) == 3 and len({r for _, r in pairs}) == 3


def test_per_regime_statistics_are_those_of_the_training_rows(frame, windows) -> None:
    train = _train(windows)
    fitted = Regimes.fit(windows, train, KMEANS)
    rows = frame.iloc[windows.rows(train)]  # the table keeps the frame's order (sorted)
    regime = fitted.assign(windows.values[windows.rows(train)])
    for k in range(3):
        part = rows[regime == k]
        assert np.allclose(fitted.center[k][:2], part[["a", "b"]].mean(), atol=1e-4)
        assert np.allclose(fitted.scale[k][:2], part[["a", "b"]].std(ddof=0), atol=1e-4)
    # not those of every row
    everything = Regimes.fit(windows, np.arange(len(windows)), KMEANS)
    assert not np.allclose(everything.center, fitted.center)


def test_apply_normalises_within_each_regime_and_adds_one_hot_channels(windows) -> None:
    train = _train(windows)
    fitted = Regimes.fit(windows, train, KMEANS)
    model = fitted.apply(windows)
    assert model.sensors == ("a", "b", "grade", "regime_0", "regime_1", "regime_2")
    rows = windows.rows(train)
    regime = fitted.assign(windows.values[rows])
    x = model.values[rows]
    for k in range(3):
        assert np.allclose(x[regime == k, :2].mean(axis=0), 0, atol=1e-4)
        assert np.allclose(x[regime == k, :2].std(axis=0), 1, atol=1e-4)
        assert (x[:, 3 + k] == (regime == k)).all()
    # the windows themselves are unchanged: same rows, lots and times
    assert (model.row_start == windows.row_start).all() and (model.lot == windows.lot).all()


def test_the_record_round_trips_through_json(windows) -> None:
    for plan in (KMEANS, GRADE):
        fitted = Regimes.fit(windows, _train(windows), plan)
        again = Regimes.from_dict(json.loads(json.dumps(fitted.to_dict())))
        assert again == fitted
        assert np.array_equal(again.apply(windows).values, fitted.apply(windows).values)


def test_a_grade_unseen_in_training_is_told_apart(frame) -> None:
    frame = frame.copy()
    frame.loc[(frame["lot"] == "M08") & (frame.index % 5 == 0), "grade"] = 99
    windows = _windows(frame)
    fitted = Regimes.fit(windows, _train(windows), GRADE)
    assert fitted.labels == (10.0, 20.0, 30.0)
    (lot, value, n), *rest = fitted.unseen(windows)
    assert (lot, value, n, rest) == ("M08", "99", 8, [])  # the value in words
    model = fitted.apply(windows).values
    bad = windows.values[:, windows.sensors.index("grade")] == 99
    assert np.isnan(model[bad, :4]).all() and (model[bad, 4:] == 0).all()  # read as missing
    assert not np.isnan(model[~bad]).any()
    assert Regimes.fit(windows, _train(windows), KMEANS).unseen(windows) == []


def test_rows_without_settings_read_as_missing(frame) -> None:
    frame = frame.copy()
    frame.loc[3, ["setting_1", "setting_2"]] = np.nan
    frame.loc[5, "setting_1"] = np.nan  # one setting left: still assigned by the other
    windows = _windows(frame)
    fitted = Regimes.fit(windows, _train(windows), KMEANS)
    regime = fitted.assign(windows.values)
    assert regime[3] == -1 and regime[5] >= 0
    assert regime[5] == fitted.assign(_windows(fleet()).values)[5]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "give exactly one of column"),
        ({"column": "g", "columns": ("s",)}, "give exactly one of column"),
        ({"columns": ("s1", "s2")}, "clusters must be >= 2"),
        ({"columns": ("s1", "s1"), "clusters": 2}, "listed twice"),
        ({"column": "g", "clusters": 2}, "k-means needs columns"),
    ],
)
def test_plan_errors_name_the_field(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        RegimePlan(**kwargs)


def test_fit_refuses_missing_columns_and_too_many_clusters(windows) -> None:
    with pytest.raises(ValueError, match=r"\['altitude'\] are not among"):
        Regimes.fit(windows, _train(windows), RegimePlan(column="altitude"))
    with pytest.raises(ValueError, match="fewer than 7 distinct operating points"):
        Regimes.fit(windows, _train(windows), RegimePlan(columns=("grade",), clusters=7))


def _text(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.assign(grade=frame["grade"].map({10: "S355", 20: "S420 HT", 30: "X-30"}))


def _text_windows(text: pd.DataFrame):
    cols = ColumnMap(
        "lot", "t", sensors=("a", "b", "setting_1", "setting_2", "grade"), targets=("rul",),
        categories=("grade",),
    )  # fmt: skip
    return make_windows(read_table(text, cols), 8, stride=4)


def test_a_text_grade_is_a_regime_column_and_keeps_its_names(frame) -> None:
    windows = _text_windows(_text(frame))
    fitted = Regimes.fit(windows, _train(windows), GRADE)
    assert sorted(fitted.known) == ["S355", "S420 HT", "X-30"] and len(fitted.labels) == 3
    numeric = Regimes.fit(_windows(frame), _train(_windows(frame)), GRADE)
    assert sorted(fitted.center) == sorted(numeric.center)  # the same regimes, other codes
    again = Regimes.from_dict(json.loads(json.dumps(fitted.to_dict())))
    assert again == fitted and again.names == fitted.names
    v1 = {**numeric.to_dict(), "version": 1}
    v1.pop("names")
    assert Regimes.from_dict(v1).known == ["10", "20", "30"]  # a bundle of before reads

    new = _text(frame)
    new["grade"] = new["grade"].where(new["lot"] != "M08", "S500")
    (lot, value, n), *rest = fitted.unseen(_text_windows(new))
    assert (lot, value, n, rest) == ("M08", "S500", 40, [])


def test_a_new_name_that_shares_a_known_code_is_not_taken_for_it(frame) -> None:
    windows = _text_windows(_text(frame))
    fitted = Regimes.fit(windows, _train(windows), GRADE)
    code = fitted.labels[0]
    names = {**windows.categories["grade"], code: "S355 (new)"}  # forged: the same code
    forged = type(windows)(**{**windows.__dict__, "categories": {"grade": names}})
    grade = windows.values[:, windows.sensors.index("grade")]
    running = {
        lot
        for lot in windows.lots
        if (grade[windows.rows(np.flatnonzero(windows.lot == lot))] == code).any()
    }
    assert {lot for lot, *_ in fitted.unseen(forged)} == running and running
    assert fitted.unseen(windows) == []
