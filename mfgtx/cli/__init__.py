"""The ``mfgtx`` command line.

This module is the presentation layer of the command: it is the one place in the package
that writes to stdout (through :func:`_emit`); the library itself only logs (to stderr).
Every job command reads a YAML job file (see :mod:`mfgtx.jobs.config`), takes
``--set key=value`` overrides, and ends with one JSON summary line on stdout.

Exit codes: 0 success; 2 bad input (command line, config, data, missing bundle, a model kind
not in this version); 1 failure (leakage found, output locked, training diverged, anything
unexpected); 128 + the signal's number when a stop signal ended the job cleanly (143 SIGTERM
from a scheduler or ``kill``, 130 SIGINT or Ctrl-C, 129 SIGHUP), with ``"interrupted"`` naming
it in the summary line (:mod:`mfgtx._signals`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import mfgtx
from mfgtx._signals import StopState, signal_name, stop_on_signals

__all__ = ["main"]

log = logging.getLogger(__name__)


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


def _emit(line: str = "") -> None:
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head -1`): the job itself goes on
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _summary(data: dict[str, Any]) -> None:
    """The last stdout line of a job: one JSON object (for schedulers and log parsers); a
    figure that is not a number (R² of a constant truth) is written as ``null``."""
    _emit(json.dumps(_finite(data), sort_keys=True, default=str, allow_nan=False))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _config(args: argparse.Namespace) -> Any:
    from mfgtx.jobs import load_config

    return load_config(args.config, args.set or ())


# --------------------------------------------------------------------------- commands


def _train(args: argparse.Namespace) -> int:
    from mfgtx.jobs import train
    from mfgtx.train import end_distributed

    config = _config(args)
    outcome = train(args.kind, config, resume=args.resume)  # rank 0 locks the bundle
    end_distributed()
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
        return 0
    if outcome.report_markdown:
        _emit(outcome.report_markdown)
    _summary({"ok": True, **outcome.summary()})
    return 0


def _score(args: argparse.Namespace) -> int:
    from mfgtx.jobs.score import score

    outcome = score(_config(args))
    _emit(outcome.message)
    _summary({"ok": True, **outcome.summary()})
    return 0


def _audit(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import audit_split

    summary, report = audit_split(_config(args))
    for check in report.checks:
        _emit(f"{'PASS' if check.passed else 'FAIL'} {check.name}: {check.detail}")
    for unchecked in report.not_checked:  # never shown as passed
        _emit(f"NOT CHECKED {unchecked.name}: {unchecked.reason}")
    _summary({"ok": summary["passed"], "not_checked": list(report.unchecked), **summary})
    return 0 if summary["passed"] else 1


def _evaluate(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import evaluate
    from mfgtx.jobs.sinks import write_text

    config = _config(args)
    target = None
    if args.report is not None:  # checked before the work, so a bad path costs nothing
        from mfgtx.jobs._paths import PathRules, expand_argument, job_inputs

        report_path = expand_argument("mfgtx evaluate", "--report", args.report)
        written = {**dict(config.paths_as_written), report_path: args.report}
        rules = PathRules(config.source_file, job_inputs(config), config.bundle, written=written)
        target = rules.output("--report", report_path)
    summary, report = evaluate(config)
    _emit(report.to_markdown())
    if target is not None:
        write_text(target, report.to_json())  # the very path that was checked
        summary["report"] = str(args.report)
    _summary({"ok": True, **summary})
    return 0


def _bench(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import bench

    if args.onnx is not None:
        return _bench_onnx(args)
    result = bench(_config(args), repeats=args.repeats)
    if "tiles_per_s" in result:
        what = (
            f"{result['images_per_s']:.1f} photos/s, {result['tiles_per_s']:.0f} tiles/s "
            f"({result['images']} photos, {result['tiles']} tiles of {result['tile_size']} px"
            + (f", each in {result['views']} views" if result["views"] > 1 else "")
        )
    elif "images_per_s" in result:
        what = (
            f"{result['images_per_s']:.1f} images/s ({result['images']} images of "
            f"{result['image_size']} px"
            + (f", each in {result['views']} views" if result["views"] > 1 else "")
        )
    else:
        what = (
            f"{result['windows_per_s']:.1f} windows/s ({result['windows']} windows of "
            f"{result['window']} rows"
        )
    _emit(
        f"scoring throughput: {what}, batch {result['batch_size']}, {result['threads']} "
        f"thread(s), best of {args.repeats})"
    )
    _summary({"ok": True, **result})
    return 0


def _bench_onnx(args: argparse.Namespace) -> int:
    """``bench --onnx FILE``: the bundle's model in PyTorch eager and its ONNX export in
    onnxruntime on the job's data, interleaved, one line with both figures."""
    import torch

    from mfgtx.artifacts import BundleError
    from mfgtx.jobs.prepare import read_windows
    from mfgtx.jobs.score import load_predictor
    from mfgtx.serving import compare_throughput, load_onnx

    config = _config(args)
    predictor = load_predictor(config)
    onnx_model = load_onnx(args.onnx, threads=torch.get_num_threads())
    if onnx_model.bundle_id != predictor.bundle_id:
        raise BundleError(
            f"{args.onnx} was exported from bundle {str(onnx_model.bundle_id)[:12]}, the job's "
            f"bundle {config.bundle} is {predictor.bundle_id[:12]}; export it again with "
            f"`mfgtx export {config.bundle} --format onnx`",
            file=Path(args.onnx),
        )
    inputs, unit = predictor.kind.onnx_data(predictor, config, lambda k: read_windows(config, k))
    batch = config.score.batch_size if config.score is not None else 256
    result = compare_throughput(
        predictor, onnx_model, inputs, batch_size=batch, repeats=args.repeats
    )
    _emit(
        f"model throughput on {result['n']} {unit}, batch {batch}, {result['torch_threads']} "
        f"thread(s), median of {args.repeats}: torch eager {result['torch_per_s']:.1f} "
        f"{unit}/s, onnxruntime {result['onnx_per_s']:.1f} {unit}/s "
        f"(x{result['onnx_vs_torch']:.2f})"
    )
    _summary(
        {"command": "bench", "ok": True, "bundle_id": predictor.bundle_id, "unit": unit,
         "onnx": str(args.onnx), **result}
    )  # fmt: skip
    return 0


