"""The findings of one ``mfgtx score`` run: flagged lots and predictions beyond a limit.

A lot (or machine) is judged by its latest scored window in the run: the lot is ``flagged``
when that window's ``decision`` is not ``good``, and ``limit:<column>`` when the window's
prediction ``<column>`` (``rul_cycles``, ``p_bad``) is beyond the job's ``limits.<column>``
(:meth:`~mfgtx.jobfile.limits.Limit.breach`). Every lot the run scored is a checked
subject: an alert of one of them that the run no longer finds is cleared. A limit on a
sensor (not a prediction column) is the watch's, not the score's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from mfgtx.history.findings import Finding
from mfgtx.jobfile.limits import Limit

__all__ = ["score_findings", "subject_of"]


def _text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, pd.Timestamp):
        return value.isoformat()
    return str(value)


def _number(value: Any) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def subject_of(row: Mapping[str, Any], lot_name: str, extra_keys: Sequence[str]) -> str:
    """A scored row's subject in plant words: its data keys, then its lot under the name
    the data gives it (``line L3, lot L3-017``; ``machine M07``).

    Example:
        >>> subject_of({"line": "L3", "lot": "L3-017"}, "lot", ["line"])
        'line L3, lot L3-017'
        >>> subject_of({"lot": "M07"}, "machine", [])
        'machine M07'
    """
    parts = [f"{k} {_text(row[k])}" for k in extra_keys if k in row and k != "lot"]
    if "lot" in row:
        parts.append(f"{lot_name} {_text(row['lot'])}")
    return ", ".join(parts)


def score_findings(
    rows: pd.DataFrame,
    *,
    lot_name: str = "lot",
    extra_keys: Sequence[str] = (),
    limits: Mapping[str, Limit] | None = None,
) -> tuple[list[Finding], list[str]]:
    """``(findings, checked subjects)`` of a score run's output ``rows``.

    Args:
        rows: the run's output rows (``lot``, ``window_end``, ``decision``, predictions).
        lot_name: what the data calls a lot (``columns.lot``: ``lot``, ``machine``).
        extra_keys: the data's key columns (``line``), named in each subject.
        limits: the job's ``limits:`` by column.

    Example:
        >>> from mfgtx.jobfile.limits import Limit
        >>> rows = pd.DataFrame({"lot": ["M07", "M07", "M08"], "window_end": [10, 20, 20],
        ...                      "rul_cycles": [40.0, 22.0, 80.0]})
        >>> found, checked = score_findings(rows, lot_name="machine",
        ...                                 limits={"rul_cycles": Limit(alarm_below=30)})
        >>> [(f.subject, f.reason) for f in found]
        [('machine M07', 'limit:rul_cycles')]
        >>> print(found[0].message)
        rul_cycles 22 is below the alarm limit 30 (window ending 20)
        >>> checked
        ['machine M07', 'machine M08']
    """
    limits = limits or {}
    if "lot" not in rows.columns or not len(rows):
        return [], []
    extra = [k for k in extra_keys if k in rows.columns and k != "lot"]
    latest = rows
    if "window_end" in rows.columns:
        try:
            latest = rows.sort_values("window_end", kind="stable")
        except TypeError:  # window ends of mixed types: the output's own order
            latest = rows
    latest = latest.groupby([*extra, "lot"], sort=False, dropna=False).tail(1)
    findings: list[Finding] = []
    checked: list[str] = []
    for row in latest.to_dict("records"):
        subject = subject_of(row, lot_name, extra)
        checked.append(subject)
        end = row.get("window_end")
        when = "" if end is None or end != end else f" (window ending {_text(end)})"
        decision = row.get("decision")
        if isinstance(decision, str) and decision and decision != "good":
            p = _number(row.get("p_bad"))
            chance = "" if p is None else f", p_bad {p:.2f}"
            findings.append(Finding(subject, "flagged", f"decided {decision}{chance}{when}"))
        for column, limit in limits.items():
            if column not in row:
                continue
            value = _number(row[column])
            breach = None if value is None else limit.breach(value)
            if breach is not None:
                findings.append(Finding(subject, f"limit:{column}", f"{column} {breach}{when}"))
    return findings, sorted(set(checked), key=checked.index)
