"""A tiny fleet under three operating conditions, for the regime tests.

Machines run one after another (so a time-ordered split needs no purging), each cycle in one
of three conditions told by two settings; the sensors jump with the condition and drift with
wear; ``rul`` counts down to the machine's last cycle; ``grade`` is the condition as a code.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: sensor levels per condition (rows) for the sensors ``a``, ``b``
LEVELS = np.array([[10.0, 100.0], [30.0, 60.0], [55.0, 20.0]])
SETTINGS = np.array([[0.0, 0.0], [20.0, 0.5], [40.0, 0.9]])


def fleet(n_lots: int = 10, rows: int = 40, seed: int = 0) -> pd.DataFrame:
    """``n_lots`` machines of ``rows`` cycles: lot, t, setting_1, setting_2, grade, a, b, rul."""
    rng = np.random.default_rng(seed)
    parts, start = [], pd.Timestamp("2026-01-01T00:00:00Z")
    for m in range(n_lots):
        cond = rng.integers(0, 3, rows)
        wear = np.linspace(0, 1, rows)[:, None] * np.array([2.0, -3.0])
        settings = SETTINGS[cond] + rng.normal(0, 0.01, (rows, 2))
        values = LEVELS[cond] + wear + rng.normal(0, 0.3, (rows, 2))
        parts.append(
            pd.DataFrame(
                {
                    "lot": f"M{m:02d}",
                    "t": start + pd.to_timedelta(np.arange(rows), "h"),
                    "setting_1": settings[:, 0],
                    "setting_2": settings[:, 1],
                    "grade": (cond + 1) * 10,
                    "a": values[:, 0],
                    "b": values[:, 1],
                    "rul": np.arange(rows)[::-1].astype(float),
                }
            )
        )
        start += pd.Timedelta(hours=rows + 1)
    return pd.concat(parts, ignore_index=True)
