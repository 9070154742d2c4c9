"""Reading a history: runs, newest first, and scores by time range (never the whole table).

Runs list in the order they started: ``started_at`` (to the second), then the run id, which
sorts as runs start (:func:`~mfgtx.history.store.new_run_id`). Scores of one lot list by window
end as its values sort: as numbers where every window end is a number (cycles: 9 before 10),
else as text (ISO times sort as time does).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore, abandoned_reason
from mfgtx.history.tables import RUNS, SCORES

__all__ = ["by_window_end", "runs", "scored_lots", "scores_between"]

_JSON = ("keys", "predictions", "flags")


def runs(store: HistoryStore, limit: int = 50) -> pd.DataFrame:
    """The latest ``limit`` runs, newest first: status, rows, bad lots, seconds. A
    ``running`` run of this host whose process has ended lists as ``abandoned`` with the
    reason (:func:`~mfgtx.history.store.abandoned_reason`), also from a read-only history."""
    query = sa.select(RUNS).order_by(RUNS.c.started_at.desc(), RUNS.c.run_id.desc()).limit(limit)
    with store.transaction() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    for r in rows:
        why = abandoned_reason(r)
        if why is not None:
            r["status"], r["message"] = "abandoned", why
    return pd.DataFrame(rows, columns=list(RUNS.c.keys()))


def by_window_end(frame: pd.DataFrame, first: Sequence[str] = ("lot",)) -> pd.DataFrame:
    """``frame`` sorted by the ``first`` columns, then by ``window_end`` as its values sort:
    as numbers when every one is a number (cycle counts: ``"9"`` before ``"10"``), else as
    text (ISO 8601 times). The index is renumbered.

    >>> f = pd.DataFrame({"lot": ["M1", "M1", "M1"], "window_end": ["10", "9", "100"]})
    >>> by_window_end(f)["window_end"].tolist()
    ['9', '10', '100']
    """
    if frame.empty or "window_end" not in frame.columns:
        return frame.reset_index(drop=True)
    ends = frame["window_end"]
    numbers = pd.to_numeric(ends, errors="coerce")
    numeric = bool(numbers.notna().sum() == ends.notna().sum())
    key = numbers if numeric else ends.astype("string")
    order = frame.assign(_window_key=key).sort_values(
        [*first, "_window_key"], kind="stable", na_position="first"
    )
    return order.drop(columns="_window_key").reset_index(drop=True)


def scores_between(
    store: HistoryStore, start: str, end: str, line: str | None = None
) -> pd.DataFrame:
    """The scores of ``start <= scored_at < end`` (ISO 8601 UTC text), oldest first;
    ``line``: only rows whose keys hold ``line`` as their ``line`` value. ``keys``,
    ``predictions`` and ``flags`` are decoded from JSON."""
    query = (
        sa.select(SCORES)
        .where(SCORES.c.scored_at >= start, SCORES.c.scored_at < end)
        .order_by(SCORES.c.scored_at, SCORES.c.lot, SCORES.c.window_end)
    )
    with store.transaction() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    for r in rows:
        for c in _JSON:
            r[c] = json.loads(r[c])
    if line is not None:
        rows = [r for r in rows if str(r["keys"].get("line")) == line]
    return by_window_end(pd.DataFrame(rows, columns=list(SCORES.c.keys())),
                         ("scored_at", "lot"))  # fmt: skip


def scored_lots(store: HistoryStore, lots: Sequence[str]) -> set[str]:
    """The lots of ``lots`` that have at least one score in the history."""
    found: set[str] = set()
    wanted = list(dict.fromkeys(str(x) for x in lots))
    with store.transaction() as conn:
        for start in range(0, len(wanted), 500):
            part = wanted[start : start + 500]
            query = sa.select(SCORES.c.lot).where(SCORES.c.lot.in_(part)).distinct()
            found.update(str(x) for x in conn.execute(query).scalars())
    return found
