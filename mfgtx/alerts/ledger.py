"""The alerts a history holds (``history_alerts``): opened, seen again, cleared, delivered.

At most one alert is ``open`` per (subject, reason). A run that finds an open alert again
only moves its ``last_seen_at`` (and keeps its latest message); a run of the same source
that checked the subject without finding the reason clears it (``cleared_at``); if the
reason comes back later, a new alert opens. ``delivery`` is ``pending`` until a send is
tried, then ``sent`` or ``failed: to[i] (scheme): <why>; to[j] ...`` naming each target that
did not take it; an open alert not ``sent`` is sent again by the next run of its source, to
those targets only (:func:`owed_by`).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history import HistoryStore
from mfgtx.history.findings import Finding
from mfgtx.history.tables import ALERTS

__all__ = ["alerts", "count_open", "owed_by", "record_delivery", "unsent", "update"]

#: Subjects per ``IN (...)`` list when reading their open alerts.
_CHUNK = 500
_FAILED_TARGET = re.compile(r"(?:^failed: |; )to\[(\d+)\] \(")


def owed_by(delivery: str, target: int) -> bool:
    """Whether target ``target`` still owes an alert whose delivery is ``delivery``: a new
    alert is owed by every target, a failed one by the targets its delivery names (by every
    target when it names none, such as Apprise missing).

    Example:
        >>> owed_by("pending", 1), owed_by("failed: to[1] (mailto): refused", 0)
        (True, False)
        >>> owed_by("failed: to[0] (json): timed out; to[1] (mailto): refused", 1)
        True
    """
    if delivery == "sent":
        return False
    named = {int(i) for i in _FAILED_TARGET.findall(delivery)}
    return not named or target in named


def update(
    conn: Any, findings: Iterable[Finding], *, source: str, checked: Iterable[str], now: str
) -> tuple[int, list[dict[str, Any]]]:
    """Open, see again or clear alerts in one transaction (``conn``); ``(how many opened,
    the alerts cleared)``.

    ``checked``: the subjects ``source`` looked at in this run; their open alerts of
    ``source`` that ``findings`` no longer hold are cleared.
    """
    found: dict[tuple[str, str], Finding] = {}
    for f in findings:
        found.setdefault((f.subject, f.reason), f)
    checked = set(checked)
    subjects = sorted(checked | {subject for subject, _ in found})
    open_rows = []  # of these subjects only: a history keeps months of alerts
    for start in range(0, len(subjects), _CHUNK):
        query = sa.select(ALERTS).where(
            ALERTS.c.state == "open", ALERTS.c.subject.in_(subjects[start : start + _CHUNK])
        )
        open_rows += conn.execute(query).mappings().all()
    by_key = {(r["subject"], r["reason"]): r for r in open_rows}
    seen = [{"b_id": by_key[k]["alert_id"], "b_message": f.message}
            for k, f in found.items() if k in by_key]  # fmt: skip
    new = [
        {"alert_id": uuid.uuid4().hex, "source": source, "subject": f.subject,
         "reason": f.reason, "message": f.message, "state": "open", "opened_at": now,
         "last_seen_at": now, "delivery": "pending", "attempts": 0}
        for k, f in found.items() if k not in by_key
    ]  # fmt: skip
    if seen:  # one statement, many rows
        conn.execute(
            ALERTS.update()
            .where(ALERTS.c.alert_id == sa.bindparam("b_id"))
            .values(last_seen_at=now, message=sa.bindparam("b_message")),
            seen,
        )
    if new:
        conn.execute(ALERTS.insert(), new)
    gone = [
        dict(r)
        for key, r in by_key.items()
        if r["source"] == source and key[0] in checked and key not in found
    ]
    for start in range(0, len(gone), _CHUNK):
        ids = [r["alert_id"] for r in gone[start : start + _CHUNK]]
        cleared = ALERTS.update().where(ALERTS.c.alert_id.in_(ids))
        conn.execute(cleared.values(state="cleared", cleared_at=now))
    return len(new), gone


def unsent(conn: Any, source: str) -> list[dict[str, Any]]:
    """The open alerts of ``source`` not delivered yet (new, or failed before), oldest first."""
    query = (
        sa.select(ALERTS)
        .where(ALERTS.c.state == "open", ALERTS.c.source == source, ALERTS.c.delivery != "sent")
        .order_by(ALERTS.c.opened_at, ALERTS.c.subject, ALERTS.c.reason)
    )
    return [dict(r) for r in conn.execute(query).mappings()]


def count_open(conn: Any, source: str) -> int:
    """How many alerts of ``source`` are open."""
    query = sa.select(sa.func.count()).where(ALERTS.c.state == "open", ALERTS.c.source == source)
    return int(conn.execute(query).scalar_one())


def record_delivery(conn: Any, alert_ids: Sequence[str], why: str | None, now: str) -> None:
    """Record one send of ``alert_ids``: ``sent`` (``why`` is None: every target that owed
    them took them) or ``failed: why`` (``why``: ``to[i] (scheme): <why>`` of each target
    that did not)."""
    if not alert_ids:
        return
    values: dict[str, Any] = {"attempts": ALERTS.c.attempts + 1}
    if why is None:
        values.update(delivery="sent", delivered_at=now)
    else:
        values.update(delivery=f"failed: {why}"[:1000])
    conn.execute(ALERTS.update().where(ALERTS.c.alert_id.in_(list(alert_ids))).values(**values))


def alerts(
    store: HistoryStore,
    *,
    state: str | None = None,
    limit: int = 50,
    sources: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The latest ``limit`` alerts of ``store``, newest first (``state``: ``open`` or
    ``cleared`` only; ``sources``: only those raised by them, such as ``score:<job>`` and
    ``watch:<job>``: one job's alerts in a history several jobs share)."""
    query = sa.select(ALERTS)
    if state is not None:
        query = query.where(ALERTS.c.state == state)
    if sources is not None:
        query = query.where(ALERTS.c.source.in_(list(sources)))
    query = query.order_by(ALERTS.c.opened_at.desc(), ALERTS.c.alert_id).limit(limit)
    with store.transaction() as conn:
        rows = conn.execute(query).mappings().all()
    return pd.DataFrame(rows, columns=list(ALERTS.c.keys()))
