"""Two bundles of one job on the same lots: their scores side by side, and where they disagree.

The frames are :func:`mfgtx.history.plant.trend`'s of each bundle over the same time range;
two rows are the same when they score the same lot and window end. They disagree when their
decisions differ, or when their values of a prediction are further apart than the wider of
their intervals' half-widths (with no interval: than ``tolerance``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["disagreements", "side_by_side"]


def side_by_side(a: pd.DataFrame, b: pd.DataFrame, column: str) -> pd.DataFrame:
    """The rows both frames score (same lot and window end), oldest first: ``time``,
    ``group``, ``lot``, ``window_end``, ``actual``, and per bundle ``a_``/``b_`` of
    ``column``, ``decision``, ``low`` and ``high``."""
    keep = ["lot", "window_end", column, "decision", "low", "high"]
    both = a[["time", "group", "actual", *keep]].merge(
        b[keep], on=["lot", "window_end"], suffixes=("_a", "_b")
    )
    renamed = {f"{c}_{s}": f"{s}_{c}" for c in keep[2:] for s in ("a", "b")}
    return both.rename(columns=renamed).sort_values("time").reset_index(drop=True)


def disagreements(both: pd.DataFrame, column: str, tolerance: float | None = None) -> pd.DataFrame:
    """The rows of :func:`side_by_side` where the bundles disagree, with ``difference``
    (``b`` minus ``a``) and ``why`` in words, largest difference first.

    ``tolerance``: how far apart values without an interval may be (default: a tenth of the
    range of both bundles' values; 0.1 for a probability, ``p_...``).
    """
    a, b = both[f"a_{column}"].astype(float), both[f"b_{column}"].astype(float)
    diff = b - a
    if tolerance is None:
        if column.startswith("p_"):
            tolerance = 0.1
        else:
            values = pd.concat([a, b]).dropna()
            tolerance = 0.1 * float(values.max() - values.min()) if len(values) else 0.0
    half = np.fmax(
        (both["a_high"].astype(float) - both["a_low"].astype(float)) / 2,
        (both["b_high"].astype(float) - both["b_low"].astype(float)) / 2,
    )
    allowed = half.where(half.notna(), tolerance)
    decided = both["a_decision"].notna() & both["b_decision"].notna()
    calls = decided & (both["a_decision"] != both["b_decision"])
    apart = diff.abs() > allowed
    why = np.where(
        calls,
        "decisions differ: " + both["a_decision"].astype(str) + " against "
        + both["b_decision"].astype(str),
        f"{column} differs by more than " + allowed.map(lambda x: f"{x:.3g}"),
    )  # fmt: skip
    out = both.assign(difference=diff, why=why)[calls | apart]
    return out.reindex(out["difference"].abs().sort_values(ascending=False).index)
