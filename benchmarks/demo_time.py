"""How long ``mfgtx demo`` takes from a fresh start: wall and CPU seconds per model and phase.

Runs the demo's jobs (:func:`mfgtx.jobs.demo.run_demo`, what ``./run.sh demo`` runs before it
opens the dashboard) into a fresh temporary folder, timing each job's training and scoring:
wall seconds, CPU seconds (user + system of this process, every thread) and the load
average when the phase ended. Then it starts the demo a second time on the same folder,
which must reuse every bundle and every score (the score cache), and times that too. Each
model's verdict against its baselines is read from its bundle: ``better`` (beats the best
baseline beyond resampling noise), ``tie`` (the test lots cannot tell them apart: the
dashboard says "use with care"), ``worse`` (a baseline wins beyond noise).

On a shared machine the wall times grow with the load; the CPU seconds barely do, so they
are the figure to compare between runs (on 2 quiet cores the wall time is about the CPU
seconds divided by the cores torch uses).

Usage::

    python benchmarks/demo_time.py [--data sample_data] [--quick] [--keep DIR]
"""

from __future__ import annotations

import logging
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _harness


def _cores() -> int:
    """The cores this process may run on (``taskset`` narrows them), not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _level(bundle: str) -> str:
    """The bundle's standing against its best baseline (as the dashboard words it)."""
    from mfgtx.artifacts import verify_bundle

    metrics = verify_bundle(bundle)["manifest"].get("metrics") or {}
    primary = metrics.get("primary")
    higher = (metrics.get("higher_is_better") or {}).get(primary)
    found = [d for d in metrics.get("differences") or [] if d.get("metric") == primary]
    if not found or higher is None:
        return "unknown"
    low, high = float(found[0]["low"]), float(found[0]["high"])
    if low <= 0 <= high:
        return "tie"
    return "better" if (low > 0) == bool(higher) else "worse"


def timed_demo(data: Path, out: Path, *, quick: bool) -> tuple[list[dict[str, Any]], float]:
    """One start of the demo: a row per job and phase that ran, and the total wall seconds."""
    from mfgtx.jobs.demo import run_demo

    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    wall, cpu = t0, _cpu_seconds()
    for step in run_demo(data, out, quick=quick):
        if step.get("start") or step.get("training"):
            wall, cpu = time.perf_counter(), _cpu_seconds()
            continue
        if step.get("day"):  # timed as one phase, "days", ended by its own step
            continue
        phase = step.get("phase") or ("score" if step.get("command") == "score" else "train")
        now, cpu_now = time.perf_counter(), _cpu_seconds()
        row = {
            "job": step["job"],
            "phase": phase,
            "wall": round(now - wall, 1),
            "cpu": round(cpu_now - cpu, 1),
            "load": round(os.getloadavg()[0], 2),
            "done": "cached" if step.get("cached") else "reused" if step.get("reused") else "ran",
        }
        if phase == "train" and step.get("bundle"):
            row["verdict"] = _level(step["bundle"])
        rows.append(row)
        print(
            f"{row['job']:18s} {phase:5s} {row['wall']:7.1f} s wall {row['cpu']:7.1f} s CPU "
            f"load {row['load']:5.2f} {row['done']} {row.get('verdict', '')}",
            file=sys.stderr,
        )
        wall, cpu = time.perf_counter(), _cpu_seconds()
    return rows, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("demo_time", __doc__)
    p.add_argument("--data", type=Path, default=_harness.ROOT / "sample_data")
    p.add_argument("--quick", action="store_true", help="the quick demo (tiny models)")
    p.add_argument("--keep", type=Path, help="run into this (new) folder and keep it")
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    os.chdir(_harness.ROOT)  # the job files' relative paths
    run = _harness.start("demo_time", args)
    out = args.keep or Path(tempfile.mkdtemp(prefix="mfgtx-demo-"))
    if args.keep is not None and args.keep.exists():
        p.error(f"--keep {args.keep}: exists; name a new folder (the demo must start fresh)")
    cpu0 = _cpu_seconds()
    try:
        rows, total = timed_demo(args.data, out, quick=args.quick)
        cpu_total = _cpu_seconds() - cpu0
        again, second = timed_demo(args.data, out, quick=args.quick)
    finally:
        if args.keep is None:
            shutil.rmtree(out, ignore_errors=True)
    units = {"wall": "s", "cpu": "s"}
    for row in rows:
        run.row("phases", row, units=units)
    for job in dict.fromkeys(r["job"] for r in rows):
        mine = {r["phase"]: r for r in rows if r["job"] == job}
        run.row(
            "models",
            {
                "job": job,
                "train wall": mine["train"]["wall"],
                "train cpu": mine["train"]["cpu"],
                "score wall": mine["score"]["wall"],
                "score cpu": mine["score"]["cpu"],
                "days wall": mine["days"]["wall"] if "days" in mine else None,
                "verdict": mine["train"].get("verdict", "unknown"),
            },
            units={
                "train wall": "s",
                "train cpu": "s",
                "score wall": "s",
                "score cpu": "s",
                "days wall": "s",
            },
        )
    cached = all(r["done"] != "ran" for r in again)
    run.row(
        "total",
        {
            "first start wall": round(total, 1),
            "first start cpu": round(cpu_total, 1),
            "second start wall": round(second, 1),
            "second start all cached": cached,
            "cores": _cores(),
            "machine cores": os.cpu_count(),
            "cpu": _harness.cpu_model(),
            "load at end": round(os.getloadavg()[0], 2),
        },
        units={"first start wall": "s", "first start cpu": "s", "second start wall": "s"},
    )
    print(
        f"total {total:.0f} s wall, {cpu_total:.0f} s CPU on {_cores()} cores "
        f"({_harness.cpu_model()}), load {os.getloadavg()[0]:.2f}; second start {second:.1f} s "
        f"({'every bundle and score reused' if cached else 'something was redone'})",
        file=sys.stderr,
    )
    run.write()
    return 0 if cached else 1


if __name__ == "__main__":
    raise SystemExit(main())
