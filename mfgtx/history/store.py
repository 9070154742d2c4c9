"""A history store: runs and their scores, each run's rows committed all at once.

:func:`open_history` upgrades an older history (:mod:`mfgtx.history.migrate`) and refuses
one that is not mfgtx's. A run is recorded in two transactions: :meth:`HistoryStore.start_run`
commits its row as ``running``; :meth:`HistoryStore.finish_run` writes every score row and
the run's final status in one transaction, so a run killed half-way leaves no score rows,
only its ``running`` run row. Scoring a key of a bundle again (the same lot and window end)
replaces its row with the latest run's values: the history never holds a key twice.

The engine is the caller's (``mfgtx.jobs`` passes its serialised writer); on PostgreSQL
writers of one history also take an advisory lock on ``mfgtx:history`` for their
transaction.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.migrate import STEPS, HistoryError, migrate, schema_version
from mfgtx.history.records import score_records
from mfgtx.history.tables import RUNS, SCORES

__all__ = ["HistoryStore", "open_history", "read_history", "upsert", "utc_now"]

#: Score rows per INSERT statement inside a run's transaction.
CHUNK = 500


def utc_now() -> str:
    """Now as the history writes times: ISO 8601 in UTC, to the second."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _reason(e: BaseException) -> str:
    return " ".join(str(getattr(e, "orig", None) or e).split())[:300]


@dataclass(frozen=True)
class HistoryStore:
    """An opened history: ``engine`` reaches it, ``where`` names it in messages;
    ``writes``: whether transactions take the writers' lock (:func:`read_history`: no)."""

    engine: Any
    where: str
    writes: bool = True

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """One transaction, serialised with the history's other writers."""
        try:
            with self.engine.begin() as conn:
                if self.writes and conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(hashtext('mfgtx:history'))"))
                yield conn
        except sa.exc.SQLAlchemyError as e:
            raise HistoryError(f"history {self.where}: {_reason(e)}") from e

    def start_run(self, *, bundle_id: str, kind: str, job_file: str | None = None) -> str:
        """Commit a ``running`` row for a new run; its id."""
        run_id = uuid.uuid4().hex
        with self.transaction() as conn:
            conn.execute(
                RUNS.insert().values(
                    run_id=run_id, job_file=job_file, bundle_id=bundle_id, kind=kind,
                    started_at=utc_now(), status="running",
                )
            )  # fmt: skip
        return run_id

    def finish_run(
        self,
        run_id: str,
        rows: pd.DataFrame,
        keys: Sequence[str],
        *,
        bad_lots: int = 0,
        seconds: float | None = None,
        flags: Mapping[str, Sequence[str]] | None = None,
        extra_keys: Sequence[str] = (),
    ) -> int:
        """Write the run's score rows and mark it ``ok``, in one transaction; the number of
        rows written (:func:`~mfgtx.history.records.score_records`: ``flags`` per lot,
        ``extra_keys`` such as ``line``)."""
        with self.transaction() as conn:
            run = conn.execute(sa.select(RUNS).where(RUNS.c.run_id == run_id)).mappings().one()
            records = score_records(
                rows, keys, run_id=run_id, bundle_id=run["bundle_id"], kind=run["kind"],
                scored_at=utc_now(), flags=flags, extra_keys=extra_keys,
            )  # fmt: skip
            for start in range(0, len(records), CHUNK):
                upsert(conn, SCORES, records[start : start + CHUNK], ("bundle_id", "key"))
            conn.execute(
                RUNS.update()
                .where(RUNS.c.run_id == run_id)
                .values(status="ok", finished_at=utc_now(), rows=len(records),
                        bad_lots=bad_lots, seconds=seconds)
            )  # fmt: skip
        return len(records)

    def fail_run(self, run_id: str, message: str, *, seconds: float | None = None) -> None:
        """Mark the run ``failed`` with the reason (its score rows were never written)."""
        with self.transaction() as conn:
            conn.execute(
                RUNS.update()
                .where(RUNS.c.run_id == run_id)
                .values(status="failed", finished_at=utc_now(), message=message[:1000],
                        seconds=seconds)
            )  # fmt: skip


def upsert(conn: Any, table: sa.Table, records: list[dict[str, Any]], key: Sequence[str]) -> None:
    """Insert ``records`` into ``table``; a row whose ``key`` columns are already there takes
    the new values (one statement per dialect: SQLite and PostgreSQL ``ON CONFLICT``)."""
    if not records:
        return
    from sqlalchemy.dialects import postgresql, sqlite

    dml: Any = postgresql if conn.dialect.name == "postgresql" else sqlite
    stmt = dml.insert(table)
    updated = {c: stmt.excluded[c] for c in records[0] if c not in key}
    conn.execute(stmt.on_conflict_do_update(index_elements=list(key), set_=updated), records)


def open_history(engine: Any, where: str) -> HistoryStore:
    """The history ``engine`` reaches, created or upgraded to the newest schema.

    Raises:
        HistoryError: the database is not an mfgtx history, was written by a newer mfgtx,
            or did not answer; the message names ``where``.
    """
    store = HistoryStore(engine, where)
    try:
        with store.transaction() as conn:
            migrate(conn)
    except HistoryError as e:
        msg = str(e)
        raise HistoryError(msg if msg.startswith("history ") else f"history {where}: {msg}") from e
    return store


def read_history(engine: Any, where: str) -> HistoryStore:
    """The history ``engine`` reaches, for reading only (``engine`` may be a read-only one,
    :func:`mfgtx.jobfile._sql.read_engine`): nothing is created or upgraded.

    Raises:
        HistoryError: no history there yet, one written by a newer mfgtx, or one that is
            not mfgtx's.
    """
    store = HistoryStore(engine, where, writes=False)
    try:
        with store.transaction() as conn:
            found = schema_version(conn)
    except HistoryError as e:
        msg = str(e)
        raise HistoryError(msg if msg.startswith("history ") else f"history {where}: {msg}") from e
    if found == 0:
        raise HistoryError(f"history {where}: holds no runs yet (no score run recorded into it)")
    if found > len(STEPS):
        raise HistoryError(
            f"history {where}: was written by a newer mfgtx (schema version {found}; this "
            f"mfgtx knows up to {len(STEPS)}); upgrade mfgtx to read it"
        )
    return store
