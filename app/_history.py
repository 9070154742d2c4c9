"""The jobs whose score histories the dashboard reads, and their histories, opened once.

A job's history is where ``mfgtx score`` records it (:func:`mfgtx.history.history_url` of the
job): the job each bundle of the models folder records (:func:`mfgtx.jobfile.recorded_job`),
and the history the settings name (``MFGTX_HISTORY``). In a history, the runs name the job
files they ran; the job file itself, where it is still found, is the one read for the job's
keys and limits (a plant adds ``limits:`` to its job file after training), else the recorded
job of one of its bundles. Which bundle a job shows is its promoted one
(:func:`mfgtx.history.promote.promoted`), else the one that scored last.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import sqlalchemy as sa
import streamlit as st
from _bundles import find_bundles
from _settings import ROOT, AppConfig

from mfgtx.artifacts import FoundBundle
from mfgtx.history import (
    HistoryError,
    HistoryStore,
    history_url,
    history_where,
    job_name,
    open_history,
    promoted,
    read_history,
    scored_jobs,
    trend,
)
from mfgtx.jobfile import ConfigError, JobConfig, Limit, load_config, recorded_job

log = logging.getLogger("mfgtx.app")


@dataclass(frozen=True)
class PlantJob:
    """One job of a history: its name, where its history is, and what it says.

    Attributes:
        bundles: ``bundle_id -> kind`` of the bundles that scored for it, latest first.
        found: the bundles of the models folder among them, by id.
        group_key: the key column a trend is drawn per (``line``); ``None``: per lot.
        lot_name: what a lot is called in the job (``lot``, ``machine``).
        target: the truth recorded for its predictions (``defect``, ``rul_cycles``).
    """

    name: str
    url: str
    where: str
    bundles: dict[str, str]
    found: dict[str, FoundBundle] = field(default_factory=dict)
    group_key: str | None = None
    lot_name: str = "lot"
    target: str | None = None
    limits: dict[str, Limit] = field(default_factory=dict)
    job_file: str | None = None


where_of = history_where  # the history in words: its file, or its URL without a password


def _url(value: str) -> str:
    return value if "://" in value else f"sqlite:///{value}"


@st.cache_resource(max_entries=16, show_spinner=False)
def _engine(url: str) -> Any:
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def reader(url: str) -> HistoryStore:
    """The history at ``url`` for reading (nothing created).

    Raises:
        HistoryError: no history there, or not an mfgtx one.
    """
    return read_history(_engine(url), where_of(url))


def writer(url: str) -> HistoryStore:
    """The history at ``url`` for writing (a promotion), upgraded if older."""
    return open_history(_engine(url), where_of(url))


def _job_file(named: str | None, url: str) -> JobConfig | None:
    """The job file a run names, where it is found: as written, under the repository, or
    beside the history file."""
    if not named:
        return None
    candidates = [Path(named), ROOT / named, ROOT / "pipelines" / "configs" / named]
    if url.startswith("sqlite:///"):
        candidates.append(Path(url[len("sqlite:///") :]).parent / named)
    for path in candidates:
        if path.is_file():
            try:
                return load_config(path)
            except ConfigError as e:
                log.warning("job file %s not read: %s", path, e)
    return None


def _recorded(b: FoundBundle) -> JobConfig | None:
    try:
        return recorded_job(b.manifest)
    except ConfigError as e:
        log.warning("bundle %s: its recorded job is not read: %s", b.path.name, e)
        return None


def _discover(models_dir: str, extra: str | None) -> list[PlantJob]:
    found, _ = find_bundles(Path(models_dir))
    by_id = {b.bundle_id: b for b in found}
    recorded = {b.bundle_id: _recorded(b) for b in found}
    urls = [u for c in recorded.values() if c is not None and (u := history_url(c))]
    if extra:
        urls.append(_url(extra))
    out: list[PlantJob] = []
    for url in dict.fromkeys(urls):
        if url.startswith("sqlite:///") and not Path(url[len("sqlite:///") :]).is_file():
            continue
        try:
            listed = scored_jobs(reader(url))
        except HistoryError as e:
            log.warning("history not read: %s", e)
            continue
        grouped: dict[str, tuple[JobConfig | None, str | None, dict[str, str]]] = {}
        for row in listed.itertuples():
            config = _job_file(row.job_file, url) or recorded.get(str(row.bundle_id))
            name = job_name(config) if config else Path(str(row.job_file or "job")).stem
            known = grouped.setdefault(name, (config, row.job_file, {}))
            known[2].setdefault(str(row.bundle_id), str(row.kind))
            if known[0] is None and config is not None:
                grouped[name] = (config, row.job_file, known[2])
        for name, (config, job_file, bundles) in grouped.items():
            columns = config.data.columns if config and config.data else None
            out.append(
                PlantJob(
                    name=name, url=url, where=where_of(url), bundles=bundles,
                    found={i: by_id[i] for i in bundles if i in by_id},
                    group_key=columns.keys[0] if columns and columns.keys else None,
                    lot_name=columns.lot if columns else "lot",
                    target=(columns.targets or (None,))[0] if columns else None,
                    limits=dict(config.limits) if config else {},
                    job_file=job_file,
                )
            )  # fmt: skip
    return out


@st.cache_resource(ttl=60, max_entries=8, show_spinner="reading the score histories")
def _cached(models_dir: str, extra: str | None, _stamp: int) -> list[PlantJob]:
    return _discover(models_dir, extra)


def plant_jobs(cfg: AppConfig) -> list[PlantJob]:
    """Every job found in the histories the bundles and the settings name (read again at
    most every minute, or after a promotion)."""
    return _cached(str(cfg.models_dir), cfg.history, st.session_state.get(STAMP, 0))


#: Session-state key that a promotion bumps, so the jobs are read again.
STAMP = "__history_stamp"


def shown_bundle(job: PlantJob) -> tuple[str, dict[str, Any] | None]:
    """The bundle the plant view shows for ``job``: its promoted one, else the one that
    scored last; and the promotion (``None``: none promoted)."""
    try:
        chosen = promoted(reader(job.url), job.name)
    except HistoryError as e:
        log.warning("promotion not read: %s", e)
        chosen = None
    if chosen is not None:
        return str(chosen["bundle_id"]), chosen
    return next(iter(job.bundles)), None


def bundle_label(job: PlantJob, bundle_id: str) -> str:
    """A bundle in words: its folder's name where the models folder holds it, else its id."""
    b = job.found.get(bundle_id)
    return b.path.name if b is not None else f"bundle {bundle_id[:12]}"


