"""The argparse tree of the ``mfgtx`` command: every command, its flags and its handler.

Building it imports no model: the kinds ``train`` accepts are read when argparse first asks
(:class:`_KindNames`), so that ``mfgtx --version`` stays fast.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import mfgtx
from mfgtx.cli import app, bench, bundle, check, demo, history, jobs, truth, watch

__all__ = ["build_parser"]


class _KindNames:
    """The names of the registered kinds (:data:`mfgtx.kinds.KINDS`, with the plugins
    ``MFGTX_KINDS`` and the ``mfgtx.kinds`` entry points name), read when argparse first asks,
    so that ``mfgtx --version`` imports no model."""

    def _names(self) -> list[str]:
        from mfgtx.kinds import KINDS

        return list(KINDS)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())


_KINDS = _KindNames()


def _job_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML job file (see pipelines/configs/)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a key of the job file, e.g. --set train.epochs=3 (repeatable)",
    )


def _workers(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, found {text!r}")
    return n


def _engine_parent(*, ddp: bool = False) -> argparse.ArgumentParser:
    """``--engine``, ``--address``, ``--workers``: where a job's independent tasks run
    (:mod:`mfgtx.engine`), the same flags for ``train`` and ``score``; each wins over the
    job file's ``engine`` section (unset: the section's). ``ddp``: also ``--ddp`` (train)."""
    engine = argparse.ArgumentParser(add_help=False)
    group = engine.add_argument_group("engine (where the work runs; default: the job's engine)")
    group.add_argument(
        "--engine",
        choices=("local", "ray"),
        help="local: in this process (the default); ray: as Ray tasks, on this machine or on "
        "the cluster at --address (needs mfgtx[ray])",
    )
    group.add_argument(
        "--address",
        metavar="ADDR",
        help="the Ray cluster to join (auto, HEAD:6379, ray://HEAD:10001); default: start Ray "
        "on this machine",
    )
    group.add_argument(
        "--workers", type=_workers, metavar="N", help="Ray tasks at once (default: as many as fit)"
    )
    if ddp:
        group.add_argument(
            "--ddp",
            type=_workers,
            metavar="N",
            help="train the one model (no train.ensemble or train.sweep) data-parallel over N "
            "Ray Train workers, each with train.threads threads (1 unless set), as N torchrun "
            "processes would; needs --engine ray (default: one process)",
        )
    return engine


def build_parser() -> argparse.ArgumentParser:
    """The ``mfgtx`` parser; each command's handler is its ``func`` default."""
    parser = argparse.ArgumentParser(
        prog="mfgtx",
        description="Manufacturing analytics on Transformer models.",
        epilog="Exit codes: 0 success, 2 bad input or config, 1 failure, 143/130 stopped by "
        "SIGTERM/SIGINT (a summary line says so; train continues with --resume); watch: 3 "
        "when the bundle is not valid.",
    )
    parser.add_argument("--version", action="version", version=f"mfgtx {mfgtx.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    # the same two flags after the command (pipelines/*.py put the command first)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    engine = _engine_parent()

    p = sub.add_parser(
        "train",
        parents=[common, _engine_parent(ddp=True)],
        help="train a model and write its bundle",
    )
    kind = p.add_argument(
        "kind",
        choices=_KINDS,
        metavar="KIND",  # add_argument formats the choices to check them: not the kinds yet
        help="sensor: lot quality or RUL from sensor readings; forecast: sensor forecasts; "
        "vit: defect images; "
        "or a kind a plugin registers (MFGTX_KINDS, entry points mfgtx.kinds)",
    )
    kind.metavar = None  # usage and help list the kinds, read when they are shown
    _job_args(p)
    p.add_argument(
        "--resume", action="store_true", help="continue a killed run from its checkpoint"
    )
    p.set_defaults(func=jobs.train)

    p = sub.add_parser(
        "evaluate", parents=[common], help="judge a bundle against baselines on the test lots"
    )
    _job_args(p)
    p.add_argument("--report", help="also write the report as JSON to this file")
    p.set_defaults(func=jobs.evaluate)

    p = sub.add_parser(
        "score", parents=[common, engine], help="write a bundle's predictions for new data"
    )
    _job_args(p)
    p.set_defaults(func=jobs.score)

    p = sub.add_parser(
        "history", parents=[common], help="list the latest score runs of a job's history"
    )
    _job_args(p)
    p.add_argument("--runs", type=int, default=20, metavar="N", help="runs shown (default 20)")
    p.add_argument(
        "--alerts", action="store_true", help="list the latest N alerts (state, delivery) instead"
    )
    p.set_defaults(func=history.history)

    p = sub.add_parser(
        "truth",
        parents=[common],
        help="record inspection results that arrived later in a job's history, joined to "
        "their predictions",
    )
    _job_args(p)
    p.add_argument(
        "--labels", required=True, metavar="FILE", help="the labels file (CSV or Parquet)"
    )
    p.add_argument("--on", metavar="COLUMN", help="its lot column (default data.labels.on)")
    p.add_argument(
        "--window-end",
        metavar="COLUMN",
        help="the outcome of one window (a cycle or a time) in place of the whole lot",
    )
    p.add_argument(
        "--errors",
        metavar="FILE.csv",
        help="the bad rows (default: beside the history, <labels>.truth-errors.csv)",
    )
    p.set_defaults(func=truth.truth)

    p = sub.add_parser(
        "watch",
        parents=[common],
        help="check a job's bundle still holds: input drift against its training data, "
        "realized error where the truth arrived (exit 3: not valid)",
        description="Compare the score source's latest lots with the training data the bundle "
        "recorded (per sensor: drift, range, missing, dead or stuck) and the bundle's scores "
        "whose truth arrived with its own test figures; print the report and record it in the "
        "job's history. Exit code 0: still valid, or nothing to judge yet; 3: not valid; 2: "
        "the job file, bundle or data cannot be used; 1: failure.",
    )
    _job_args(p)
    p.add_argument(
        "--last", type=int, metavar="N", help="watch the latest N lots of the score source"
    )
    p.set_defaults(func=watch.watch)

    p = sub.add_parser(
        "promote", parents=[common], help="mark the bundle the plant view shows for a job"
    )
    _job_args(p)
    p.add_argument("bundle", nargs="?", help="the bundle folder (default: the job's bundle:)")
    p.add_argument("--note", help="why this bundle, kept with the promotion")
    p.set_defaults(func=history.promote)

    p = sub.add_parser(
        "check",
        parents=[common],
        help="list every problem of a job's data in one run (bad values, times, labels, "
        "short lots, missing columns)",
        description="Read the job's data as train and score would and list every problem: "
        "per lot and column the first bad value, missing or doubled columns, short lots, "
        "labels not understood. Exit code 0: nothing stops a job or leaves a lot out; 1: "
        "something does; 2: the job file cannot be read.",
    )
    _job_args(p)
    p.add_argument("--json", action="store_true", help="one JSON line holding every problem")
    p.add_argument("--errors", metavar="FILE.csv", help="write every problem to this CSV file")
    p.add_argument(
        "--max", type=int, default=10, metavar="N", help="problems shown per kind (default 10)"
    )
    p.set_defaults(func=check.check)

    p = sub.add_parser("audit", parents=[common], help="check a split configuration for leakage")
    _job_args(p)
    p.set_defaults(func=jobs.audit)

    p = sub.add_parser(
        "bench", parents=[common], help="measure a bundle's scoring throughput (windows/s)"
    )
    _job_args(p)
    p.add_argument("--repeats", type=int, default=3, help="timed passes (default 3)")
    p.add_argument(
        "--onnx",
        metavar="FILE.onnx",
        help="time the model in PyTorch eager and this export of it (mfgtx export) in "
        "onnxruntime, side by side",
    )
    p.set_defaults(func=bench.bench)

    p = sub.add_parser(
        "export", parents=[common], help="write a bundle's model as a plain ONNX file"
    )
    p.add_argument("bundle", help="the bundle directory")
    p.add_argument("--format", choices=("onnx",), default="onnx", help="onnx (the default)")
    p.add_argument("--out", help="the .onnx file (default: BUNDLE.onnx beside the bundle)")
    p.set_defaults(func=bundle.export)

    p = sub.add_parser(
        "sign",
        parents=[common],
        help="sign a reviewed bundle with this plant's key (MFGTX_BUNDLE_KEY_FILE)",
    )
    p.add_argument("bundle", help="the bundle directory")
    p.set_defaults(func=bundle.sign)

    p = sub.add_parser(
        "hash-password",
        parents=[common],
        help="hash a dashboard password for app_password_hash in the secrets file",
    )
    p.set_defaults(func=app.hash_password)

    p = sub.add_parser("app", parents=[common], help="start the Streamlit dashboard")
    p.add_argument("--path", default="app/main.py", help="the app script (default app/main.py)")
    p.add_argument("--results", help="folder of scored results for the dashboard")
    p.add_argument("--port", type=int, help="server port")
    p.add_argument(
        "--address",
        help="interface to serve (default 127.0.0.1, this computer only); any other needs "
        "sign-in configured (README, 'Plant network')",
    )
    p.set_defaults(func=app.app)

    p = sub.add_parser(
        "demo",
        parents=[common],
        help="train small models on sample_data, score, open the dashboard",
    )
    p.add_argument("--quick", action="store_true", help="tiny models, two epochs (a smoke test)")
    p.add_argument("--no-app", action="store_true", help="do not start the dashboard")
    p.add_argument("--retrain", action="store_true", help="train even if the bundles exist")
    p.add_argument(
        "--data", default="sample_data", help="sample plant folder (default sample_data)"
    )
    p.add_argument(
        "--out",
        help="output folder, in place of the job files' runs/sample (default; --quick: "
        "runs/sample-quick)",
    )
    p.add_argument("--app", default="app/main.py", help="the app script (default app/main.py)")
    p.add_argument("--port", type=int, help="dashboard port (default: Streamlit's, 8501)")
    p.set_defaults(func=demo.demo)
    return parser
