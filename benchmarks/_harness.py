"""One harness for every benchmark: the shared flags, the machine it ran on, one JSON file a run.

A benchmark builds its parser here, adds its own flags, starts a :class:`Run` and records
its figures in named tables; :meth:`Run.write` leaves ``<out>/<bench>-<timestamp>.json``
(``benchmarks/results/`` by default), which ``benchmarks/tables.py`` turns into the
Markdown tables of ``docs/benchmarks/results.md``. Nothing is pasted by hand::

    p = _harness.parser("vit_speed", __doc__)
    p.add_argument("--steps", type=int, default=3)
    args = p.parse_args()
    run = _harness.start("vit_speed", args)
    run.row("step", {"model": "DefectViT", "median step": 0.41}, units={"median step": "s"})
    run.write()

Shared flags: ``--out`` (the results folder; ``--results`` for a benchmark whose own ``--out``
means something else), ``--threads`` (``torch.set_num_threads``) and ``--seed`` (Python,
NumPy and torch seeded once at the start). The result file holds the arguments, the
environment (CPU, cores, Python, torch and its threads, accelerator, git commit) and the
tables, each column with its unit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import random
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
FORMAT = 1  # the result file's layout; tables.py refuses others


class _Parser(argparse.ArgumentParser):
    """An argument parser that keeps the words it parsed, for the result file."""

    def parse_args(self, args=None, namespace=None):
        parsed = super().parse_args(args, namespace)
        parsed._argv = list(sys.argv[1:] if args is None else args)
        return parsed


def parser(
    bench: str,
    doc: str | None,
    *,
    out_flag: str = "--out",
    threads: int | None = None,
    seed: int = 0,
    formatter_class: type[argparse.HelpFormatter] = argparse.HelpFormatter,
) -> argparse.ArgumentParser:
    """An argument parser with the shared flags; the benchmark adds its own.

    ``out_flag`` names the results-folder flag (``--results`` where the benchmark's own
    ``--out`` is a working folder or file); ``threads`` and ``seed`` are the defaults this
    benchmark had before the harness, so that a plain run measures what it measured.
    """
    description = (doc or bench).strip()
    if formatter_class is argparse.HelpFormatter:
        description = description.split("\n\n")[0]
    p = _Parser(
        prog=f"benchmarks/{bench}.py", description=description, formatter_class=formatter_class
    )
    shared = p.add_argument_group("shared by every benchmark (benchmarks/_harness.py)")
    shared.add_argument(
        out_flag,
        dest="results",
        type=Path,
        default=RESULTS,
        help="folder for the JSON result file of this run (default: benchmarks/results/)",
    )
    shared.add_argument(
        "--threads",
        type=int,
        default=threads,
        help="torch.set_num_threads (default: %(default)s; None leaves torch's own)",
    )
    shared.add_argument(
        "--seed",
        type=int,
        default=seed,
        help="seed of Python, NumPy, torch (default: %(default)s)",
    )
    return p


def _git_commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        )
        dirty = subprocess.run(
            ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() + ("-dirty" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, ``platform`` elsewhere)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment() -> dict[str, Any]:
    """Where a run ran: enough to tell two result files' machines and code apart."""
    env: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],  # a shared machine shows here
        "commit": _git_commit(),
    }
    env["torch"] = torch.__version__
    env["torch_threads"] = torch.get_num_threads()
    env["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    env["accelerator"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    try:
        from mfgtx import __version__

        env["mfgtx"] = __version__
    except ImportError:
        pass
    return env


def _plain(value: Any) -> Any:
    """``value`` as JSON holds it: NumPy/torch scalars as numbers, NaN as null, paths as text."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "item") and callable(value.item):  # numpy / torch scalars
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


class Run:
    """One benchmark run: its arguments, environment and figures, written as one JSON file."""

    def __init__(
        self, bench: str, args: argparse.Namespace | Mapping[str, Any], variant: str | None = None
    ) -> None:
        self.bench = bench
        self.variant = variant  # the inputs a run measures: its own section in the docs
        self.args = dict(vars(args) if isinstance(args, argparse.Namespace) else args)
        self.results = Path(self.args.pop("results", RESULTS))
        self.argv: list[str] = self.args.pop("_argv", [])
        self.started = dt.datetime.now(dt.UTC)
        self._t0 = time.perf_counter()
        self.environment = environment()
        self.tables: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []

    def row(
        self, table: str, cells: Mapping[str, Any], *, units: Mapping[str, str] | None = None
    ) -> None:
        """Add one row of ``table``; ``units`` names the unit of a column (once is enough)."""
        t = self.tables.setdefault(table, {"columns": [], "units": {}, "rows": []})
        for name in cells:
            if name not in t["columns"]:
                t["columns"].append(name)
        t["units"].update(units or {})
        t["rows"].append(dict(cells))

    def note(self, text: str) -> None:
        """A sentence printed under the tables (a verdict, a caveat)."""
        self.notes.append(text)

    def as_dict(self) -> dict[str, Any]:
        return _plain(
            {
                "format": FORMAT,
                "bench": self.bench,
                **({"variant": self.variant} if self.variant else {}),
                "started": self.started.isoformat(timespec="seconds"),
                "seconds": round(time.perf_counter() - self._t0, 3),
                "argv": self.argv,
                "args": self.args,
                "environment": self.environment,
                "tables": self.tables,
                "notes": self.notes,
            }
        )

    def write(self) -> Path:
        """Write ``<results>/<bench>-<UTC timestamp>.json`` and return its path."""
        self.results.mkdir(parents=True, exist_ok=True)
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        path = self.results / f"{self.bench}-{stamp}.json"
        n = 1
        while path.exists():  # two runs in the same second
            n += 1
            path = self.results / f"{self.bench}-{stamp}-{n}.json"
        path.write_text(json.dumps(self.as_dict(), indent=2) + "\n")
        print(f"\nresult file: {path}", file=sys.stderr)
        return path


def start(bench: str, args: argparse.Namespace, variant: str | None = None) -> Run:
    """Apply ``--threads`` and ``--seed`` and open the run's record; ``variant`` names what
    the run measures where one benchmark measures different inputs (the docs keep the latest
    run of each benchmark and variant)."""
    seed = getattr(args, "seed", None)
    threads = getattr(args, "threads", None)
    if seed is not None:
        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002  # scripts that draw from NumPy's global state
        torch.manual_seed(seed)
    if threads is not None:
        torch.set_num_threads(threads)
    return Run(bench, args, variant)