def _export(args: argparse.Namespace) -> int:
    """``export BUNDLE --format onnx [--out FILE]``: the bundle's model as a plain ONNX file."""
    from mfgtx.jobs._paths import PathRules, expand_argument
    from mfgtx.serving import export_onnx, load_onnx

    bundle = Path(expand_argument("mfgtx export", "BUNDLE", args.bundle))
    if args.out:
        out = Path(expand_argument("mfgtx export", "--out", args.out))
        written = {str(out): args.out}
    else:
        out, written = bundle.parent / f"{bundle.name}.onnx", {}
    _check_onnx_target(out, args.out or str(out))
    rules = PathRules("mfgtx export", [("BUNDLE", bundle)], bundle=bundle, written=written)
    target = rules.output("--out", out)  # an existing file: only an earlier export of mfgtx
    predictor = mfgtx.load(bundle)  # verified: a damaged bundle stops here
    export_onnx(predictor, target)
    model = load_onnx(target)
    _emit(
        f"exported the {predictor.kind.name} model of {bundle} (id {predictor.bundle_id[:12]}) "
        f"to {out}: inputs {list(model.inputs)}, outputs {list(model.outputs)}"
    )
    _summary(
        {"command": "export", "ok": True, "format": "onnx", "bundle": str(bundle),
         "bundle_id": predictor.bundle_id, "kind": predictor.kind.name, "out": str(out),
         "inputs": list(model.inputs), "outputs": list(model.outputs),
         "bytes": target.stat().st_size}
    )  # fmt: skip
    return 0