#: The time ranges a trend is drawn over, in days back from the latest score.
RANGES = {"last 24 hours": 1.0, "last 7 days": 7.0, "last 30 days": 30.0, "last 90 days": 90.0}
_END = "9999-12-31T23:59:59Z"  # no end: every score after the start


def since(last: str, days: float) -> str:
    """``days`` before ``last`` (ISO 8601 UTC text), as the history writes times."""
    return (pd.Timestamp(last) - pd.Timedelta(days=days)).strftime("%Y-%m-%dT%H:%M:%SZ")


@st.cache_resource(max_entries=32, ttl=3600, show_spinner="reading the trend")
def cached_trend(url: str, bundle_id: str, start: str, last: str, group_key: str | None,
                 target: str | None) -> pd.DataFrame:  # fmt: skip
    """:func:`mfgtx.history.plant.trend` from ``start`` on (read only; keyed by ``last``, the
    latest score, so that a new run is read)."""
    return trend(reader(url), bundle_id, start, _END, group_key=group_key, target=target)


def job_label(job: PlantJob, jobs: list[PlantJob]) -> str:
    """The job's name; with its history's where two histories hold a job of that name."""
    twins = sum(j.name == job.name for j in jobs)
    return job.name if twins == 1 else f"{job.name} ({job.where})"
