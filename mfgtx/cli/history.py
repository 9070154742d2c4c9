"""``mfgtx history``: the latest runs a job's history holds (status, rows, bad lots, time);
``mfgtx promote``: the bundle the plant view shows for a job.

The history is read only (:func:`mfgtx.history.read_history`): listing never creates or
upgrades it. One line per run, newest first, then the JSON summary line. ``--alerts`` lists
the latest alerts instead (:mod:`mfgtx.alerts`): when each opened, its state, subject, reason
and message, and its delivery (``sent``, ``pending``, ``failed: <why>``). ``promote`` writes
the job's row of the promoted bundles (:func:`mfgtx.history.promote`).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING

from mfgtx.cli.jobs import job_config
from mfgtx.cli.output import emit, summary

if TYPE_CHECKING:
    from mfgtx.history import HistoryStore

__all__ = ["history", "promote"]


def history(args: argparse.Namespace) -> int:
    from mfgtx.history import history_url, history_where, read_history, runs
    from mfgtx.jobfile._sql import read_engine
    from mfgtx.jobs import ConfigError

    config = job_config(args)
    url = history_url(config)
    if url is None:
        raise ConfigError(f"{config.source_file}: history: off (or no score section): no history")
    where = history_where(url)
    if url.startswith("sqlite:///") and not Path(where).is_file():
        raise ConfigError(
            f"{config.source_file}: history: {where} does not exist yet; `mfgtx score` "
            "creates it with its first run"
        )
    engine = read_engine(url)
    try:
        if getattr(args, "alerts", False):
            return _alerts(read_history(engine, where), where, args.runs)
        table = runs(read_history(engine, where), limit=args.runs)
    finally:
        engine.dispose()
    for r in table.to_dict("records"):
        seconds = r["seconds"]
        took = "" if seconds is None or math.isnan(seconds) else f" in {seconds:.1f} s"
        counts = "" if r["rows"] is None or r["rows"] != r["rows"] else (
            f": {int(r['rows'])} rows, {int(r['bad_lots'] or 0)} bad lot(s)"
        )  # fmt: skip
        why = f" ({r['message']})" if r["message"] else ""
        emit(
            f"{r['started_at']} {r['status']} {r['kind']} bundle {str(r['bundle_id'])[:12]}"
            f"{counts}{took}{why} [run {r['run_id']}]"
        )
    summary({"ok": True, "command": "history", "history": where, "runs": len(table)})
    return 0


def _alerts(store: HistoryStore, where: str, limit: int) -> int:
    from mfgtx.alerts import alerts

    table = alerts(store, limit=limit)
    for r in table.to_dict("records"):
        until = f" until {r['cleared_at']}" if isinstance(r["cleared_at"], str) else ""
        emit(
            f"{r['opened_at']} {r['state']}{until} {r['subject']}: {r['reason']}: "
            f"{r['message']} [delivery {r['delivery']}, {r['attempts']} attempt(s)]"
        )
    n_open = int((table["state"] == "open").sum()) if len(table) else 0
    summary({"ok": True, "command": "history", "history": where, "alerts": len(table),
             "open": n_open})  # fmt: skip
    return 0


def promote(args: argparse.Namespace) -> int:
    from mfgtx.artifacts import verify_bundle
    from mfgtx.history import history_url, job_name
    from mfgtx.history import promote as promote_bundle
    from mfgtx.jobs import ConfigError
    from mfgtx.jobs._sql import open_job_history

    config = job_config(args)
    url = history_url(config)
    if url is None:
        raise ConfigError(f"{config.source_file}: history: off (or no score section): no history")
    path = args.bundle or config.bundle
    if not path:
        raise ConfigError(f"{config.source_file}: name the bundle to promote (BUNDLE or bundle:)")
    bundle_id = str(verify_bundle(path)["bundle_id"])  # checked: its files and signature
    store, where = open_job_history(url)
    try:
        row = promote_bundle(store, job_name(config), bundle_id, str(Path(path).resolve()),
                             args.note)  # fmt: skip
    finally:
        store.engine.dispose()
    emit(f"promoted {path} (bundle {bundle_id[:12]}) for job {row['job']} in {where}")
    summary({"ok": True, "command": "promote", "job": row["job"], "bundle_id": bundle_id,
             "history": where})  # fmt: skip
    return 0
