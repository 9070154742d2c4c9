"""LotTimeSplit as scikit-learn users hold it: a plain feature matrix, times in groups or bound.

The estimator must see only its features, never the window times, and the folds must be the
ones ``split(windows)`` gives.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, check_cv, cross_val_score, cross_validate

from mfgtx.split import LotTimeSplit, audit


class WidthRecorder(RegressorMixin, BaseEstimator):
    """A mean regressor that records the width of every X it is fitted on."""

    widths: list[int] = []  # noqa: RUF012  (shared on purpose: clones record here too)

    def fit(self, X, y):
        WidthRecorder.widths.append(np.asarray(X).shape[1])
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


@pytest.fixture
def features(plant):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(len(plant), 4))
    return X, X @ np.array([1.0, 0.5, -1.0, 2.0]) + 0.1 * rng.normal(size=len(plant))


def test_cross_val_score_takes_the_window_times_in_groups(plant, to_frame, features) -> None:
    X, y = features
    times = to_frame(plant)
    cv = LotTimeSplit(3, test_size=1, gap="1h")
    out = cross_validate(Ridge(), X, y, groups=times, cv=cv, return_indices=True)
    expected = list(cv.split(plant))
    assert len(out["test_score"]) == 3 and np.all(np.isfinite(out["test_score"]))
    for (train, test), got_train, got_test in zip(
        expected, out["indices"]["train"], out["indices"]["test"], strict=True
    ):
        np.testing.assert_array_equal(got_train, train)
        np.testing.assert_array_equal(got_test, test)
    WidthRecorder.widths = []
    cross_val_score(WidthRecorder(), X, y, groups=times, cv=cv)
    assert WidthRecorder.widths == [4, 4, 4]  # the features only, never the times


def test_cross_val_score_takes_the_windows_themselves_in_groups(plant, features) -> None:
    """The Windows a user already holds, passed as groups, are the times too."""
    X, y = features
    cv = LotTimeSplit(3, test_size=1, gap="1h")
    out = cross_validate(Ridge(), X, y, groups=plant, cv=cv, return_indices=True)
    for (train, test), got_train, got_test in zip(
        cv.split(plant), out["indices"]["train"], out["indices"]["test"], strict=True
    ):
        np.testing.assert_array_equal(got_train, train)
        np.testing.assert_array_equal(got_test, test)


def test_grid_search_with_a_splitter_bound_to_the_windows(plant, features) -> None:
    X, y = features
    bound = LotTimeSplit(3, test_size=1, gap="1h", windows=plant)
    assert check_cv(bound) is bound and bound.get_n_splits() == 3
    for (a_train, a_test), (b_train, b_test) in zip(
        bound.split(X), LotTimeSplit(3, test_size=1, gap="1h").split(plant), strict=True
    ):
        np.testing.assert_array_equal(a_train, b_train)
        np.testing.assert_array_equal(a_test, b_test)
    search = GridSearchCV(Ridge(), {"alpha": [0.01, 100.0]}, cv=bound).fit(X, y)
    assert search.best_params_ == {"alpha": 0.01}
    assert repr(bound).endswith("windows=<Windows of 32 windows>)")


def test_the_folds_scikit_learn_used_pass_the_audit(plant, to_frame, features) -> None:
    X, y = features
    times = to_frame(plant)
    cv = LotTimeSplit(3, test_size=1, gap="1h")
    report = audit(times, list(cv.split(X, y, groups=times)), gap="1h")
    assert report.passed and len(report.folds) == 3
    assert report.summary["n_folds"] == 3


def test_x_must_have_one_row_per_window(plant, to_frame, features) -> None:
    X, _ = features
    with pytest.raises(ValueError, match="X has 31 rows but groups describe 32 windows"):
        next(LotTimeSplit(test_size=1).split(X[:-1], groups=to_frame(plant)))
    bound = LotTimeSplit(test_size=1, windows=plant)
    with pytest.raises(ValueError, match="but the windows bound to the splitter describe 32"):
        next(bound.split(X[:-1]))


def test_groups_tables_without_times_and_lots_that_differ_are_refused(plant, to_frame) -> None:
    X = np.zeros((len(plant), 2))
    with pytest.raises(ValueError, match=r"groups is a DataFrame without column\(s\) \['start'"):
        next(LotTimeSplit(test_size=1).split(X, groups=to_frame(plant)[["lot", "end"]]))
    wrong = np.array(plant.lot, dtype=object)
    wrong[3] = "L9"
    with pytest.raises(ValueError, match="groups must equal the lot of each window"):
        next(LotTimeSplit(test_size=1, windows=plant).split(X, groups=wrong))
