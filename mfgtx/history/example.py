"""A made-up history, as hourly ``mfgtx score`` runs would leave it: for the plant view's
tests, its benchmark and its screenshot, without training or scoring a model.

:func:`example_history` writes, for every hour of ``days`` days, one run and one scored lot
per line, and the truth of lots older than ``truth_lag_hours``:

- ``classification``: lots ``L1-0001`` of lines ``L1``, ``L2``..., ``p_good``/``p_bad`` and a
  ``decision``; the last line drifts towards bad lots over the last tenth of the days;
- ``regression``: machines (the lines' names) wearing out, ``rul_cycles`` with an 80 %
  interval (``rul_cycles_q10``, ``rul_cycles_q90``), each machine replaced when worn out.

:func:`example_job` writes the job file such runs name: its ``name``, ``keys``, ``limits`` and
``history``, so a reader finds the job, its lines and its limits as it would a plant's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.history.records import score_records
from mfgtx.history.store import CHUNK, HistoryStore, upsert
from mfgtx.history.tables import RUNS, SCORES, TRUTH

__all__ = ["example_history", "example_job"]

_ISO = "%Y-%m-%dT%H:%M:%SZ"


def example_job(
    path: str | Path,
    *,
    name: str,
    history: str,
    task: str = "classification",
    bundle: str | None = None,
) -> Path:
    """Write the job file of an example history at ``path``: ``keys: [line]`` and an alarm
    above 0.8 on ``p_bad`` for a classifier; machines as lots and an alarm below 30 cycles
    on ``rul_cycles`` for remaining life. Its path."""
    path = Path(path)
    if task == "classification":
        columns = (
            "{lot: lot, time: timestamp, sensors: [temperature_c], targets: [defect], keys: [line]}"
        )
        limits = "{p_bad: {alarm_above: 0.8}}"
    else:
        columns = (
            "{lot: machine, time: timestamp, sensors: [vibration_mm_s], targets: [rul_cycles]}"
        )
        limits = "{rul_cycles: {alarm_below: 30}}"
    path.write_text(
        f"name: {name}\n"
        f"data:\n  source: {{path: {path.parent / (name + '.csv')}}}\n  columns: {columns}\n"
        f"bundle: {bundle or path.parent / 'models' / name}\n"
        f"history: {history}\n"
        f"limits: {limits}\n"
        f"score:\n  output: {{path: {path.parent / (name + '.parquet')}}}\n",
        encoding="utf-8",
    )
    return path


def _rows(task: str, lines: Sequence[str], hour: int, at: pd.Timestamp, hours: int,
          rng: np.random.Generator) -> pd.DataFrame:  # fmt: skip
    end = at.strftime("%Y-%m-%dT%H:%M:%S")
    if task == "classification":
        drift = np.array(
            [0.0] * (len(lines) - 1) + [max(0.0, (hour - 0.9 * hours) / (0.1 * hours))]
        )
        logit = (
            -2.5 + 0.6 * np.sin(hour / 24 * 2 * np.pi) + 3.0 * drift + rng.normal(0, 1, len(lines))
        )
        p_bad = 1 / (1 + np.exp(-logit))
        return pd.DataFrame({
            "line": list(lines), "lot": [f"{ln}-{hour + 1:04d}" for ln in lines],
            "window_end": end, "p_good": 1 - p_bad, "p_bad": p_bad,
            "decision": np.where(p_bad > 0.5, "bad", "good"),
        })  # fmt: skip
    life = 200 + 40 * np.arange(len(lines))  # hours each machine lasts
    rul = (life - (hour + 17 * np.arange(len(lines))) % life).astype(float)
    point = rul + rng.normal(0, 6, len(lines))
    return pd.DataFrame({
        "lot": list(lines), "window_end": end, "rul_cycles": point,
        "rul_cycles_q10": point - 15 - rng.uniform(0, 5, len(lines)),
        "rul_cycles_q90": point + 15 + rng.uniform(0, 5, len(lines)),
    })  # fmt: skip


def example_history(
    store: HistoryStore,
    *,
    bundle_id: str,
    job_file: str,
    task: str = "classification",
    lines: Sequence[str] = ("L1", "L2", "L3"),
    days: float = 90,
    end: str | None = None,
    truth_lag_hours: int = 6,
    lag_minutes: int = 5,
    seed: int = 0,
) -> int:
    """Write ``days`` of hourly runs of ``bundle_id`` ending at ``end`` (ISO UTC text;
    default: the current hour) into ``store``: one scored row per line and hour, truth for
    rows older than ``truth_lag_hours``; each run starts a minute before it scores, ``lag_minutes``
    after its hour. The number of score rows written."""
    if task not in ("classification", "regression"):
        raise ValueError(f"task: expected classification or regression, found {task!r}")
    rng = np.random.default_rng(seed)
    last = pd.Timestamp(end) if end else pd.Timestamp.now(tz="UTC").floor("h")
    last = last.tz_localize("UTC") if last.tzinfo is None else last.tz_convert("UTC")
    hours = max(1, int(days * 24))
    keys = ("lot", "window_end")
    runs: list[dict[str, Any]] = []
    scores: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    kind = "sensor"
    for hour in range(hours):
        at = last - pd.Timedelta(hours=hours - 1 - hour)
        scored_at = (at + pd.Timedelta(minutes=lag_minutes)).strftime(_ISO)
        run_id = f"example{hour:09d}{bundle_id[:8]}"
        rows = _rows(task, lines, hour, at, hours, rng)
        scores += score_records(
            rows, keys, run_id=run_id, bundle_id=bundle_id, kind=kind, scored_at=scored_at,
            extra_keys=("line",),
        )  # fmt: skip
        bad = int((rows.get("decision", pd.Series(dtype=str)) == "bad").sum())
        runs.append({
            "run_id": run_id, "job_file": job_file, "bundle_id": bundle_id, "kind": kind,
            "started_at": (at + pd.Timedelta(minutes=lag_minutes - 1)).strftime(_ISO),
            "finished_at": scored_at,
            "status": "ok", "rows": len(rows), "bad_lots": bad, "seconds": 0.4,
        })  # fmt: skip
        if hour < hours - truth_lag_hours:
            arrived = (at + pd.Timedelta(hours=truth_lag_hours)).strftime(_ISO)
            if task == "classification":
                values = (rng.uniform(size=len(rows)) < rows["p_bad"]).astype(int).astype(str)
                target, ends = "defect", [""] * len(rows)
            else:
                values = (rows["rul_cycles"] + rng.normal(0, 8, len(rows))).round(1).astype(str)
                target, ends = "rul_cycles", list(rows["window_end"])
            truth += [
                {"lot": str(lot), "window_end": w, "target": target, "value": v,
                 "source": "example inspections", "arrived_at": arrived}
                for lot, w, v in zip(rows["lot"], ends, values, strict=True)
            ]  # fmt: skip
    with store.transaction() as conn:
        for start in range(0, len(runs), CHUNK):
            conn.execute(RUNS.insert(), runs[start : start + CHUNK])
        for start in range(0, len(scores), CHUNK):
            upsert(conn, SCORES, scores[start : start + CHUNK], ("bundle_id", "key"))
        for start in range(0, len(truth), CHUNK):
            upsert(conn, TRUTH, truth[start : start + CHUNK], ("lot", "window_end", "target"))
    return len(scores)