def _check_onnx_target(out: Path, shown: str) -> None:
    """An export is a ``.onnx`` file. Whether an existing one may be replaced (only an
    earlier export of mfgtx, unchanged) is the path rules' (:mod:`mfgtx.jobs._paths`)."""
    from mfgtx.jobs import ConfigError

    if out.suffix.lower() != ".onnx":
        raise ConfigError(f"mfgtx export: --out: an export is a .onnx file, found {shown}")


def _sign(args: argparse.Namespace) -> int:
    from mfgtx.artifacts import sign_bundle

    key_id = sign_bundle(args.bundle)
    _emit(f"signed {args.bundle} with key {key_id}")
    _summary({"command": "sign", "ok": True, "bundle": args.bundle, "key_id": key_id})
    return 0


def _hash_password(args: argparse.Namespace) -> int:
    import getpass

    from mfgtx.passwords import hash_password

    if sys.stdin.isatty():
        first = getpass.getpass("dashboard password: ")
        if getpass.getpass("again: ") != first:
            sys.stderr.write("mfgtx hash-password: the two passwords differ\n")
            return 2
    else:  # a password piped in (from a secret store)
        first = sys.stdin.readline().rstrip("\n")
    try:
        stored = hash_password(first)
    except ValueError as e:
        sys.stderr.write(f"mfgtx hash-password: {e}\n")
        return 2
    _emit(f'app_password_hash = "{stored}"')
    return 0


def _app_command(path: Path, port: int | None, address: str | None = None) -> list[str] | None:
    """``streamlit run`` of the dashboard with every setting of its ``.streamlit/config.toml``
    passed as flags too, so that no environment variable or other config file can weaken
    them (binding to other interfaces is ``--address``, and then the app asks for sign-in)."""
    import tomllib

    if not path.is_file():
        return None
    cmd = [sys.executable, "-m", "streamlit", "run", str(path)]
    config = path.resolve().parent / ".streamlit" / "config.toml"
    settings: dict[str, object] = {
        "browser.gatherUsageStats": False,
        "server.headless": True,
        "server.address": "127.0.0.1",
    }
    if config.is_file():
        with config.open("rb") as f:
            sections = tomllib.load(f)
        settings.update({f"{s}.{k}": v for s, opts in sections.items() for k, v in opts.items()})
    if address is not None:
        settings["server.address"] = address
    if port is not None:
        settings["server.port"] = port
    for key, value in settings.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        cmd += [f"--{key}", text]
    return cmd


def _app_env(results: str | None, data: str | None) -> dict[str, str]:
    """The dashboard reads its folders from MFGTX_MODELS_DIR / MFGTX_DATA_DIR."""
    env = dict(os.environ)
    if results is not None:
        env["MFGTX_RESULTS"] = results
        models = Path(results) / "models"  # the demo's layout: <out>/models/<bundle>
        env["MFGTX_MODELS_DIR"] = str(models if models.is_dir() else Path(results))
    if data is not None:
        env["MFGTX_DATA_DIR"] = str(data)
    return env


def _launch_app(
    path: Path,
    results: str | None,
    port: int | None,
    data: str | None = None,
    address: str | None = None,
) -> int:
    cmd = _app_command(path, port, address)
    if cmd is None:
        log.error(
            "the dashboard is not in this version: %s not found (app/, issue 9); "
            "the results are ready for it%s",
            path,
            f" in {results}" if results else "",
        )
        return 2
    log.info("starting the dashboard: %s", " ".join(cmd))
    return subprocess.call(cmd, env=_app_env(results, data))


def _app(args: argparse.Namespace) -> int:
    return _launch_app(Path(args.path), args.results, args.port, address=args.address)


def _minutes(minutes: float) -> str:
    """``40 s``, ``3 min``: a duration for a person waiting."""
    return f"{max(1, round(minutes * 60))} s" if minutes < 1.5 else f"{round(minutes)} min"


