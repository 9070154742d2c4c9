"""Schema versions of a history and the numbered steps between them.

A history records its version in ``history_schema`` (one row). :func:`migrate` applies the
steps a database lacks, in order, inside the caller's transaction: an older history is
upgraded when it is opened, all steps or none; a history written by a newer mfgtx (a version
this code does not know) is refused, never changed. A step, once released, is never edited:
a change of schema is a new step at the end of :data:`STEPS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa

from mfgtx.history.tables import ALERTS, METADATA, PROMOTED, RUNS, SCORES, TRUTH, VERSION, WATCH

__all__ = ["STEPS", "HistoryError", "migrate", "schema_version"]


class HistoryError(RuntimeError):
    """A history that cannot be used: not mfgtx's, written by a newer mfgtx, or unreachable."""


def _index(name: str) -> sa.Index:
    return next(ix for t in METADATA.tables.values() for ix in t.indexes if ix.name == name)


#: ``history_runs`` as version 1 made it (:data:`~mfgtx.history.tables.RUNS` less the columns
#: later steps add): a step creates what its version had, never the newest shape.
_RUNS_V1 = sa.Table(
    RUNS.name,
    sa.MetaData(),
    *(sa.Column(c.name, c.type, primary_key=c.primary_key, nullable=c.nullable)
      for c in RUNS.columns if c.name not in ("host", "pid")),
)  # fmt: skip


def _v1(conn: Any) -> None:
    """Runs and their scores, unique per bundle and key."""
    conn.execute(sa.schema.CreateTable(VERSION))
    conn.execute(sa.schema.CreateTable(_RUNS_V1))
    conn.execute(sa.schema.CreateTable(SCORES))
    conn.execute(sa.schema.CreateIndex(_index("ix_history_scores_lot")))
    conn.execute(VERSION.insert().values(version=0))


def _v2(conn: Any) -> None:
    """Truth that arrives later, and scores found by time."""
    conn.execute(sa.schema.CreateTable(TRUTH))
    conn.execute(sa.schema.CreateIndex(_index("ix_history_scores_scored_at")))


def _v3(conn: Any) -> None:
    """The promoted bundle of each job, the watch's verdicts, alerts; where a run ran."""
    conn.execute(sa.text("ALTER TABLE history_runs ADD COLUMN host TEXT"))
    conn.execute(sa.text("ALTER TABLE history_runs ADD COLUMN pid INTEGER"))
    for table in (PROMOTED, WATCH, ALERTS):
        conn.execute(sa.schema.CreateTable(table))
    conn.execute(sa.schema.CreateIndex(_index("ix_history_watch_bundle")))
    conn.execute(sa.schema.CreateIndex(_index("ix_history_alerts_open")))


#: The steps, in order: ``STEPS[i]`` takes a history from version ``i`` to ``i + 1``.
STEPS: tuple[Callable[[Any], None], ...] = (_v1, _v2, _v3)


def schema_version(conn: Any) -> int:
    """The version of the history ``conn`` reaches (0: an empty database).

    Raises:
        HistoryError: the database holds history tables without a version row.
    """
    names = set(sa.inspect(conn).get_table_names())
    if VERSION.name not in names:
        mine = sorted(names & set(METADATA.tables))
        if conn.dialect.name == "sqlite" and names and not mine:
            raise HistoryError(
                f"holds the tables {', '.join(sorted(names)[:5])} and no history: a SQLite "
                "file that is not an mfgtx history is never written into; name another file"
            )
        if mine:
            raise HistoryError(
                f"holds the tables {', '.join(mine)} but no {VERSION.name}: not a history "
                "mfgtx wrote; name another history, or move those tables away"
            )
        return 0
    found = conn.execute(sa.select(VERSION.c.version)).scalars().all()
    if len(found) != 1:
        raise HistoryError(f"{VERSION.name} holds {len(found)} rows, expected 1")
    return int(found[0])


def migrate(conn: Any) -> int:
    """Bring the history ``conn`` reaches to the newest version inside the caller's
    transaction; return the version it was at.

    Raises:
        HistoryError: the history is newer than this mfgtx knows, or not mfgtx's.
    """
    found = schema_version(conn)
    if found > len(STEPS):
        raise HistoryError(
            f"was written by a newer mfgtx (schema version {found}; this mfgtx knows up to "
            f"{len(STEPS)}); upgrade mfgtx to record into it, or name another history"
        )
    for step in STEPS[found:]:
        step(conn)
    if found < len(STEPS):
        conn.execute(VERSION.update().values(version=len(STEPS)))
    return found
