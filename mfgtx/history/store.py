"""A history store: runs and their scores, each run's rows committed all at once.

:func:`open_history` upgrades an older history (:mod:`mfgtx.history.migrate`) and refuses
one that is not mfgtx's. A run is recorded in two transactions: :meth:`HistoryStore.start_run`
commits its row as ``running``; :meth:`HistoryStore.finish_run` writes every score row and
the run's final status in one transaction, so a run killed half-way leaves no score rows,
only its ``running`` run row, with the host and process id that ran it: a ``running`` run
whose process on this host has ended is marked ``abandoned`` (with the reason) the next time
the history is opened for writing (:func:`open_history`), and listed so
(:func:`~mfgtx.history.queries.runs`) before that. Run ids follow the order runs start in
(:func:`new_run_id`), so runs that start within the same second still list in order.

Scoring a key of a bundle again (the same lot and window end)
replaces its row with the latest run's values: the history never holds a key twice.

The engine is the caller's (``mfgtx.jobs`` passes its serialised writer); on PostgreSQL
writers of one history also take an advisory lock on ``mfgtx:history`` for their
transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.migrate import STEPS, HistoryError, migrate, schema_version
from mfgtx.history.records import score_records
from mfgtx.history.tables import RUNS, SCORES

__all__ = [
    "HistoryStore",
    "abandoned_reason",
    "new_run_id",
    "open_history",
    "read_history",
    "upsert",
    "utc_now",
]

log = logging.getLogger(__name__)

#: Score rows per INSERT statement inside a run's transaction.
CHUNK = 500


def utc_now() -> str:
    """Now as the history writes times: ISO 8601 in UTC, to the second."""
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_last_ns = 0
_id_lock = threading.Lock()


def new_run_id() -> str:
    """A run id (32 hex digits) that sorts as runs start: nanoseconds since 1970, strictly
    rising within a process, then 64 random bits (another process's run of the same
    nanosecond is told apart). ``started_at`` is to the second; this orders runs within one."""
    global _last_ns
    with _id_lock:
        _last_ns = max(time.time_ns(), _last_ns + 1)
        now = _last_ns
    return f"{now:016x}{secrets.token_hex(8)}"


def this_host() -> str:
    """The name runs recorded from this computer carry (``history_runs.host``)."""
    return socket.gethostname()


def _process_started(pid: int) -> float | None:
    """When process ``pid`` started (seconds since 1970), where the system says (Linux
    ``/proc``); ``None`` elsewhere or when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _process_gone(pid: int, started_at: str) -> bool:
    """Whether the process ``pid`` of this host that started a run at ``started_at`` has
    ended: no such process, or one that started after the run did (its id reused). Where
    that cannot be told (Windows) the run is taken as still running."""
    if os.name != "posix":
        return False  # os.kill(pid, 0) would end the process on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # another user's process: alive
        pass
    started = _process_started(pid)
    if started is None:
        return False
    try:
        run_start = dt.datetime.strptime(started_at, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    return started > run_start.replace(tzinfo=dt.UTC).timestamp() + 2  # its clock: to the s


def abandoned_reason(run: Mapping[str, Any]) -> str | None:
    """Why the ``running`` run ``run`` (a row of ``history_runs``) is abandoned, or ``None``:
    still running, finished, or run on another host (or by an mfgtx that recorded no host)."""
    if run.get("status") != "running" or run.get("pid") is None or run.get("host") != this_host():
        return None
    pid = int(run["pid"])
    if pid == os.getpid() or not _process_gone(pid, str(run["started_at"])):
        return None
    return (
        f"abandoned: its process (pid {pid} on {run['host']}) ended before the run finished "
        "(killed, crashed or the computer stopped); none of its rows were recorded"
    )


def _mark_abandoned(conn: Any) -> int:
    """Mark this host's ``running`` runs whose process has ended ``abandoned``; how many."""
    running = conn.execute(
        sa.select(RUNS).where(RUNS.c.status == "running", RUNS.c.host == this_host())
    ).mappings().all()  # fmt: skip
    n = 0
    for run in running:
        why = abandoned_reason(run)
        if why is None:
            continue
        conn.execute(
            RUNS.update()
            .where(RUNS.c.run_id == run["run_id"], RUNS.c.status == "running")
            .values(status="abandoned", finished_at=utc_now(), message=why)
        )
        n += 1
    return n


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
        """Commit a ``running`` row for a new run, with this host and process id; its id
        (:func:`new_run_id`: ids sort as runs start)."""
        run_id = new_run_id()
        with self.transaction() as conn:
            conn.execute(
                RUNS.insert().values(
                    run_id=run_id, job_file=job_file, bundle_id=bundle_id, kind=kind,
                    started_at=utc_now(), status="running", host=this_host(), pid=os.getpid(),
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
    """The history ``engine`` reaches, created or upgraded to the newest schema; this
    host's runs whose process ended before they finished are marked ``abandoned``.

    Raises:
        HistoryError: the database is not an mfgtx history, was written by a newer mfgtx,
            or did not answer; the message names ``where``.
    """
    store = HistoryStore(engine, where)
    try:
        with store.transaction() as conn:
            migrate(conn)
            found = _mark_abandoned(conn)
    except HistoryError as e:
        msg = str(e)
        raise HistoryError(msg if msg.startswith("history ") else f"history {where}: {msg}") from e
    if found:
        log.warning("history %s: %d run(s) abandoned by a process that ended", where, found)
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
