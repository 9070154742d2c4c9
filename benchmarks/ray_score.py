"""``mfgtx score --engine ray`` against the one-process score on a generated plant export.

A folder of CSV files like the sample plant's ``sensors.csv`` (lots of ``--lot-rows`` minute
readings, ``--file-rows`` rows a file, cut mid-lot as hourly exports are; or, ``--layout``,
one such file or a SQLite table of the same rows) is scored by a tiny
quality model (the sample job, one epoch) in one process and with ``--engine ray --workers 2``,
each run in a fresh process. The two outputs and errors files must be byte-identical; the
table gives both times and the peak memory (RSS) of the driver and of each Ray worker, for a
source of ``--rows`` rows and one of a quarter of it: a worker holds a chunk and its
partition's output, never the source, so its peak stays flat as the source grows.

Usage::

    python benchmarks/ray_score.py [--rows 2000000] [--workers 2] [--work /tmp/ray_score]

``--rows 10000000`` is the issue's size (about 0.7 GB of CSV; minutes on two cores).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness
import numpy as np
import pandas as pd

ROOT = _harness.ROOT
JOB = ROOT / "pipelines" / "configs" / "sample_quality.yaml"
STAMP = "%Y-%m-%dT%H:%M:%S+00:00"
SENSORS = ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"]


def generate(
    folder: Path, rows: int, lot_rows: int, file_rows: int, seed: int, *, layout: str = "folder"
) -> None:
    """``rows`` sensor rows in lots of ``lot_rows``, written ``file_rows`` rows a file
    (``layout`` ``folder``), appended to one file (``file``) or to the table ``sensors`` of
    the SQLite database ``plant.db`` (``sqlite``)."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-03-02T00:00:00Z")
    base = np.array([170.0, 5.0, 1.7, 11.5])
    for k, at in enumerate(range(0, rows, file_rows)):
        i = np.arange(at, min(at + file_rows, rows))
        lot = i // lot_rows
        line = lot % 3 + 1
        frame = pd.DataFrame({
            "line": [f"L{n}" for n in line],
            "lot": [f"L{n}-{m:06d}" for n, m in zip(line, lot, strict=True)],
            "timestamp": (start + pd.to_timedelta(i, unit="min")).strftime(STAMP),
        })  # fmt: skip
        values = base * (1 + 0.02 * rng.standard_normal((len(i), 4)))
        for c, name in enumerate(SENSORS):
            frame[name] = np.round(values[:, c], 3)
        if layout == "sqlite":
            with sqlite3.connect(folder / "plant.db") as db:
                frame.to_sql("sensors", db, index=False, if_exists="append")
        elif layout == "file":
            frame.to_csv(folder / "export.csv", index=False, header=k == 0, mode="a")
        else:
            frame.to_csv(folder / f"export-{k:05d}.csv", index=False)


