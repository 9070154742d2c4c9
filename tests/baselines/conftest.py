"""Small synthetic windows for the baseline tests: built by hand or through make_windows."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from mfgtx.data import ColumnMap, Windows, make_windows, read_table


@pytest.fixture(scope="module", autouse=True)
def _one_openmp_thread():
    """Gradient boosting on a few hundred rows: OpenMP threads only add overhead (10x on a
    busy 2-core runner); one thread keeps these tests fast. Module scope, so that the limit
    is lifted again before tests outside this folder run."""
    with threadpool_limits(1, "openmp"):
        yield


def hand_windows(
    values: np.ndarray,
    row_start: Sequence[int],
    window: int,
    y: np.ndarray | None,
    *,
    horizon: int = 0,
    sensors: Sequence[str] | None = None,
    targets: Sequence[str] = ("y",),
    lots: Sequence[str] | None = None,
) -> Windows:
    """Windows over ``values (R, C)`` starting at ``row_start``; times are row numbers."""
    starts = np.asarray(row_start, dtype=np.int64)
    values = np.asarray(values, dtype=np.float32)
    n = starts.size
    t = starts.astype(float)
    return Windows(
        values=values,
        row_start=starts,
        lot=np.array(lots if lots is not None else [f"L{i}" for i in range(n)], dtype=str),
        start=t,
        end=t + window - 1,
        label_time=t + window - 1 + horizon,
        y=None if y is None else np.asarray(y, dtype=np.float32),
        sensors=tuple(sensors or (f"s{j}" for j in range(values.shape[1]))),
        targets=tuple(targets),
        window=window,
        stride=window,
        horizon=horizon,
    )


def learnable_windows(
    n: int = 300, window: int = 8, *, seed: int = 0, classify: bool = False, rare: float = 0.15
) -> Windows:
    """``n`` disjoint windows of 3 noisy sensors; the target depends on the window's values.

    Regression: ``y = 3 * mean(s0) - 2 * (last(s1) - first(s1)) + noise``. Classification:
    ``y = 1`` (defect) for the top ``rare`` share of that score, so classes are imbalanced.
    """
    rng = np.random.default_rng(seed)
    level = rng.normal(size=(n, 1, 3))
    trend = rng.normal(size=(n, 1, 3)) * np.linspace(0, 1, window)[None, :, None]
    x = level + trend + 0.3 * rng.normal(size=(n, window, 3))  # (n, T, 3)
    score = 3 * x[:, :, 0].mean(axis=1) - 2 * (x[:, -1, 1] - x[:, 0, 1])
    if classify:
        y = (score > np.quantile(score, 1 - rare)).astype(np.float32)
    else:
        y = score + 0.2 * rng.normal(size=n)
    return hand_windows(x.reshape(n * window, 3), np.arange(n) * window, window, y[:, None])


def periodic_table_windows(
    period: int = 4, window: int = 8, horizon: int = 6, n_rows: int = 60, n_lots: int = 3
) -> Windows:
    """Forecast windows (through read_table/make_windows) of a pure periodic sensor."""
    rows = []
    for k in range(n_lots):
        for i in range(n_rows):
            rows.append(
                {
                    "lot": f"L{k}",
                    "t": float(i),
                    "wave": float(10 * k + [0.0, 2.0, 5.0, 1.0, 3.0, 4.0][i % period]),
                    "other": float(i),
                }
            )
    cols = ColumnMap(lot="lot", time="t", sensors=("wave", "other"))
    table = read_table(pd.DataFrame(rows), cols)
    return make_windows(table, window, stride=2, horizon=horizon, forecast=["wave"])


@pytest.fixture(scope="session")
def regression_windows() -> Windows:
    return learnable_windows()


@pytest.fixture(scope="session")
def classification_windows() -> Windows:
    return learnable_windows(400, classify=True, seed=1)


@pytest.fixture(scope="session")
def split_halves():
    """First 60 % of windows for training, the rest for testing."""

    def split(w: Windows) -> tuple[np.ndarray, np.ndarray]:
        cut = int(0.6 * len(w))
        return np.arange(cut), np.arange(cut, len(w))

    return split


@pytest.fixture(scope="session")
def make_hand_windows():
    return hand_windows


@pytest.fixture(scope="session")
def make_learnable_windows():
    return learnable_windows


@pytest.fixture(scope="session")
def make_periodic_windows():
    return periodic_table_windows
