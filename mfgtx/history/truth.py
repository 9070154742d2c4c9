"""Truth that arrives after the scores (a labels table, ``mfgtx evaluate``), and the join.

A truth row belongs to a lot and, where the labels give one, a window end (``""``: the lot as
a whole). :func:`predictions_with_truth` joins each score to the truth of its lot and window
end, else of its lot as a whole; a score without truth yet keeps an empty ``truth``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.queries import by_window_end
from mfgtx.history.store import HistoryStore, upsert, utc_now
from mfgtx.history.tables import SCORES, TRUTH

__all__ = ["predictions_with_truth", "predictions_with_truth_between", "record_truth", "with_truth"]


def record_truth(
    store: HistoryStore,
    frame: pd.DataFrame,
    *,
    lot: str = "lot",
    targets: Sequence[str] = ("label",),
    window_end: str | None = None,
    source: str = "labels",
) -> int:
    """Record the ``targets`` columns of ``frame`` (one row per lot, or per lot and
    ``window_end`` column) as truth, in one transaction; a value already known for the same
    lot, window end and target is replaced. The number of values recorded.

    Raises:
        ValueError: a named column is not in ``frame``.
    """
    wanted = [lot, *targets, *([window_end] if window_end else [])]
    missing = [c for c in wanted if c not in frame.columns]
    if missing:
        raise ValueError(
            f"{source}: no column {', '.join(missing)}; found {', '.join(map(str, frame.columns))}"
        )
    now = utc_now()
    records = [
        {
            "lot": str(row[lot]),
            "window_end": "" if window_end is None else str(row[window_end]),
            "target": target,
            "value": None if pd.isna(row[target]) else str(row[target]),
            "source": source,
            "arrived_at": now,
        }
        for row in frame.to_dict("records")
        for target in targets
    ]
    if not records:
        return 0
    with store.transaction() as conn:
        upsert(conn, TRUTH, records, ("lot", "window_end", "target"))
    return len(records)


def truth_join(scores: Any, target: str) -> tuple[Any, dict[str, Any]]:
    """``scores`` (``history_scores`` or a subquery of it) outer-joined to the ``target``'s
    truth of each window end and of each whole lot: the joined FROM clause, and the columns
    ``truth`` (of the window end, else of the lot), ``truth_source`` and ``truth_of_window``
    (whether the truth is of that window end). The one join of scores and truth."""
    window = TRUTH.alias("t_window")
    whole = TRUTH.alias("t_lot")
    joined = scores.outerjoin(
        window,
        sa.and_(window.c.lot == scores.c.lot, window.c.window_end == scores.c.window_end,
                window.c.target == target),
    ).outerjoin(
        whole,
        sa.and_(whole.c.lot == scores.c.lot, whole.c.window_end == "", whole.c.target == target),
    )  # fmt: skip
    return joined, {
        "truth": sa.func.coalesce(window.c.value, whole.c.value).label("truth"),
        "truth_source": sa.func.coalesce(window.c.source, whole.c.source).label("truth_source"),
        "truth_of_window": window.c.value.is_not(None).label("truth_of_window"),
    }


def with_truth(target: str) -> sa.Select[Any]:
    """Every score with the ``target``'s truth (:func:`truth_join`): the columns of
    ``history_scores``, ``truth``, ``truth_source`` and ``truth_of_window``; callers add their
    own ``where`` (a lot range, a time range, a bundle)."""
    joined, found = truth_join(SCORES, target)
    return sa.select(SCORES, *found.values()).select_from(joined)


def _read(store: HistoryStore, query: sa.Select[Any]) -> pd.DataFrame:
    with store.transaction() as conn:
        rows = [dict(r) for r in conn.execute(query).mappings()]
    for r in rows:
        r["predictions"] = json.loads(r["predictions"])
        r["truth_of_window"] = bool(r["truth_of_window"])
    columns = [*SCORES.c.keys(), "truth", "truth_source", "truth_of_window"]
    return by_window_end(pd.DataFrame(rows, columns=columns))


def predictions_with_truth(
    store: HistoryStore, first_lot: str, last_lot: str, target: str = "label"
) -> pd.DataFrame:
    """The scores of the lots ``first_lot`` .. ``last_lot`` (as text sorts them) with the
    ``target``'s truth where it is known: of the same window end, else of the whole lot.
    Sorted by lot, then window end (:func:`~mfgtx.history.queries.by_window_end`: cycle
    numbers as numbers)."""
    query = with_truth(target).where(SCORES.c.lot >= first_lot, SCORES.c.lot <= last_lot)
    return _read(store, query)


def predictions_with_truth_between(
    store: HistoryStore, start: str, end: str, target: str = "label"
) -> pd.DataFrame:
    """The scores of ``start <= scored_at < end`` (ISO 8601 UTC text, as
    :func:`~mfgtx.history.queries.scores_between` takes them) with the ``target``'s truth
    where it is known, as :func:`predictions_with_truth` joins it; sorted by lot, then window
    end. What a realized-error check reads: the recent scores, and the truth that arrived."""
    query = with_truth(target).where(SCORES.c.scored_at >= start, SCORES.c.scored_at < end)
    return _read(store, query)
