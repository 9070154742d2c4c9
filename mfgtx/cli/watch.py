"""``mfgtx watch``: whether a job's bundle still holds (its inputs against its training data,
its realized error against its test figures), recorded in the job's history.

Prints the report (one line per sensor, the model, the verdict), then the JSON summary line.
Exit codes: 0 the bundle is still valid (or nothing could be judged yet: ``unknown``),
:data:`NOT_VALID_EXIT` when it is not valid, 2 bad input (job file, bundle, data), 1 failure.
"""

from __future__ import annotations

import argparse

from mfgtx.cli.jobs import job_config
from mfgtx.cli.output import emit, summary

__all__ = ["NOT_VALID_EXIT", "watch"]

#: The exit code of a watch whose verdict is ``not_valid`` (distinct from 1, a failure, and 2,
#: bad input), so that a scheduler can tell a model to retrain from a job that broke.
NOT_VALID_EXIT = 3


def watch(args: argparse.Namespace) -> int:
    from mfgtx.jobs.watch import watch_job

    outcome = watch_job(job_config(args), last=args.last)
    for line in outcome.report.lines():
        emit(line)
    not_valid = outcome.report.verdict == "not_valid"
    summary({"ok": True, **outcome.summary(), "exit_code": NOT_VALID_EXIT if not_valid else 0})
    return NOT_VALID_EXIT if not_valid else 0
