"""A table of leak cases, each with the verdict the audit must give.

Written from the question each case asks, not from the audit's code: the scalers are fitted
here (ours and scikit-learn's) on rows chosen here, forged records are built by hand, and the
splits are honest, shuffled, tuples, folds or hand-made frames. The verdict is
``("pass", not_checked)``, ``("fail", failed_checks)`` or ``("error", message)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import GroupKFold, KFold
from sklearn.preprocessing import MinMaxScaler, RobustScaler, StandardScaler

from mfgtx.data import SensorScaler, Windows
from mfgtx.split import LeakageError, LotTimeSplit, audit

NO_SCALER = ("scaler_train_only",)


@pytest.fixture(scope="module")
def drift(make_windows, lots_in_sequence) -> Windows:
    """8 sequential lots whose sensors drift from lot to lot (so every set's statistics
    differ), with a few missing readings; windows of 3 rows, stride 1 (rows overlap)."""
    w = make_windows(lots_in_sequence(8), window=3, stride=1)
    rng = np.random.default_rng(7)
    lot_of_row = np.repeat(np.arange(8), 10)  # 10 rows per lot, one lot after another
    values = rng.normal(size=(80, 2)) * (1.0 + lot_of_row[:, None]) + 5.0 * lot_of_row[:, None]
    values[[3, 41, 77], [0, 1, 0]] = np.nan
    return dataclasses.replace(w, values=values.astype(np.float32))


@pytest.fixture(scope="module")
def split(drift):
    return next(LotTimeSplit(test_size=2, val_size=1, gap="1h").split_sets(drift))


def rows_of(w: Windows, idx) -> np.ndarray:
    """Table rows the windows ``idx`` read (each window: ``window`` rows from its start)."""
    return np.unique(np.concatenate([np.arange(s, s + w.window) for s in w.row_start[idx]]))


def rows_frame(w: Windows, rows: np.ndarray) -> np.ndarray:
    return w.values[rows].astype(np.float64)


def stacked(w: Windows, idx) -> np.ndarray:
    """The windows' rows stacked, NaN kept: a row appears once per window that reads it."""
    return np.concatenate([w.values[s : s + w.window] for s in w.row_start[idx]]).astype(float)


def sensor(w: Windows, idx, method: str = "standard") -> SensorScaler:
    return SensorScaler.fit(w, np.asarray(idx), method=method)


class Moments:
    """Not a scikit-learn class: any object holding mean_ and scale_."""

    def __init__(self, x: np.ndarray) -> None:
        self.mean_ = np.nanmean(x, 0)
        self.scale_ = np.nanstd(x, 0)


class FrameMoments:
    """A hand-made scaler from pandas: ``DataFrame.std`` is the sample one (ddof=1)."""

    def __init__(self, x: np.ndarray) -> None:
        frame = pd.DataFrame(x, columns=["s0", "s1"])
        self.mean_, self.scale_ = frame.mean().to_numpy(), frame.std().to_numpy()


def everything(w: Windows) -> np.ndarray:
    return np.arange(len(w))


# case: (name, build(w, sets) -> (X, sets, kwargs), verdict)
Case = tuple[str, Callable[[Windows, Any], tuple[Any, Any, dict[str, Any]]], tuple]


def with_scaler(make: Callable[[Windows, Any], Any]) -> Callable:
    return lambda w, s: (w, s, {"scaler": make(w, s)})