def _demo(args: argparse.Namespace) -> int:
    from mfgtx.jobs.demo import OUT, run_demo

    out = args.out or ("runs/sample-quick" if args.quick else OUT)
    for step in run_demo(args.data, out, quick=args.quick, retrain=args.retrain):
        if step.get("start"):
            if step["train"]:
                _emit(
                    f"demo: training {', '.join(step['train'])} on {args.data} "
                    f"(about {_minutes(step['minutes'])} on 2 cores); results in {out}"
                )
            else:
                _emit(f"demo: every bundle in {out} exists; scoring only")
        elif step.get("training"):
            _emit(
                f"{step['job']}: training {step['model']} (about {_minutes(step['minutes'])}) "
                f"-> {step['bundle']}"
            )
        elif step.get("command") == "score" and "images" in step:
            _emit(
                f"{step['job']}: scored {step['images']} images ({step['images_per_s']:.1f} "
                f"images/s, {step['bad_images']} bad) -> {step['output']}"
            )
        elif step.get("command") == "score":
            _emit(
                f"{step['job']}: scored {step['windows']} windows ({step['windows_per_s']:.1f} "
                f"windows/s) -> {step['output']}"
            )
        elif step.get("reused"):
            _emit(f"{step['job']}: reusing {step['bundle']}")
        else:
            _emit(
                f"{step['job']}: trained {step['bundle']} in {_minutes(step['seconds'] / 60)} "
                f"({step['verdict']})"
            )
    _summary({"command": "demo", "ok": True, "out": out, "quick": args.quick})
    if args.no_app:
        return 0
    if not Path(args.app).is_file():  # the demo's own work succeeded: not an error
        log.warning(
            "the dashboard is not in this version (%s not found); the results are in %s",
            args.app,
            out,
        )
        return 0
    return _launch_app(Path(args.app), out, args.port, args.data)


# --------------------------------------------------------------------------- parser


