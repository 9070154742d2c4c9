"""``mfgtx check JOB``: every problem of a job's data in one run (:mod:`mfgtx.jobfile.check`).

On stdout: the problem count per kind, then a table of the problems, the first ``--max`` of
each kind (``... and K more``), then the JSON summary line (``problems``: how many,
``counts``: how many of each kind); ``--json``: the summary line alone, its ``list`` holding
every problem; ``--errors FILE.csv``: every problem written to a CSV file.
Exit code 0 when nothing stops a job or leaves a lot out (notes alone), 1 when something
does, 2 when the job file cannot be read.
"""

from __future__ import annotations

import argparse
from typing import Any

from mfgtx.cli.output import emit, summary

__all__ = ["check"]

#: The columns of ``--errors``: those of a job's errors file first, then the rest.
ERRORS_COLUMNS = ("lot", "file", "line", "column", "reason", "kind", "effect", "found",
                  "expected", "source")  # fmt: skip

_WIDTH = 28  # a cell shown on screen, at most


def check(args: argparse.Namespace) -> int:
    from mfgtx.cli.jobs import job_config
    from mfgtx.jobfile.check import check_job

    config = job_config(args)
    target = None
    if args.errors is not None:  # checked before the work, so a bad path costs nothing
        from mfgtx.jobs._paths import PathRules, expand_argument, job_inputs

        path = expand_argument("mfgtx check", "--errors", args.errors)
        written = {**dict(config.paths_as_written), path: args.errors}
        rules = PathRules(config.source_file, job_inputs(config), config.bundle, written=written)
        target = rules.errors_file("--errors", path)
    report = check_job(config)
    if target is not None:
        _write(target, report.rows())
    found: dict[str, Any] = {
        "command": "check",
        "ok": report.clean,
        "problems": len(report.problems),
        "counts": report.counts(),
        "lots": report.lots,
        "checked": list(report.checked),
        "not_checked": list(report.not_checked),
    }
    if args.errors is not None:
        found["errors_file"] = str(args.errors)
    if args.json:
        found["list"] = report.rows()
    else:
        for line in _table(report, args.max):
            emit(line)
    summary(found)
    return 0 if report.clean else 1


def _write(target: Any, rows: list[dict[str, Any]]) -> None:
    import pandas as pd

    from mfgtx.jobs.sinks import write_text

    frame = pd.DataFrame(rows, columns=list(ERRORS_COLUMNS))
    frame["line"] = pd.to_numeric(frame["line"]).astype("Int64")
    write_text(target, frame.to_csv(index=False, lineterminator="\n"))


def _cell(value: object) -> str:
    text = "" if value is None else " ".join(str(value).split())
    return text if len(text) <= _WIDTH else text[: _WIDTH - 3] + "..."


def _table(report: Any, most: int) -> list[str]:
    """The lines a person reads: what was read, counts per kind, then the problems."""
    out = [f"checked {c}" for c in report.checked]
    out += [f"not checked: {c}" for c in report.not_checked]
    if not report.problems:
        return [*out, f"no problems found in {report.lots} lot(s)"]
    errors = len(report.errors)
    out.append(
        f"{len(report.problems)} problem(s) in {report.lots} lot(s) read: {errors} that stop a "
        f"job or leave a lot out, {len(report.problems) - errors} note(s)"
    )
    counts = report.counts()
    width = max(len(k) for k in counts)
    out += [f"  {kind:<{width}}  {n}" for kind, n in counts.items()]
    header = ("where", "lot", "column", "found", "expected", "effect")
    for kind in counts:
        of_kind = [p for p in report.problems if p.kind == kind]
        rows = [
            (
                f"{p.file or p.source}:{p.line}" if p.line is not None else p.file or p.source,
                p.lot,
                p.column,
                p.found,
                p.expected,
                p.effect,
            )
            for p in of_kind[:most]
        ]
        cells = [[_cell(v) for v in row] for row in [header, *rows]]
        widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
        out += ["", f"{kind}:"]
        out += ["  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                for r in cells]  # fmt: skip
        if len(of_kind) > most:
            out.append(f"  ... and {len(of_kind) - most} more (--errors FILE.csv lists all)")
        out.append(f"  first: {of_kind[0].reason}")
    return out
