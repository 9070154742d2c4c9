"""``mfgtx truth``: record inspection results that arrived after the scores in a job's history.

``mfgtx truth JOB.yaml --labels FILE`` (:func:`mfgtx.jobs.truth.import_truth`): one line saying
what was recorded and joined, then the JSON summary line. Bad rows go to the errors file and
the others are recorded (exit code 0); a file that cannot be read at all exits with 2.
"""

from __future__ import annotations

import argparse

from mfgtx.cli.jobs import job_config
from mfgtx.cli.output import emit, summary

__all__ = ["truth"]


def truth(args: argparse.Namespace) -> int:
    from mfgtx.jobs.truth import import_truth

    outcome = import_truth(
        job_config(args), args.labels, on=args.on, window_end=args.window_end, errors=args.errors
    )
    emit(outcome.message)
    summary({"ok": True, **outcome.summary()})
    return 0
