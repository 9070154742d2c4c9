"""A bundle's scores whose truth has arrived: what the watch judges a model on.

Each score is joined to the truth of its own window end, else of its lot as a whole
(:func:`~mfgtx.history.truth.with_truth`; ``truth_of_window`` says which); only scores with
a truth are returned, oldest first, optionally from a time on (never the whole table of every
bundle).
"""

from __future__ import annotations

import json

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore
from mfgtx.history.tables import SCORES
from mfgtx.history.truth import with_truth

__all__ = ["JUDGED_COLUMNS", "judged_scores"]

#: The columns :func:`judged_scores` returns (an empty frame of them: nothing judged yet).
JUDGED_COLUMNS = [
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
    joined = with_truth(target)
    cols = joined.selected_columns
    query = (
        sa.select(*(cols[c] for c in JUDGED_COLUMNS))
        .select_from(joined.get_final_froms()[0])
        .where(cols.bundle_id == bundle_id, cols.truth.is_not(None))
        .order_by(SCORES.c.scored_at, SCORES.c.lot, SCORES.c.window_end)
    )
    if since is not None:
        query = query.where(SCORES.c.scored_at >= since)
    with store.transaction() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    for r in rows:
        r["predictions"] = json.loads(r["predictions"])
        r["truth_of_window"] = bool(r["truth_of_window"])
    return pd.DataFrame(rows, columns=JUDGED_COLUMNS)
