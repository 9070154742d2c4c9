"""``mfgtx demo``: train small models on the sample plant, score, open the dashboard."""

from __future__ import annotations

import argparse
from pathlib import Path

from mfgtx.cli.app import launch_app
from mfgtx.cli.output import emit, log, summary

__all__ = ["demo"]


def demo(args: argparse.Namespace) -> int:
    from mfgtx.jobs.demo import OUT, run_demo

    out = args.out or ("runs/sample-quick" if args.quick else OUT)
    for step in run_demo(args.data, out, quick=args.quick, retrain=args.retrain):
        if step.get("start"):
            if step["train"]:
                emit(
                    f"demo: training {', '.join(step['train'])} on {args.data} "
                    f"(about {_minutes(step['minutes'])} on 2 cores); results in {out}"
                )
            else:
                emit(f"demo: every bundle in {out} exists; scoring only")
        elif step.get("training"):
            emit(
                f"{step['job']}: training {step['model']} (about {_minutes(step['minutes'])}) "
                f"-> {step['bundle']}"
            )
        elif step.get("command") == "score" and "images" in step:
            emit(
                f"{step['job']}: scored {step['images']} images ({step['images_per_s']:.1f} "
                f"images/s, {step['bad_images']} bad) -> {step['output']}"
            )
        elif step.get("command") == "score":
            emit(
                f"{step['job']}: scored {step['windows']} windows ({step['windows_per_s']:.1f} "
                f"windows/s) -> {step['output']}"
            )
        elif step.get("reused"):
            emit(f"{step['job']}: reusing {step['bundle']}")
        else:
            emit(
                f"{step['job']}: trained {step['bundle']} in {_minutes(step['seconds'] / 60)} "
                f"({step['verdict']})"
            )
    summary({"command": "demo", "ok": True, "out": out, "quick": args.quick})
    if args.no_app:
        return 0
    if not Path(args.app).is_file():  # the demo's own work succeeded: not an error
        log.warning(
            "the dashboard is not in this version (%s not found); the results are in %s",
            args.app,
            out,
        )
        return 0
    return launch_app(Path(args.app), out, args.port, args.data)


def _minutes(minutes: float) -> str:
    """``40 s``, ``3 min``: a duration for a person waiting.

    >>> _minutes(0.5), _minutes(12.4)
    ('30 s', '12 min')
    """
    return f"{max(1, round(minutes * 60))} s" if minutes < 1.5 else f"{round(minutes)} min"
