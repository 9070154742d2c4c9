"""Readers for the public benchmark data sets mfgtx is measured on (read in place, never copied).

NASA C-MAPSS (Saxena et al., PHM08): whitespace-separated text without a header, 26
columns per row: engine ``unit``, ``cycle``, three operating settings and 21 sensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["CMAPSS_COLUMNS", "CMAPSS_SENSORS", "cmapss_fleet", "read_cmapss"]

CMAPSS_COLUMNS: tuple[str, ...] = (
    "unit",
    "cycle",
    *(f"setting_{i}" for i in (1, 2, 3)),
    *(f"s_{i}" for i in range(1, 22)),
)
#: The 14 sensors that vary in FD001 (the other seven are constant or two-valued).
CMAPSS_SENSORS: tuple[str, ...] = tuple(
    f"s_{i}" for i in (2, 3, 4, 7, 8, 9, 11, 12, 13, 14, 15, 17, 20, 21)
)


def read_cmapss(path: str | Path) -> pd.DataFrame:
    """One C-MAPSS file (``train_FD001.txt.gz``, ``test_FD001.txt.gz`` ...) as a DataFrame."""
    return pd.read_csv(path, sep=r"\s+", header=None, names=list(CMAPSS_COLUMNS))


def cmapss_fleet(
    df: pd.DataFrame,
    *,
    labelled: bool = True,
    rul_cap: float | None = None,
    order: Sequence[int] | None = None,
) -> pd.DataFrame:
    """C-MAPSS engines placed one after another on one clock, for splitting by time.

    C-MAPSS has cycles, not calendar time: every engine's clock starts at cycle 1. This adds
    a ``time`` column as if the engines entered the test cell one after another, in unit
    order or in ``order`` (every unit once), one cycle per hour from 2000-01-01 UTC (an
    explicit assumption, not data: the engines are independent runs, so any order is as
    true as another, and a time split with the engines of a chosen fold placed last holds
    out exactly that fold). With ``labelled`` (run-to-failure files) it also adds ``rul``
    (cycles to failure, capped at ``rul_cap`` if given) and ``failed_at``, the time every
    cycle's RUL became known.

    Example:
        >>> df = pd.DataFrame({"unit": [1, 1, 2], "cycle": [1, 2, 1]})
        >>> out = cmapss_fleet(df)
        >>> out["time"].dt.hour.tolist(), out["rul"].tolist(), out["failed_at"].dt.hour.tolist()
        ([0, 1, 2], [1, 0, 0], [1, 1, 2])
        >>> cmapss_fleet(df, order=[2, 1])["time"].dt.hour.tolist()  # engine 2 goes first
        [1, 2, 0]
    """
    df = df.copy()
    lives = df.groupby("unit")["cycle"].max()
    life = df["unit"].map(lives)
    if order is not None:
        order = list(order)
        if sorted(order) != sorted(lives.index):  # also catches a unit listed twice
            missing = sorted(set(lives.index) - set(order))
            extra = sorted(set(order) - set(lives.index))
            raise ValueError(
                f"order must list every unit exactly once; missing {missing[:5]}, "
                f"not in the data {extra[:5]}, {len(order) - len(set(order))} repeated"
            )
        lives = lives.loc[order]
    first_hour = df["unit"].map(lives.cumsum().shift(fill_value=0))
    t0 = pd.Timestamp("2000-01-01T00:00:00Z")
    df["time"] = t0 + pd.to_timedelta(first_hour + df["cycle"] - 1, unit="h")
    if labelled:
        rul = life - df["cycle"]
        df["rul"] = rul if rul_cap is None else np.minimum(rul, rul_cap)
        df["failed_at"] = t0 + pd.to_timedelta(first_hour + life - 1, unit="h")
    return df
