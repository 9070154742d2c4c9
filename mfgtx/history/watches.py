"""The watch's rows (``mfgtx watch``): one per check of a bundle, its verdict and findings.

``checked_at`` is ISO 8601 UTC text to the microsecond, so that watches sort as they ran.
The findings are kept as JSON (a list of objects: ``subject``, ``reason``, ``message``, and
whatever figures the watch adds); the dashboard's watch page reads the latest row of each
bundle (:func:`latest_watches`).
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from collections.abc import Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore
from mfgtx.history.tables import WATCH

__all__ = ["VERDICTS", "latest_watches", "record_watch", "watches_of"]

#: What a watch may conclude about a bundle.
VERDICTS = ("valid", "not_valid", "unknown")


def _now() -> str:
    """Now in UTC to the microsecond (``2026-12-04T18:06:02.123456Z``): two watches of a
    bundle within a second (a schedule and a person) still come in the order they ran."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def record_watch(
    store: HistoryStore,
    *,
    bundle_id: str,
    verdict: str,
    summary: str,
    findings: Sequence[dict[str, Any]],
    window_start: str | None = None,
    window_end: str | None = None,
    checked_at: str | None = None,
) -> str:
    """Record one watch of ``bundle_id`` in one transaction; its id.

    Raises:
        ValueError: ``verdict`` is not one of :data:`VERDICTS`.
    """
    if verdict not in VERDICTS:
        raise ValueError(f"watch verdict {verdict!r}: expected one of {', '.join(VERDICTS)}")
    watch_id = uuid.uuid4().hex
    row = {
        "watch_id": watch_id,
        "bundle_id": bundle_id,
        "checked_at": checked_at or _now(),
        "window_start": window_start,
        "window_end": window_end,
        "verdict": verdict,
        "summary": summary,
        "findings": json.dumps(list(findings), allow_nan=False),
    }
    with store.transaction() as conn:
        conn.execute(sa.insert(WATCH), [row])
    return watch_id


def _frame(rows: list[Any]) -> pd.DataFrame:
    out = [dict(r) for r in rows]
    for r in out:
        r["findings"] = json.loads(r["findings"])
    return pd.DataFrame(out, columns=list(WATCH.c.keys()))


def watches_of(store: HistoryStore, bundle_id: str, limit: int = 20) -> pd.DataFrame:
    """The latest ``limit`` watches of ``bundle_id``, newest first (findings decoded)."""
    query = (
        sa.select(WATCH)
        .where(WATCH.c.bundle_id == bundle_id)
        .order_by(WATCH.c.checked_at.desc(), WATCH.c.watch_id)
        .limit(limit)
    )
    with store.transaction() as conn:
        return _frame(list(conn.execute(query).mappings()))


def latest_watches(store: HistoryStore) -> pd.DataFrame:
    """The latest watch of every bundle watched, newest first (findings decoded)."""
    newest = (
        sa.select(WATCH.c.bundle_id, sa.func.max(WATCH.c.checked_at).label("at"))
        .group_by(WATCH.c.bundle_id)
        .subquery()
    )
    query = (
        sa.select(WATCH)
        .join(
            newest,
            sa.and_(WATCH.c.bundle_id == newest.c.bundle_id, WATCH.c.checked_at == newest.c.at),
        )
        .order_by(WATCH.c.checked_at.desc(), WATCH.c.watch_id)
    )
    with store.transaction() as conn:
        rows = list(conn.execute(query).mappings())
    frame = _frame(rows)
    return frame.drop_duplicates("bundle_id", keep="first").reset_index(drop=True)
