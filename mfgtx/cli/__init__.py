"""The ``mfgtx`` command line.

This package is the presentation layer of the command: it is the one place in the package
that writes to stdout (:mod:`mfgtx.cli.output`); the library itself only logs (to stderr).
Every job command reads a YAML job file (see :mod:`mfgtx.jobfile.config`), takes
``--set key=value`` overrides, and ends with one JSON summary line on stdout.

One module per concept: :mod:`~mfgtx.cli.parser` (the argparse tree),
:mod:`~mfgtx.cli.jobs` (train, score, audit, evaluate), :mod:`~mfgtx.cli.check` (check),
:mod:`~mfgtx.cli.bench` (bench, bench --onnx), :mod:`~mfgtx.cli.bundle` (export, sign),
:mod:`~mfgtx.cli.app` (app, hash-password), :mod:`~mfgtx.cli.watch` (watch), :mod:`~mfgtx.cli.demo`,
:mod:`~mfgtx.cli.output` (stdout and the summary line); here, :func:`main` with its exit
codes and stop signals.

Exit codes: 0 success; 2 bad input (command line, config, data, missing bundle, a model kind
not in this version); 1 failure (leakage found, output locked, training diverged, anything
unexpected); 128 + the signal's number when a stop signal ended the job cleanly (143 SIGTERM
from a scheduler or ``kill``, 130 SIGINT or Ctrl-C, 129 SIGHUP), with ``"interrupted"`` naming
it in the summary line (:mod:`mfgtx._signals`).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import warnings
from collections.abc import Callable, Sequence

from mfgtx._signals import StopState, signal_name, stop_on_signals
from mfgtx.cli.output import log, summary
from mfgtx.cli.parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mfgtx`` console script; returns the exit code."""
    parser = build_parser()
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
        summary({"command": args.command, "ok": False, "exit_code": code, "error": text})
        return code


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
        summary(
            {"command": command, "ok": False, "interrupted": name, "exit_code": code,
             "error": f"stopped by {name}"}
        )  # fmt: skip
    return code