def _job_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("config", help="YAML job file (see pipelines/configs/)")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="override a key of the job file, e.g. --set train.epochs=3 (repeatable)",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mfgtx",
        description="Manufacturing analytics on Transformer models.",
        epilog="Exit codes: 0 success, 2 bad input or config, 1 failure, 143/130 stopped by "
        "SIGTERM/SIGINT (a summary line says so; train continues with --resume).",
    )
    parser.add_argument("--version", action="version", version=f"mfgtx {mfgtx.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument("-q", "--quiet", action="store_true", help="log warnings and errors only")
    # the same two flags after the command (pipelines/*.py put the command first)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("train", parents=[common], help="train a model and write its bundle")
    p.add_argument(
        "kind",
        choices=_KINDS,
        help="sensor: SensorEncoder (quality, RUL); forecast: CausalForecaster; vit: DefectViT; "
        "or a kind a plugin registers (MFGTX_KINDS, entry points mfgtx.kinds)",
    )
    _job_args(p)
    p.add_argument(
        "--resume", action="store_true", help="continue a killed run from its checkpoint"
    )
    p.set_defaults(func=_train)

    p = sub.add_parser(
        "evaluate", parents=[common], help="judge a bundle against baselines on the test lots"
    )
    _job_args(p)
    p.add_argument("--report", help="also write the report as JSON to this file")
    p.set_defaults(func=_evaluate)

    p = sub.add_parser("score", parents=[common], help="write a bundle's predictions for new data")
    _job_args(p)
    p.set_defaults(func=_score)

    p = sub.add_parser("audit", parents=[common], help="check a split configuration for leakage")
    _job_args(p)
    p.set_defaults(func=_audit)

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
    p.set_defaults(func=_bench)

    p = sub.add_parser(
        "export", parents=[common], help="write a bundle's model as a plain ONNX file"
    )
    p.add_argument("bundle", help="the bundle directory")
    p.add_argument("--format", choices=("onnx",), default="onnx", help="onnx (the default)")
    p.add_argument("--out", help="the .onnx file (default: BUNDLE.onnx beside the bundle)")
    p.set_defaults(func=_export)

    p = sub.add_parser(
        "sign",
        parents=[common],
        help="sign a reviewed bundle with this plant's key (MFGTX_BUNDLE_KEY_FILE)",
    )
    p.add_argument("bundle", help="the bundle directory")
    p.set_defaults(func=_sign)

    p = sub.add_parser(
        "hash-password",
        parents=[common],
        help="hash a dashboard password for app_password_hash in the secrets file",
    )
    p.set_defaults(func=_hash_password)

    p = sub.add_parser("app", parents=[common], help="start the Streamlit dashboard")
    p.add_argument("--path", default="app/main.py", help="the app script (default app/main.py)")
    p.add_argument("--results", help="folder of scored results for the dashboard")
    p.add_argument("--port", type=int, help="server port")
    p.add_argument(
        "--address",
        help="interface to serve (default 127.0.0.1, this computer only); any other needs "
        "sign-in configured (README, 'Plant network')",
    )
    p.set_defaults(func=_app)

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
    p.set_defaults(func=_demo)
    return parser


def _exit_code(err: BaseException) -> int:
    """2 for input the user can fix, 1 for failures."""
    from mfgtx.artifacts import BundleError
    from mfgtx.data import DataError
    from mfgtx.jobs import ConfigError
    from mfgtx.split import LeakageError

    if isinstance(err, LeakageError):
        return 1
    if isinstance(err, ConfigError | DataError | BundleError):
        return 2
    return 1


def _plain_warning(command: str) -> Callable[..., None]:
    """``warnings.showwarning`` for a terminal: one line, ``mfgtx CMD: warning: message``,
    without Python's file, line, warning class and source line."""

    def show(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        text = " ".join(str(message).split())  # one line, whatever the message holds
        sys.stderr.write(f"mfgtx {command}: warning: {text}\n")

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mfgtx`` console script; returns the exit code."""
    parser = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # --help (0) and usage errors (2)
        return int(e.code or 0)
    level = logging.DEBUG if args.verbose else logging.WARNING if args.quiet else logging.INFO
    logging.basicConfig(
        level=level,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    if args.command is None:
        parser.print_help()
        return 0
    with stop_on_signals() as stop:  # SIGTERM, SIGINT, SIGHUP unwind the job: see _signals
        try:
            return _run(args, stop)
        except KeyboardInterrupt:  # a stop signal (also while an error was reported), Ctrl-C
            return _interrupted(args.command, stop.signum or signal.SIGINT)


def _run(args: argparse.Namespace, stop: StopState) -> int:
    """The command, and its error reported as the summary line."""
    func: Callable[[argparse.Namespace], int] = args.func
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _plain_warning(args.command)
            return int(func(args))
    except Exception as err:
        if stop.signum is not None:  # raised on the way out (a worker the signal ended too)
            log.debug("while stopping", exc_info=True)
            return _interrupted(args.command, stop.signum)
        from mfgtx.data._reasons import reason_of

        code = _exit_code(err)
        log.debug("details", exc_info=True)
        text = str(err).strip() or reason_of(err)  # never an empty message (MemoryError())
        sys.stderr.write(f"mfgtx {args.command}: error: {text}\n")
        _summary({"command": args.command, "ok": False, "exit_code": code, "error": text})
        return code


def _interrupted(command: str, signum: int) -> int:
    """A job ended by a stop signal, after its cleanup ran: a log line naming the signal and
    the summary line (rank 0 under torchrun); returns ``128 + signum``."""
    name, code = signal_name(signum), 128 + signum
    then = (
        "run the same command with --resume to continue from its last checkpoint"
        if command == "train"
        else "run it again to finish"
    )
    cleaned = "its output lock released, its temporary files removed"
    rank = os.environ.get("RANK", "0")
    several = os.environ.get("WORLD_SIZE", "1") not in ("", "0", "1")  # under torchrun
    who = f"{command} (rank {rank})" if several else command
    log.error("mfgtx %s: stopped by %s, %s; %s", who, name, cleaned, then)
    if rank == "0":  # torchrun: rank 0 reports, as for a finished job
        _summary(
            {"command": command, "ok": False, "interrupted": name, "exit_code": code,
             "error": f"stopped by {name}"}
        )  # fmt: skip
    return code


if __name__ == "__main__":
    sys.exit(main())
