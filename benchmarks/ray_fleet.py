"""Training a ten-member ensemble on a six-condition fleet of 260 engines, in one process and
on Ray: the wall time of each, their ratio, and the two bundles' RMSE (issue 40's target: Ray
with two workers in at most 0.55x the one-process time on 2 quiet cores, the same RMSE to
1e-6).

    python benchmarks/ray_fleet.py ../shared/datasets/cmapss_fd001 --work /tmp/fleet
    python benchmarks/ray_fleet.py ../shared/datasets/cmapss_fd001 --work /tmp/fleet \\
        --members 2 --epochs 1          # a short run: checks the script, measures little

The fleet is ``benchmarks/cmapss_conditions.py``'s, scaled up: FD001's 100 training engines
and 160 more, each a copy of one of them (drawn at random) with a little noise on every
sensor (a tenth of its spread), so no two engines are the same; then each cycle draws one of
FD002's six operating conditions, as there. The job is the shipped
``pipelines/configs/cmapss_fd001.yaml`` copied with its paths changed and the ``regimes``
line added (:func:`cmapss_conditions.job_file`), the ten-member ensemble as shipped (or
``--members``, ``--epochs`` for a short run), ``train.threads`` per member
(``--member-threads``, 1 by default) and ``precision: fp32`` with ``deterministic: true``
(``--precision``; the recipe's ``auto`` times both precisions on the machine it runs on, so
a loaded machine can pick bf16 in one run and fp32 in the other): each member then trains
the same way in either run, so the two bundles are the same.

Both runs are ``mfgtx train sensor`` in a fresh process (``--engine ray --workers N`` for
the second, Ray started on this machine), timed from start to the bundle written; each
writes its own bundle. The RMSE is each bundle's on the job's test engines (its report).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import _harness
import cmapss_conditions
import numpy as np
import pandas as pd
import yaml

from mfgtx.datasets import read_cmapss, read_cmapss_rul

NAME = "FD001X6"


def scaled(train: pd.DataFrame, engines: int, *, seed: int) -> pd.DataFrame:
    """``train``'s engines and ``engines - len(units)`` copies of engines drawn at random,
    each copy's sensors with noise of a tenth of the sensor's spread, numbered 1 ...
    ``engines``."""
    rng = np.random.default_rng(seed)
    units = np.sort(train["unit"].unique())
    picks = np.concatenate([units, rng.choice(units, max(engines - len(units), 0))])[:engines]
    sensors = cmapss_conditions.SENSORS
    spread = train[sensors].std().to_numpy()
    frames = []
    for number, unit in enumerate(picks, start=1):
        engine = train[train["unit"] == unit].copy()
        engine["unit"] = number
        if number > len(units):  # a copy: not the same engine twice
            engine[sensors] = engine[sensors] + rng.normal(
                0, spread / 10, (len(engine), len(sensors))
            )
        frames.append(engine)
    return pd.concat(frames, ignore_index=True)


def make_fleet(folder: Path, out: Path, *, engines: int, seed: int, young: int) -> Path:
    """Write the fleet's NASA-format files and its job file to ``out``; the job file's path."""
    out.mkdir(parents=True, exist_ok=True)
    train = read_cmapss(folder / "train_FD001.txt.gz")
    test = read_cmapss(folder / "test_FD001.txt.gz")
    truth = read_cmapss_rul(folder / "RUL_FD001.txt.gz")
    train = scaled(train, engines, seed=seed)
    train, test, truth = cmapss_conditions.conditioned(train, test, truth, seed=seed, young=young)
    cmapss_conditions._write(train, out / f"train_{NAME}.txt.gz")
    cmapss_conditions._write(test, out / f"test_{NAME}.txt.gz")
    rul = pd.DataFrame({"rul": truth.astype(np.int64)})
    cmapss_conditions._write(rul, out / f"RUL_{NAME}.txt.gz")
    path = out / "job.yaml"
    path.write_text(yaml.safe_dump(cmapss_conditions.job_file(out, NAME), sort_keys=False))
    return path


def job_for(base: dict, out: Path, run: str, args) -> Path:
    """The fleet's job for one run: its own bundle, and the short-run options."""
    job = json.loads(json.dumps(base))
    job["bundle"] = str(out / "models" / run)
    job["train"]["progress"] = "off"
    if args.members is not None:
        job["train"]["ensemble"] = {"members": args.members}
    if args.epochs is not None:
        job["train"]["epochs"] = args.epochs
    if args.member_threads:
        job["train"]["threads"] = args.member_threads
    if args.precision != "as-shipped":  # auto times both on the machine: runs may differ
        job["train"]["precision"] = args.precision
        job["train"]["deterministic"] = True
    path = out / f"job_{run}.yaml"
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def train_once(job: Path, *engine: str) -> tuple[float, dict]:
    """``mfgtx train sensor JOB ...`` in a fresh process: wall seconds and its summary."""
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "mfgtx", "train", "sensor", str(job), *engine],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [
            str(_harness.ROOT), os.environ.get("PYTHONPATH", "")]))},
    )  # fmt: skip
    seconds = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(
            f"mfgtx train {' '.join(engine) or '(local)'} failed:\n{done.stderr[-4000:]}"
        )
    return seconds, json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = _harness.parser("ray_fleet", __doc__, out_flag="--results")
    ap.add_argument("folder", type=Path, help="the C-MAPSS FD001 folder (read in place)")
    ap.add_argument(
        "--work", type=Path, required=True, help="a new folder for the fleet and bundles"
    )
    ap.add_argument("--engines", type=int, default=260, help="training engines (default 260)")
    ap.add_argument("--young", type=int, default=6, help="test engines cut to 15-25 cycles")
    ap.add_argument(
        "--members", type=int, default=None, help="ensemble members (default: as shipped, 10)"
    )
    ap.add_argument("--epochs", type=int, default=None, help="epochs (default: as shipped, 30)")
    ap.add_argument("--workers", type=int, default=2, help="Ray workers (default 2)")
    ap.add_argument(
        "--member-threads", type=int, default=1,
        help="train.threads, torch threads per member in both runs (default 1; 0: torch's own)",
    )  # fmt: skip
    ap.add_argument(
        "--precision", choices=["fp32", "bf16", "as-shipped"], default="fp32",
        help="train.precision in both runs, with deterministic: true (default fp32; "
        "as-shipped: the recipe's auto, which times both on the machine and may choose "
        "differently in the two runs)",
    )  # fmt: skip
    args = ap.parse_args(argv)
    run = _harness.start("ray_fleet", args)
    if args.work.exists() and any(args.work.iterdir()):
        raise SystemExit(f"{args.work} is not empty: give a new folder")
    job = make_fleet(args.folder, args.work, engines=args.engines, seed=args.seed, young=args.young)
    base = yaml.safe_load(job.read_text())
    local_s, local = train_once(job_for(base, args.work, "local", args))
    ray_s, ray = train_once(
        job_for(base, args.work, "ray", args), "--engine", "ray", "--workers", str(args.workers)
    )
    rmse_local, rmse_ray = local["metrics"]["rmse"], ray["metrics"]["rmse"]
    members = args.members or base["train"]["ensemble"]["members"]
    epochs = args.epochs or base["train"]["epochs"]
    print(f"fleet: {args.engines} engines, six conditions; {members} members, {epochs} epoch(s)")
    print(f"one process: {local_s:.1f} s   ray ({args.workers} workers): {ray_s:.1f} s   "
          f"ratio {ray_s / local_s:.3f}")  # fmt: skip
    print(f"RMSE one process {rmse_local:.6f}   ray {rmse_ray:.6f}   "
          f"difference {abs(rmse_ray - rmse_local):.2e}")  # fmt: skip
    for name, seconds, summary in (("one process", local_s, local), ("ray", ray_s, ray)):
        run.row(
            "ensemble training on the six-condition fleet",
            {"run": name, "engines": args.engines, "members": members, "epochs": epochs,
             "workers": args.workers if name == "ray" else 1, "wall": round(seconds, 2),
             "rmse": summary["metrics"]["rmse"]},
            units={"wall": "s", "rmse": "cycles"},
        )  # fmt: skip
    run.row(
        "ray against one process",
        {"ratio": round(ray_s / local_s, 4), "rmse difference": abs(rmse_ray - rmse_local)},
        units={"ratio": "x", "rmse difference": "cycles"},
    )
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
