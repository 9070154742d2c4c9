"""The promoted bundle of a job: the one the plant view shows and the watch judges.

A job is named by its job file's ``name``, else its file's name without the suffix
(:func:`job_name`). One row per job in ``history_promoted``: promoting another bundle
replaces it, and the history keeps who was promoted when (``promoted_at``, ``note``).
:func:`scored_jobs` lists what the runs of a history name: each job file and the bundles it scored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa

from mfgtx.history.store import HistoryStore, upsert, utc_now
from mfgtx.history.tables import PROMOTED, RUNS
from mfgtx.jobfile.config import JobConfig

__all__ = ["job_name", "promote", "promoted", "scored_jobs"]


def job_name(config: JobConfig) -> str:
    """The job's ``name``, else its file's name without the suffix (``sample_quality``)."""
    return config.name or Path(config.source_file).stem


def promote(
    store: HistoryStore,
    job: str,
    bundle_id: str,
    bundle_path: str | None = None,
    note: str | None = None,
) -> dict[str, Any]:
    """Mark ``bundle_id`` (found at ``bundle_path``) as ``job``'s promoted bundle, replacing
    the one promoted before; the row written.

    Raises:
        ValueError: an empty job name or bundle id.
    """
    if not job.strip():
        raise ValueError("promote: name the job (its job file's name:)")
    if not bundle_id.strip():
        raise ValueError(f"promote {job}: name the bundle (its id)")
    row = {"job": job, "bundle_id": bundle_id, "bundle_path": bundle_path,
           "promoted_at": utc_now(), "note": note}  # fmt: skip
    with store.transaction() as conn:
        upsert(conn, PROMOTED, [row], ("job",))
    return row


def promoted(store: HistoryStore, job: str) -> dict[str, Any] | None:
    """``job``'s promoted bundle (``bundle_id``, ``bundle_path``, ``promoted_at``, ``note``),
    ``None`` when none was promoted."""
    query = sa.select(PROMOTED).where(PROMOTED.c.job == job)
    with store.transaction() as conn:
        row = conn.execute(query).mappings().one_or_none()
    return None if row is None else dict(row)


def scored_jobs(store: HistoryStore) -> pd.DataFrame:
    """What the history's runs name, newest first: one row per job file and bundle with
    ``kind``, ``runs`` (how many finished ``ok``) and ``last_run`` (its latest start)."""
    query = (
        sa.select(
            RUNS.c.job_file,
            RUNS.c.bundle_id,
            sa.func.max(RUNS.c.kind).label("kind"),
            sa.func.count().label("runs"),
            sa.func.max(RUNS.c.started_at).label("last_run"),
        )
        .where(RUNS.c.status == "ok")
        .group_by(RUNS.c.job_file, RUNS.c.bundle_id)
        .order_by(sa.func.max(RUNS.c.started_at).desc())
    )
    with store.transaction() as conn:
        rows = conn.execute(query).mappings().all()
    return pd.DataFrame(rows, columns=["job_file", "bundle_id", "kind", "runs", "last_run"])