SCALER_CASES: list[Case] = [
    ("SensorScaler fitted on the training windows",
     with_scaler(lambda w, s: sensor(w, s.train)), ("pass", ())),
    ("SensorScaler fitted on all windows (its record says so)",
     with_scaler(lambda w, s: sensor(w, everything(w))), ("fail", ("scaler_train_only",))),
    ("forged: statistics of all rows, the honest scaler's fit_rows",
     with_scaler(lambda w, s: dataclasses.replace(
         sensor(w, everything(w)), fit_rows=sensor(w, s.train).fit_rows)),
     ("fail", ("scaler_train_only",))),
    ("forged: statistics of all rows, no fit_rows",
     with_scaler(lambda w, s: dataclasses.replace(sensor(w, everything(w)), fit_rows=())),
     ("fail", ("scaler_train_only",))),
    ("honest statistics, no fit_rows (an old bundle)",
     with_scaler(lambda w, s: dataclasses.replace(sensor(w, s.train), fit_rows=())),
     ("pass", ())),
    ("robust SensorScaler fitted on the training windows",
     with_scaler(lambda w, s: sensor(w, s.train, "robust")), ("pass", ())),
    ("forged robust: all rows' median and IQR, honest fit_rows",
     with_scaler(lambda w, s: dataclasses.replace(
         sensor(w, everything(w), "robust"), fit_rows=sensor(w, s.train).fit_rows)),
     ("fail", ("scaler_train_only",))),
    ("SensorScaler fitted on the first training lot only (a subset, recorded)",
     with_scaler(lambda w, s: sensor(w, s.train[w.lot[s.train] == "L0"])), ("pass", ())),
    ("StandardScaler fitted on the training rows",
     with_scaler(lambda w, s: StandardScaler().fit(rows_frame(w, rows_of(w, s.train)))),
     ("pass", ())),
    ("StandardScaler fitted on all rows",
     with_scaler(lambda w, s: StandardScaler().fit(w.values)), ("fail", ("scaler_train_only",))),
    ("StandardScaler fitted on the training and test rows",
     with_scaler(lambda w, s: StandardScaler().fit(
         rows_frame(w, rows_of(w, np.r_[s.train, s.test])))), ("fail", ("scaler_train_only",))),
    ("StandardScaler fitted on the training and validation rows",
     with_scaler(lambda w, s: StandardScaler().fit(
         rows_frame(w, rows_of(w, np.r_[s.train, s.val])))), ("fail", ("scaler_train_only",))),
    ("StandardScaler fitted on the training rows plus one test row",
     with_scaler(lambda w, s: StandardScaler().fit(
         rows_frame(w, np.r_[rows_of(w, s.train), rows_of(w, s.test)[:1]]))),
     ("fail", ("scaler_train_only",))),
    ("StandardScaler fitted on the stacked training windows (rows repeated)",
     with_scaler(lambda w, s: StandardScaler().fit(stacked(w, s.train))), ("pass", ())),
    ("StandardScaler(with_mean=False) on the training rows",
     with_scaler(lambda w, s: StandardScaler(with_mean=False).fit(
         rows_frame(w, rows_of(w, s.train)))), ("pass", ())),
    ("StandardScaler(with_mean=False) on all rows",
     with_scaler(lambda w, s: StandardScaler(with_mean=False).fit(w.values)),
     ("fail", ("scaler_train_only",))),
    ("StandardScaler on a DataFrame of the training rows, columns swapped (matched by name)",
     with_scaler(lambda w, s: StandardScaler().fit(
         pd.DataFrame(rows_frame(w, rows_of(w, s.train)), columns=["s0", "s1"])[["s1", "s0"]])),
     ("pass", ())),
    ("StandardScaler on part of the training rows (no record: cannot be shown honest)",
     with_scaler(lambda w, s: StandardScaler().fit(rows_frame(w, rows_of(w, s.train)[:12]))),
     ("fail", ("scaler_train_only",))),
    ("RobustScaler fitted on the training rows",
     with_scaler(lambda w, s: RobustScaler().fit(rows_frame(w, rows_of(w, s.train)))),
     ("pass", ())),
    ("RobustScaler(unit_variance, quantile_range=(10, 90)) on the training rows",
     with_scaler(lambda w, s: RobustScaler(unit_variance=True, quantile_range=(10, 90)).fit(
         rows_frame(w, rows_of(w, s.train)))), ("pass", ())),
    ("RobustScaler on the stacked training windows",
     with_scaler(lambda w, s: RobustScaler().fit(stacked(w, s.train))), ("pass", ())),
    ("RobustScaler fitted on all rows",
     with_scaler(lambda w, s: RobustScaler().fit(w.values)), ("fail", ("scaler_train_only",))),
    ("an object with mean_ and scale_ of the training rows",
     with_scaler(lambda w, s: Moments(w.values[rows_of(w, s.train)])), ("pass", ())),
    ("an object with mean_ and scale_ of all rows",
     with_scaler(lambda w, s: Moments(w.values)), ("fail", ("scaler_train_only",))),
    ("pandas mean and sample std (ddof=1) of the training rows",
     with_scaler(lambda w, s: FrameMoments(w.values[rows_of(w, s.train)])), ("pass", ())),
    ("pandas mean and sample std (ddof=1) of all rows",
     with_scaler(lambda w, s: FrameMoments(w.values)), ("fail", ("scaler_train_only",))),
    ("SensorScaler fitted on the training windows, audited against a DataFrame",
     lambda w, s: (frame_of(w, True), s, {"scaler": sensor(w, s.train)}),
     ("error", "the scaler check needs X to be a mfgtx.data.Windows")),
    ("MinMaxScaler: not a kind the audit can recompute",
     with_scaler(lambda w, s: MinMaxScaler().fit(w.values)),
     ("error", "cannot audit a scaler of type MinMaxScaler")),
    ("a StandardScaler never fitted",
     with_scaler(lambda w, s: StandardScaler()), ("error", "StandardScaler is not fitted")),
    ("a scaler fitted on 3 columns for 2 sensors",
     with_scaler(lambda w, s: StandardScaler().fit(np.zeros((4, 3)))),
     ("error", "holds 3 features but the windows have 2 sensors")),
]  # fmt: skip


def frame_of(w: Windows, label_time: bool) -> pd.DataFrame:
    cols = {"lot": w.lot, "start": w.start, "end": w.end}
    return pd.DataFrame(cols | ({"label_time": w.label_time} if label_time else {}))


def lots(w: Windows, *names: str) -> np.ndarray:
    return np.flatnonzero(np.isin(w.lot, names))


