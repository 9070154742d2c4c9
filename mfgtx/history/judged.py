"""A bundle's scores whose truth has arrived: what the watch judges a model on.

Each score is joined to the truth of its own window end, else of its lot as a whole
(``truth_of_window`` says which); only scores with a truth are returned, oldest first,
optionally from a time on (never the whole table of every bundle).
"""

from __future__ import annotations

import json

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore
from mfgtx.history.tables import SCORES, TRUTH

__all__ = ["judged_scores"]

_COLUMNS = [
    "lot",
    "window_end",
    "scored_at",
    "predictions",
    "interval_low",
    "interval_high",
    "decision",
    "truth",
    "truth_of_window",
]


def judged_scores(
    store: HistoryStore, bundle_id: str, target: str, *, since: str | None = None
) -> pd.DataFrame:
    """The scores of ``bundle_id`` (scored at ``since`` or later, ISO 8601 UTC text) with the
    truth of ``target``: columns ``lot``, ``window_end``, ``scored_at``, ``predictions`` (a
    dict), ``interval_low``, ``interval_high``, ``decision``, ``truth`` (text) and
    ``truth_of_window`` (``True``: the truth of that window end, ``False``: of the lot)."""
    window = TRUTH.alias("t_window")
    whole = TRUTH.alias("t_lot")
    query = (
        sa.select(
            SCORES.c.lot,
            SCORES.c.window_end,
            SCORES.c.scored_at,
            SCORES.c.predictions,
            SCORES.c.interval_low,
            SCORES.c.interval_high,
            SCORES.c.decision,
            sa.func.coalesce(window.c.value, whole.c.value).label("truth"),
            window.c.value.is_not(None).label("truth_of_window"),
        )
        .select_from(
            SCORES.outerjoin(
                window,
                sa.and_(
                    window.c.lot == SCORES.c.lot,
                    window.c.window_end == SCORES.c.window_end,
                    window.c.target == target,
                ),
            ).outerjoin(
                whole,
                sa.and_(
                    whole.c.lot == SCORES.c.lot, whole.c.window_end == "", whole.c.target == target
                ),
            )
        )
        .where(
            SCORES.c.bundle_id == bundle_id,
            sa.func.coalesce(window.c.value, whole.c.value).is_not(None),
        )
        .order_by(SCORES.c.scored_at, SCORES.c.lot, SCORES.c.window_end)
    )
    if since is not None:
        query = query.where(SCORES.c.scored_at >= since)
    with store.transaction() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    for r in rows:
        r["predictions"] = json.loads(r["predictions"])
        r["truth_of_window"] = bool(r["truth_of_window"])
    return pd.DataFrame(rows, columns=_COLUMNS)
