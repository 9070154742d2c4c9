"""The demo's days: the quality line scored day by day into its history, with a drifting sensor
and inspection results that arrive later.

A plant scores each day's lots as they come and learns their inspection results hours later;
this module plays that on the sample plant, so the history the dashboard and the watch read
holds a trend, a drift and realized error on the demo's first start:

- the score source (``sensors.csv``) is cut into **days**: the lots that start on one
  calendar day (UTC), ten days of the sample plant;
- one sensor **drifts** (:data:`DRIFTING`, ``temperature_c``: a thermocouple losing its
  calibration): day ``i`` of ``n`` reads ``SPREADS * spread * i / (n - 1)`` higher, ``spread``
  being the sensor's standard deviation over the whole source, so the last day reads two
  spreads (about 20 °C) high. The product is not changed: the inspection results are the
  sample's own, so a model that trusts the sensor errs more as the days go by;
- each day is one ``mfgtx score`` run (:func:`mfgtx.jobs.score.score`) into the job's
  history, then the inspection results (``quality.csv`` rows) whose ``inspected_at`` falls
  before the end of that day arrive through ``mfgtx truth``
  (:func:`mfgtx.jobs.truth.import_truth`); those of the last day's latest lots stay pending;
  then ``mfgtx watch`` judges the day's lots and the model, and its alerts open (the job's
  ``alerts:`` names no target: they are recorded for the dashboard).

The days are derived at demo time, deterministically (no random draw; the same sample gives
the same bytes), into ``<out>/days/<job>/``: ``<day>.sensors.csv`` (the day's drifted input),
``<day>.inspections.csv`` (the results that arrived that day), ``<day>.parquet`` (its
scores, with the demo's score record beside them: a second start that finds them up to date
scores nothing). The job's own output and history stay where its job file says; the days'
runs record into that history. Nothing is trained per day.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mfgtx.jobfile.config import JobConfig, SourceSection

__all__ = [
    "DAYS_JOB",
    "DRIFTING",
    "SPREADS",
    "Day",
    "day_config",
    "days_up_to_date",
    "plan_days",
    "run_day",
    "run_days",
]

log = logging.getLogger(__name__)

#: The demo job that is scored day by day.
DAYS_JOB = "sample_quality"
#: The sensor that drifts, and by how many of its spreads on the last day.
DRIFTING, SPREADS = "temperature_c", 2.0


@dataclass(frozen=True)
class Day:
    """One day of the demo plant.

    Attributes:
        date: the calendar day (UTC) its lots start on, ``2026-03-02``.
        index: its place among the days, 0 first.
        offset: what the drifting sensor reads high on this day (its unit).
        lots: the lots that start on it.
        sensors: the day's score source (the drifted rows of its lots).
        inspections: the inspection results that arrive by the end of the day (``None``:
            none arrive).
        output: where the day's scores go.
    """

    date: str
    index: int
    offset: float
    lots: tuple[str, ...]
    sensors: Path
    inspections: Path | None
    output: Path


def _folder(config: JobConfig, out_dir: str | Path) -> Path:
    return Path(out_dir) / "days" / (config.name or DAYS_JOB)


def _read(source: SourceSection | None, what: str) -> pd.DataFrame:
    if source is None or source.path is None:
        raise ValueError(f"the demo's days need a file as {what}")
    return pd.read_csv(source.path, dtype=str, keep_default_na=False)


def plan_days(config: JobConfig, out_dir: str | Path) -> tuple[list[Day], dict[Path, str]]:
    """The days of ``config``'s data (its ``data.source`` cut by the day its lots start on)
    and the text of every file they need: ``(days, {path: text})``."""
    data = config.data
    if data is None or data.labels is None:
        raise ValueError(f"{config.source_file}: the demo's days need data.labels")
    cols = data.columns
    rows = _read(data.source, "data.source")
    labels = _read(data.labels.source, "data.labels.source")
    reading = pd.to_numeric(rows[DRIFTING].replace("", None), errors="coerce")
    spread = round(float(reading.std()), 2)
    starts = pd.to_datetime(rows.groupby(cols.lot, sort=False)[cols.time].min(), utc=True)
    dates = starts.dt.strftime("%Y-%m-%d")
    order = sorted(set(dates))
    inspected = pd.to_datetime(labels[cols.label_time or "inspected_at"], utc=True)
    folder = _folder(config, out_dir)
    days, files = [], {}
    arrived_before = pd.Timestamp.min.tz_localize("UTC")
    for i, date in enumerate(order):
        offset = round(SPREADS * spread * i / max(1, len(order) - 1), 2)
        lots = tuple(str(x) for x in dates.index[dates == date])
        day = rows[rows[cols.lot].isin(lots)].copy()
        drifted = pd.to_numeric(day[DRIFTING].replace("", None), errors="coerce") + offset
        day[DRIFTING] = [
            "" if pd.isna(v) else f"{v:.2f}" for v in drifted
        ]  # written as the sample writes it: 2 decimals, empty for missing
        sensors = folder / f"{date}.sensors.csv"
        files[sensors] = day.to_csv(index=False, lineterminator="\n")
        end = pd.Timestamp(date, tz="UTC") + pd.Timedelta(days=1)
        came = labels[(inspected >= arrived_before) & (inspected < end)]
        arrived_before = end
        inspections = None
        if len(came):
            inspections = folder / f"{date}.inspections.csv"
            files[inspections] = came.to_csv(index=False, lineterminator="\n")
        days.append(Day(date, i, offset, lots, sensors, inspections, folder / f"{date}.parquet"))
    return days, files


def _write_files(files: dict[Path, str]) -> None:
    """Write each file whose text differs (an unchanged day keeps its bytes and time)."""
    from mfgtx._files import atomic_write_bytes

    for path, text in files.items():
        data = text.encode("utf-8")
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data)


def day_config(config: JobConfig, day: Day) -> JobConfig:
    """``config`` scoring ``day``: its rows, its own output, the job's own history."""
    from mfgtx.history import history_url

    sc = config.score
    if sc is None:
        raise ValueError(f"{config.source_file}: the demo's days need a score section")
    url = history_url(config)
    history = url[len("sqlite:///") :] if url and url.startswith("sqlite:///") else url
    score = dataclasses.replace(
        sc,
        source=SourceSection(path=str(day.sensors)),
        output=dataclasses.replace(sc.output, path=str(day.output)),
        errors=None,
    )
    return dataclasses.replace(config, score=score, history=history)


