"""The audit's ``regimes_train_only`` check: operating regimes fitted on training rows only.

A :class:`~mfgtx.data.Regimes` record (its regime values or k-means centroids, the settings'
scaling and each regime's sensor statistics) is recomputed from the training windows' rows
(:meth:`~mfgtx.data.Regimes.recomputed`) and must match: a clustering whose centroids are
means over validation or test rows too, or per-regime statistics that saw them, fails.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mfgtx.data.regimes import Regimes
from mfgtx.data.windows import Windows

__all__ = ["regimes_check"]

_PARTS = (
    ("labels", "the regime values"),
    ("setting_center", "the settings' centre"),
    ("setting_scale", "the settings' scale"),
    ("centroids", "the cluster centroids"),
    ("center", "the per-regime sensor centres"),
    ("scale", "the per-regime sensor scales"),
)


def _apart(held: Regimes, found: Regimes) -> tuple[str, str] | None:
    """The first part of ``held`` that ``found`` does not reproduce, and how, or ``None``."""
    for name, words in _PARTS:
        a = np.asarray(getattr(held, name), dtype=np.float64)
        b = np.asarray(getattr(found, name), dtype=np.float64)
        if a.shape != b.shape:
            return (
                words,
                f"{words}: {a.size} held ({a.tolist()}), the training rows give {b.size} "
                f"({b.tolist()})",
            )
        tol = 1e-9 * np.maximum(1.0, np.abs(np.nan_to_num(b)))
        close = (np.abs(a - b) <= tol) | (np.isnan(a) & np.isnan(b))
        if not close.all():
            at = np.unravel_index(int(np.flatnonzero(~close.reshape(-1))[0]), a.shape)
            where = ""
            if name in ("center", "scale", "centroids"):
                col = held.sensors[at[1]] if name != "centroids" else held.settings[at[1]]
                where = f" (regime {at[0]}, {col})"
            elif a.ndim:
                where = f" ({held.settings[at[0]]})" if name.startswith("setting") else ""
            return words, f"{words}{where}: held {a[at]:.6g}, training rows give {b[at]:.6g}"
    return None


def regimes_check(
    regimes: Regimes, windows: Windows, sets: dict[str, np.ndarray]
) -> tuple[bool, str, tuple[dict[str, Any], ...]]:
    """Whether ``regimes`` holds what its plan fitted on the training rows gives.

    Args:
        regimes: the fitted record.
        windows: the audited (raw) windows, whose columns the record reads.
        sets: every set's window positions, ``train`` first.

    Returns:
        ``(passed, detail, examples)``.

    Raises:
        ValueError: the record reads other columns than the windows have.
    """
    if not isinstance(regimes, Regimes):
        raise ValueError(f"regimes must be a mfgtx.data.Regimes, found {type(regimes).__name__}")
    if tuple(windows.sensors) != regimes.inputs:
        raise ValueError(
            f"the regimes were fitted on columns {list(regimes.inputs)}, the audited windows "
            f"have {list(windows.sensors)}"
        )
    train_rows = windows.rows(sets["train"])
    how = "read from" if regimes.plan.method == "column" else "grouped by similar settings of"
    what = f"{regimes.n_regimes} operating regimes {how} {', '.join(regimes.settings)}"
    problem = _apart(regimes, regimes.recomputed(windows, train_rows))
    if problem is None:
        return (
            True,
            f"the {what} and their per-regime statistics are those of the {train_rows.size} "
            "training rows, recomputed",
            (),
        )
    words, detail = problem
    others = [n for n in ("val", "test") if n in sets and sets[n].size]
    candidates = [
        (f"training and {' and '.join(c)} rows", [sets["train"], *(sets[n] for n in c)])
        for c in ([n] for n in others)
    ]
    if len(others) == 2:
        candidates.append(("training, validation and test rows", [sets[n] for n in _sets(sets)]))
    candidates.append(("rows of every window", [np.arange(len(windows))]))
    found = (
        "They match neither the training rows plus validation or test rows nor every window: "
        "they were fitted on other rows."
    )
    for label, parts in candidates:
        rows = windows.rows(np.concatenate(parts))
        if _apart(regimes, regimes.recomputed(windows, rows)) is None:
            found = f"They are those of the {label}: the fit saw rows outside training."
            break
    return (
        False,
        f"the {what} do not hold the statistics of the {train_rows.size} training rows: "
        f"{detail}. {found} Refit them on the training rows only",
        ({"part": words, "detail": detail},),
    )


def _sets(sets: dict[str, np.ndarray]) -> list[str]:
    return [n for n in ("train", "val", "test") if n in sets]