def score_once(job: list[str], engine: str, workers: int) -> dict[str, object]:
    """One score in this process (the child): seconds, own peak RSS, workers' peaks."""
    from mfgtx.engine import EngineSpec
    from mfgtx.jobs import load_config, score

    peaks: dict[int, float] = {}

    class Workers(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "scored by worker" in record.msg and isinstance(record.args, tuple):
                pid, mib = int(record.args[1]), float(record.args[2])
                peaks[pid] = max(peaks.get(pid, 0.0), mib)

    log = logging.getLogger("mfgtx.jobs._ray_score")
    log.setLevel(logging.INFO)
    log.addHandler(Workers())
    spec = EngineSpec("ray", workers=workers) if engine == "ray" else None
    t0 = time.perf_counter()
    outcome = score(load_config(job[0], job[1:]), engine=spec)
    return {
        "wall": time.perf_counter() - t0,
        "score_s": outcome.seconds,
        "rows_out": outcome.output_rows,
        "driver_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "workers_mib": sorted(peaks.values()),
    }


def _child(job: list[str], engine: str, workers: int) -> dict[str, object]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [
        sys.executable,
        __file__,
        "--child",
        engine,
        "--workers",
        str(workers),
        "--job",
        json.dumps(job),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"score --engine {engine} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("ray_score", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=400_000, help="rows of the larger source")
    p.add_argument("--lot-rows", type=int, default=480)
    p.add_argument("--file-rows", type=int, default=50_000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument(
        "--layout",
        choices=["folder", "file", "sqlite"],
        default="folder",
        help="a folder of files (partitions: runs of files), one file (every n-th frame) or "
        "a SQLite table (ranges of its rows)",
    )
    p.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    p.add_argument("--child", choices=["local", "ray"], help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(score_once(json.loads(args.job), args.child, args.workers)))
        return 0
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    run = _harness.start("ray_score", args)
    work = args.work or Path(tempfile.mkdtemp(prefix="ray_score-"))
    shutil.rmtree(work, ignore_errors=True)
    from mfgtx.jobs import load_config, train

    bundle = work / "bundle"
    base = [str(JOB), f"bundle={bundle}", "alerts=null", "history=off"]
    sample = ROOT / "sample_data"
    train("sensor", load_config(base[0], [*base[1:],
        f"data.source.path={sample / 'sensors.csv'}",
        f"data.labels.source.path={sample / 'quality.csv'}",
        "train.epochs=1", "train.progress=log",
    ]))  # fmt: skip
    for rows in (args.rows // 4, args.rows):
        source = work / f"source-{rows}"
        t0 = time.perf_counter()
        generate(source, rows, args.lot_rows, args.file_rows, args.seed,
                 layout=args.layout)  # fmt: skip
        made = time.perf_counter() - t0
        mb = sum(f.stat().st_size for f in source.iterdir()) / 1e6
        got, digests = {}, {}
        for engine in ("local", "ray"):
            out = work / f"out-{rows}-{engine}" / "scores.csv"
            where = (f"data.source={{url: 'sqlite:///{source / 'plant.db'}', table: sensors}}"
                     if args.layout == "sqlite" else f"data.source.path={source}")  # fmt: skip
            job = [*base, where, f"score.output.path={out}"]
            got[engine] = _child(job, engine, args.workers)
            digests[engine] = (_digest(out), _digest(out.with_name("scores.errors.csv")))
        same = digests["local"] == digests["ray"]
        local, ray = got["local"], got["ray"]
        run.row("score", {
            "layout": args.layout, "rows": rows, "source MB": round(mb, 1),
            "output rows": local["rows_out"],
            "one process": round(local["wall"], 1), f"ray x{args.workers}": round(ray["wall"], 1),
            "speed-up": round(local["wall"] / ray["wall"], 2),
            "driver (one process)": round(local["driver_mib"]),
            "driver (ray)": round(ray["driver_mib"]),
            "workers (ray)": " / ".join(f"{m:.0f}" for m in ray["workers_mib"]),
            "byte-identical": same,
        }, units={"one process": "s", f"ray x{args.workers}": "s", "driver (one process)": "MiB",
                  "driver (ray)": "MiB", "workers (ray)": "MiB peak RSS"})  # fmt: skip
        print(f"{rows} rows ({mb:.0f} MB, generated in {made:.0f} s): one process "
              f"{local['wall']:.1f} s, ray x{args.workers} {ray['wall']:.1f} s; peak RSS driver "
              f"{local['driver_mib']:.0f} / {ray['driver_mib']:.0f} MiB, workers "
              f"{ray['workers_mib']} MiB; byte-identical: {same}", file=sys.stderr)  # fmt: skip
        if not same:
            run.note(f"{rows} rows: the outputs DIFFER ({digests})")
        shutil.rmtree(source)
    load = os.getloadavg()
    run.note(f"load average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; the Ray "
             "time includes starting Ray and the actors (each loads the bundle once)")  # fmt: skip
    run.write()
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["byte-identical"] for r in run.tables["score"]["rows"]) else 1


if __name__ == "__main__":
    sys.exit(main())
