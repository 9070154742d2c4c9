"""compare refuses to judge a model against no baseline at all."""

from __future__ import annotations

import pytest

from mfgtx.baselines import compare, fit_baselines


@pytest.mark.parametrize("empty", [[], ()])
def test_an_empty_baseline_list_is_refused(regression_windows, split_halves, empty) -> None:
    w = regression_windows
    train, test = split_halves(w)
    with pytest.raises(ValueError, match="baselines is empty: a model is judged against at least"):
        compare("regression", w, test, w.y[test], empty)
    with pytest.raises(ValueError, match="baselines is empty"):
        compare("regression", w, test, w.y[test], empty, train_idx=train)
    report = compare("regression", w, test, w.y[test], fit_baselines(w, train, "regression")[:1])
    assert len(report.baselines) == 1  # one baseline is enough