def days_up_to_date(config: JobConfig, out_dir: str | Path, bundle_id: str) -> bool:
    """Whether every day's scores are up to date: its input as it would be written now
    (the same drift), scored by ``bundle_id`` (:func:`mfgtx.jobs.demo.scores_up_to_date`)."""
    from mfgtx.jobs.demo import scores_up_to_date

    days, files = plan_days(config, out_dir)
    written = all(p.is_file() and p.read_bytes() == t.encode("utf-8") for p, t in files.items())
    return (
        written
        and _history_exists(config)
        and all(scores_up_to_date(day_config(config, d), bundle_id) for d in days)
    )


def _history_exists(config: JobConfig) -> bool:
    """Whether the job's history file is there (a database URL: taken as there)."""
    from mfgtx.history import history_url

    url = history_url(config) or ""
    return not url.startswith("sqlite:///") or Path(url.removeprefix("sqlite:///")).is_file()


def run_day(config: JobConfig, day: Day) -> dict[str, Any]:
    """Run one day of the plant as a scheduler runs it: score its lots into the history
    (raising the job's alerts), record the inspection results that arrived by its end, then
    watch the day's lots and the model (:func:`mfgtx.jobs.watch.watch_job`, its alerts too).
    The summary of the day (a demo step)."""
    from mfgtx.jobs.score import score
    from mfgtx.jobs.truth import import_truth
    from mfgtx.jobs.watch import watch_job

    scored = score(config)
    step: dict[str, Any] = {**scored.summary(), "job": config.name or DAYS_JOB, "day": day.date}
    step.update(drift={DRIFTING: day.offset}, lots=len(day.lots), truth=0)
    if day.inspections is not None:
        errors = day.inspections.with_name(f"{day.date}.truth-errors.csv")
        arrived = import_truth(config, day.inspections, errors=errors)
        step["truth"] = arrived.lots
    watched = watch_job(config, last=len(day.lots))  # the day's lots against training
    step.update(watch=watched.report.verdict, watch_alerts=watched.alerts)
    return step


def run_days(
    config: JobConfig, out_dir: str | Path, bundle_id: str, *, rescore: bool = False
) -> Iterator[dict[str, Any]]:
    """Score every day of ``config``'s data (:func:`plan_days`) in order, one run each, and
    yield each day's summary; a day whose scores are up to date (same bundle, same drifted
    input) is skipped unless ``rescore`` or the job's history file is gone (the days are
    there to fill it). Last, a step with ``"phase": "days"``."""
    from mfgtx.history import history_url
    from mfgtx.jobs.demo import _record_scores, scores_up_to_date

    days, files = plan_days(config, out_dir)
    _write_files(files)
    rescore = rescore or not _history_exists(config)
    ran = 0
    for day in days:
        job = day_config(config, day)
        if not rescore and scores_up_to_date(job, bundle_id):
            continue
        yield run_day(job, day)
        _record_scores(job, bundle_id)
        ran += 1
    url = history_url(config) or ""
    yield {
        "job": config.name or DAYS_JOB,
        "phase": "days",
        "days": len(days),
        "ran": ran,
        "cached": ran == 0,
        "drift": {DRIFTING: days[-1].offset if days else 0.0},
        "history": url.removeprefix("sqlite:///"),
    }
