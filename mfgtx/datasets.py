"""Readers for the public benchmark data sets mfgtx is measured on (read in place, never copied).

NASA C-MAPSS (Saxena et al., PHM08): whitespace-separated text without a header, 26
columns per row: engine ``unit``, ``cycle``, three operating settings and 21 sensors. The
official test files (``test_FD00x.txt``) stop each engine some time before it fails; the
matching ``RUL_FD00x.txt`` holds one number per line, the remaining life after the last
recorded cycle of the test engines in unit order (:func:`cmapss_test_truth`).
"""

from __future__ import annotations

import gzip
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "CMAPSS_COLUMNS",
    "CMAPSS_SENSORS",
    "cmapss_fleet",
    "cmapss_test_truth",
    "read_cmapss",
    "read_cmapss_rul",
]

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


def read_cmapss_rul(path: str | Path) -> np.ndarray:
    """A C-MAPSS ``RUL_FD00x.txt`` (or ``.txt.gz``): ``(U,)`` int64, one value per test unit.

    Each non-blank line holds one whole number of cycles >= 0 (surrounding spaces are fine).

    Raises:
        ValueError: naming the file and the line that is not such a number, or an empty file.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     p = Path(folder) / "RUL_FD001.txt"
        ...     _ = p.write_text("112 \\n98 \\n")
        ...     read_cmapss_rul(p).tolist()
        [112, 98]
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="ascii", errors="replace") as f:
        lines = f.read().splitlines()
    values = []
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text:
            continue
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not (math.isfinite(v) and v >= 0 and v == int(v)):
            raise ValueError(
                f"{path}, line {number}: expected one whole number of cycles >= 0, "
                f"found {text[:40]!r}"
            )
        values.append(int(v))
    if not values:
        raise ValueError(f"{path}: no RUL values (an empty file)")
    return np.array(values, dtype=np.int64)


def cmapss_test_truth(
    test: pd.DataFrame,
    rul: np.ndarray | Sequence[int] | str | Path,
    *,
    rul_cap: float | None = None,
    source: str = "the RUL file",
) -> pd.DataFrame:
    """The truth table of NASA's official test engines, one row per unit in unit order.

    Line ``i`` of the RUL file is the remaining life of the ``i``-th test unit (units sorted
    by id, as NASA numbers them ``1..U``) after its **last recorded cycle**, so a model is
    graded on the window that ends there.

    Args:
        test: the test file, e.g. ``read_cmapss("test_FD001.txt.gz")`` (``unit`` and
            ``cycle`` columns).
        rul: the RUL values, or the path of the RUL file (:func:`read_cmapss_rul`).
        rul_cap: cap the truth at this many cycles (e.g. 125, as the training target),
            or ``None`` for NASA's raw values.
        source: the RUL file's name, for messages (set from ``rul`` when it is a path).

    Returns:
        ``unit``, ``last_cycle`` (the unit's last recorded cycle), ``rul`` (at that cycle,
        capped if asked) and ``rul_raw`` (NASA's value).

    Raises:
        ValueError: the test file and the RUL file count different units.

    Example:
        >>> test = pd.DataFrame({"unit": [1, 1, 1, 2, 2], "cycle": [1, 2, 3, 1, 2]})
        >>> cmapss_test_truth(test, [140, 20], rul_cap=125).values.tolist()
        [[1, 3, 125, 140], [2, 2, 20, 20]]
    """
    if isinstance(rul, str | Path):
        source = str(rul)
        rul = read_cmapss_rul(rul)
    values = np.asarray(rul, dtype=np.int64)
    last = test.groupby("unit", sort=True)["cycle"].max()
    if len(last) != len(values):
        raise ValueError(
            f"the test data has {len(last)} units but {source} has {len(values)} values; "
            "line i of the RUL file is the RUL of the i-th test unit, so both must count "
            "the same engines"
        )
    capped = values if rul_cap is None else np.minimum(values, rul_cap)
    return pd.DataFrame(
        {
            "unit": last.index.to_numpy(),
            "last_cycle": last.to_numpy(),
            "rul": capped,
            "rul_raw": values,
        }
    )