def shuffled(w: Windows) -> tuple[np.ndarray, np.ndarray]:
    order = np.random.default_rng(0).permutation(len(w))
    return np.sort(order[: len(w) // 2]), np.sort(order[len(w) // 2 :])


SPLIT_CASES: list[Case] = [
    ("our SplitSets", lambda w, s: (w, s, {}), ("pass", NO_SCALER)),
    ("honest (train, test) tuple",
     lambda w, s: (w, (lots(w, "L0", "L1", "L2"), lots(w, "L5", "L6")), {"gap": "1h"}),
     ("pass", NO_SCALER)),
    ("honest (train, val, test) tuple",
     lambda w, s: (w, (lots(w, "L0", "L1"), lots(w, "L3"), lots(w, "L5")), {"gap": "1h"}),
     ("pass", NO_SCALER)),
    ("shuffled (train, test) tuple",
     lambda w, s: (w, shuffled(w), {"gap": "1h"}),
     ("fail", ("lot_disjoint", "no_overlap", "time_order_gap", "label_availability"))),
    ("train lots after the test lots",
     lambda w, s: (w, (lots(w, "L5", "L6"), lots(w, "L0", "L1")), {"gap": "0s"}),
     ("fail", ("time_order_gap", "label_availability"))),
    ("folds of LotTimeSplit(3).split",
     lambda w, s: (w, list(LotTimeSplit(3, test_size=1, gap="1h").split(w)), {"gap": "1h"}),
     ("pass", NO_SCALER)),
    ("folds of LotTimeSplit(3).split_sets, one scaler per fold",
     lambda w, s: (w, list(f := list(LotTimeSplit(3, test_size=1).split_sets(w))),
                   {"scaler": [sensor(w, x.train) for x in f]}), ("pass", ())),
    ("folds of LotTimeSplit(3).split_sets, one scaler fitted on all rows",
     lambda w, s: (w, LotTimeSplit(3, test_size=1).split_sets(w),
                   {"scaler": sensor(w, everything(w))}), ("fail", ("scaler_train_only",))),
    ("folds of shuffled KFold",
     lambda w, s: (w, KFold(4, shuffle=True, random_state=0).split(np.zeros(len(w))),
                   {"gap": "0s"}),
     ("fail", ("lot_disjoint", "no_overlap", "time_order_gap", "label_availability"))),
    ("folds of GroupKFold by lot (trains on later lots)",
     lambda w, s: (w, list(GroupKFold(4).split(np.zeros(len(w)), groups=w.lot)), {"gap": "0s"}),
     ("fail", ("time_order_gap", "label_availability"))),
    ("hand-made frame without label times, honest",
     lambda w, s: (frame_of(w, False), (lots(w, "L0", "L1"), lots(w, "L4")), {"gap": "1h"}),
     ("pass", ("label_availability", "scaler_train_only"))),
    ("hand-made frame without label times, a training window ends after the test start",
     lambda w, s: (frame_of(w, False), (lots(w, "L0", "L4"), lots(w, "L2")), {"gap": "0s"}),
     ("fail", ("time_order_gap", "label_availability"))),
    ("hand-made frame with label times, honest",
     lambda w, s: (frame_of(w, True), (lots(w, "L0", "L1"), lots(w, "L4")), {"gap": "1h"}),
     ("pass", NO_SCALER)),
]  # fmt: skip


def verdict(X: Any, sets: Any, kwargs: dict[str, Any]) -> tuple:
    try:
        report = audit(X, sets, strict=False, **kwargs)
    except ValueError as err:
        assert not isinstance(err, LeakageError)
        return ("error", str(err))
    if report.passed:
        return ("pass", report.unchecked)
    return ("fail", report.failed)


@pytest.mark.parametrize(("name", "build", "expected"), SCALER_CASES + SPLIT_CASES,
                         ids=[c[0] for c in SCALER_CASES + SPLIT_CASES])  # fmt: skip
def test_leak_case(drift, split, name: str, build, expected: tuple) -> None:
    got = verdict(*build(drift, split))
    if expected[0] == "error":
        assert got[0] == "error" and expected[1] in got[1], got
    else:
        assert got == expected, got


def test_a_failed_scaler_check_says_which_rows_the_statistics_came_from(drift, split) -> None:
    forged = dataclasses.replace(sensor(drift, everything(drift)), fit_rows=())
    report = audit(drift, split, scaler=forged, strict=False)
    detail = next(c for c in report.checks if c.name == "scaler_train_only").detail
    assert "does not hold the statistics of the 50 training rows" in detail
    assert "They are those of the rows of the train and val and test windows" in detail
    on_test = StandardScaler().fit(
        rows_frame(drift, rows_of(drift, np.r_[split.train, split.test]))
    )
    detail = next(
        c.detail
        for c in audit(drift, split, scaler=on_test, strict=False).checks
        if c.name == "scaler_train_only"
    )
    assert "train and test windows" in detail


def test_strict_audit_raises_on_a_forged_scaler_and_passes_an_honest_one(drift, split) -> None:
    forged = dataclasses.replace(
        sensor(drift, everything(drift)), fit_rows=sensor(drift, split.train).fit_rows
    )
    with pytest.raises(LeakageError, match="scaler_train_only: the sensor scaling"):
        audit(drift, split, scaler=forged)
    assert audit(
        drift, split, scaler=StandardScaler().fit(drift.values[rows_of(drift, split.train)])
    )
