"""Reading a history: runs, newest first, and scores by time range (never the whole table)."""

from __future__ import annotations

import json

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore
from mfgtx.history.tables import RUNS, SCORES

__all__ = ["runs", "scores_between"]

_JSON = ("keys", "predictions", "flags")


def runs(store: HistoryStore, limit: int = 50) -> pd.DataFrame:
    """The latest ``limit`` runs, newest first: status, rows, bad lots, seconds."""
    query = sa.select(RUNS).order_by(RUNS.c.started_at.desc(), RUNS.c.run_id).limit(limit)
    with store.transaction() as conn:
        return pd.DataFrame(conn.execute(query).mappings().all(), columns=list(RUNS.c.keys()))


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
    return pd.DataFrame(rows, columns=list(SCORES.c.keys()))
