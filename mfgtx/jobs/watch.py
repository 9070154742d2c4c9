"""``watch``: whether a job's bundle still holds, recorded in the job's history.

Reads the bundle (verified), the job's score source (its latest lots: ``watch.last_lots`` or
``--last``), and the bundle's scores whose truth has arrived (:mod:`mfgtx.history`), hands
them to :func:`mfgtx.watch.watch` and records the verdict in the history (``history_watch``)
unless the job says ``history: off``. Reading the inputs never writes anything; a history
that cannot be written is logged and named in the outcome, and the verdict still stands.
With an ``alerts:`` section, the report's findings (drift, dead, stuck and missing sensors,
error and coverage, ``not_valid``) raise alerts (:func:`mfgtx.alerts.notify`, source
``watch:<job>``): each sent once, cleared by a later watch that no longer finds it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mfgtx.alerts import notify
from mfgtx.history import (
    HistoryError,
    HistoryStore,
    history_url,
    job_name,
    judged_scores,
)
from mfgtx.history import record_watch as record_watch_row
from mfgtx.jobfile.config import ConfigError, JobConfig
from mfgtx.jobfile.sources import WHOLE, iter_lot_frames, without_position
from mfgtx.jobs._sql import open_job_history
from mfgtx.jobs.score import load_predictor
from mfgtx.watch import WatchReport, watch

__all__ = ["WatchOutcome", "watch_job"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WatchOutcome:
    """What a watch found (the CLI prints its report and summary line)."""

    report: WatchReport
    history: str
    alerts: str = "off"

    def summary(self) -> dict[str, Any]:
        r = self.report
        return {
            "command": "watch",
            "bundle_id": r.bundle_id,
            "verdict": r.verdict,
            "why": r.why,
            "findings": [f.reason for f in r.findings()],
            "lots": r.lots,
            "judged": r.model.judged,
            "history": self.history,
            "alerts": self.alerts,
        }


def _recent(
    config: JobConfig, predictor: Any, last: int
) -> tuple[pd.DataFrame | None, int, str | None]:
    """The latest ``last`` lots (0: all) of the job's score source as raw rows, how many
    lots that is and the rows' lot column; ``None`` for a model that reads no sensor rows."""
    kind = predictor.kind
    if config.score is None or not hasattr(predictor, "columns"):
        return None, 0, None
    source, _ = kind.score_source(config)
    predictor, source = kind.scoring(predictor, config, source)  # the rows score reads
    cols = predictor.columns
    segment = WHOLE if config.data is not None and config.data.segment else None
    keys = tuple(getattr(cols, "keys", ()) or ())  # the line: each is judged on its own lots
    keep = [c for c in (cols.lot, cols.time, *keys, *(cols.sensors or ())) if c]
    long = getattr(cols, "layout", "wide") == "long"
    if long:
        keep += [cols.sensor_name, cols.value]
    parts: list[pd.DataFrame] = []
    for frame in iter_lot_frames(
        source, cols.lot, cols.time, segment=segment, time_format=cols.time_format
    ):
        frame = without_position(frame)
        parts.append(frame[[c for c in dict.fromkeys(keep) if c in frame.columns]])
    if not parts:
        return pd.DataFrame(), 0, cols.lot
    rows = pd.concat(parts, ignore_index=True)
    if long:
        rows = rows.pivot_table(
            index=[cols.lot, cols.time],
            columns=cols.sensor_name,
            values=cols.value,
            aggfunc="first",
            dropna=False,
        ).reset_index()
    lots = rows.groupby(cols.lot, sort=False)[cols.time].max().sort_values(kind="stable")
    chosen = lots.index[-last:] if last > 0 else lots.index
    rows = rows[rows[cols.lot].isin(chosen)]
    return rows.reset_index(drop=True), len(chosen), cols.lot


def _window(rows: pd.DataFrame | None, time: str | None) -> tuple[str | None, str | None]:
    if rows is None or rows.empty or not time or time not in rows.columns:
        return None, None
    t = rows[time]
    return str(t.min()), str(t.max())


def _store(config: JobConfig) -> tuple[HistoryStore | None, str]:
    url = history_url(config)
    if url is None:
        return None, "off"
    try:
        return open_job_history(url)
    except (HistoryError, OSError, ValueError) as e:
        log.warning("the watch is not recorded in the history: %s", e)
        return None, f"not recorded: {e}"


def watch_job(config: JobConfig, *, last: int | None = None) -> WatchOutcome:
    """Watch ``config.bundle`` on the job's latest lots and its history; record the verdict.

    Args:
        config: the job (``bundle`` required; ``score`` for the recent data; ``watch`` the
            thresholds).
        last: the lots of the score source to read (latest by time); default
            ``watch.last_lots`` (0: every lot).

    Raises:
        ConfigError: no bundle, or columns other than the bundle's.
        BundleError: the bundle is missing, damaged or holds a profile this mfgtx cannot read.
        DataError: the score source cannot be read.
    """
    config.require("bundle")
    settings = config.watch
    n_last = settings.last_lots if last is None else last
    if n_last < 0:
        raise ConfigError(f"{config.source_file}: --last: expected 0 or more lots, found {n_last}")
    predictor = load_predictor(config)
    bundle = predictor.bundle
    recent, lots, lot_column = _recent(config, predictor, n_last)
    store, where = _store(config)
    judged = None
    targets = tuple(getattr(predictor.input_spec, "targets", ()) or ())
    if store is not None:
        try:  # a model without a named target (images) has no truth to join: none judged
            judged = judged_scores(store, predictor.bundle_id, targets[0] if targets else "")
        except HistoryError as e:
            log.warning("the model is not judged: %s", e)
    regimes = getattr(predictor.input_spec, "regimes", None)
    try:
        report = watch(
            bundle.manifest,
            predictor.bundle_id,
            subject=config.name or Path(str(config.bundle)).name,
            recent=recent,
            judged=judged,
            settings=settings,
            regimes=regimes,
            lots=lots,
            window=_window(recent, getattr(getattr(predictor, "columns", None), "time", None)),
            lot_column=lot_column,
        )
    except ValueError as e:
        from mfgtx.artifacts import BundleError

        raise BundleError(f"{bundle.path}: {e}; retrain it with this mfgtx") from e
    recorded = where
    if store is not None:
        try:
            watch_id = record_watch_row(store, **report.to_record())
            recorded = f"{where} (watch {watch_id})"
        except HistoryError as e:
            log.warning("the watch is not recorded in the history: %s", e)
            recorded = f"not recorded: {e}"
    log.info("%s: %s", report.subject, report.why)
    return WatchOutcome(report, recorded, _alert(config, store, report))


def _alert(config: JobConfig, store: HistoryStore | None, report: WatchReport) -> str:
    """Raise the watch's alerts; the summary's ``alerts`` text (a failure is logged)."""
    if config.alerts is None:
        return "off"
    if store is None:
        log.warning("the watch's alerts are not checked: they need the history")
        return "not checked: alerts need the history, which did not record this watch"
    job = job_name(config)
    try:
        outcome = notify(store, config.alerts, report.findings(), source=f"watch:{job}",
                         checked_subjects=[report.subject])  # fmt: skip
    except HistoryError as e:
        log.warning("the watch's alerts are not checked: %s", e)
        return f"not checked: {e}"
    return outcome.text
