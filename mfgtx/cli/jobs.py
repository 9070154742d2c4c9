"""``mfgtx train | score | audit | evaluate``: the commands that run a job file.

Each reads a YAML job file (see :mod:`mfgtx.jobfile.config`) with its ``--set key=value``
overrides, runs the job in :mod:`mfgtx.jobs`, writes what a person reads, and ends with one
JSON summary line on stdout.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

from mfgtx.cli.output import emit, summary

__all__ = ["audit", "evaluate", "job_config", "score", "train"]


def job_config(args: argparse.Namespace) -> Any:
    """The job file of ``args.config`` with the ``--set`` overrides, validated."""
    from mfgtx.jobs import load_config

    return load_config(args.config, args.set or ())


def engine_spec(args: argparse.Namespace, config: Any) -> Any:
    """The :class:`~mfgtx.engine.EngineSpec` of ``--engine``, ``--address``, ``--workers``
    (and ``--ddp``, train) over the job's ``engine`` section
    (:func:`mfgtx.jobfile.config.engine_spec`)."""
    from mfgtx.jobfile.config import engine_spec as spec_of

    return spec_of(
        config,
        name=args.engine,
        address=args.address,
        workers=args.workers,
        ddp=getattr(args, "ddp", None),
    )


def train(args: argparse.Namespace) -> int:
    from mfgtx.jobs import train as train_job
    from mfgtx.train import end_distributed

    config = job_config(args)
    engine = engine_spec(args, config)
    outcome = train_job(args.kind, config, resume=args.resume, engine=engine)  # rank 0 locks
    end_distributed(together=True)  # the other ranks wait for rank 0's bundle
    if os.environ.get("RANK", "0") != "0":  # torchrun: rank 0 reports
        return 0
    if outcome.report_markdown:
        emit(outcome.report_markdown)
    summary({"ok": True, **outcome.summary()})
    return 0


def score(args: argparse.Namespace) -> int:
    from mfgtx.jobs.score import score as score_job

    config = job_config(args)
    outcome = score_job(config, engine=engine_spec(args, config))  # the command line wins
    emit(outcome.message)
    summary({"ok": True, **outcome.summary()})
    return 0


def audit(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import audit_split

    found, report = audit_split(job_config(args))
    for check in report.checks:
        emit(f"{'PASS' if check.passed else 'FAIL'} {check.name}: {check.detail}")
    for unchecked in report.not_checked:  # never shown as passed
        emit(f"NOT CHECKED {unchecked.name}: {unchecked.reason}")
    summary({"ok": found["passed"], "not_checked": list(report.unchecked), **found})
    return 0 if found["passed"] else 1


def evaluate(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import evaluate as evaluate_job
    from mfgtx.jobs.sinks import write_text

    config = job_config(args)
    target = None
    if args.report is not None:  # checked before the work, so a bad path costs nothing
        from mfgtx.jobs._paths import PathRules, expand_argument, job_inputs

        report_path = expand_argument("mfgtx evaluate", "--report", args.report)
        written = {**dict(config.paths_as_written), report_path: args.report}
        rules = PathRules(config.source_file, job_inputs(config), config.bundle, written=written)
        target = rules.output("--report", report_path)
    found, report = evaluate_job(config)
    emit(report.to_markdown())  # its "Verdict:" line is the summary's standing, in words
    if target is not None:
        write_text(target, report.to_json())  # the very path that was checked
        found["report"] = str(args.report)
    summary({"ok": True, **found})
    return 0
