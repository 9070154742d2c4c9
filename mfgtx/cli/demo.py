"""``mfgtx demo``: train small models on the sample plant, score, open the dashboard."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

from mfgtx.cli.app import launch_app
from mfgtx.cli.output import emit, log, summary

__all__ = ["demo"]


def demo(args: argparse.Namespace) -> int:
    from mfgtx.jobs.demo import OUT, run_demo

    out = args.out or ("runs/sample-quick" if args.quick else OUT)
    bar = _Bar() if _watched() else None
    steps = run_demo(
        args.data,
        out,
        quick=args.quick,
        retrain=args.retrain,
        progress=None if bar is None else "log",  # one bar for the whole demo, not per epoch
        on_step=None if bar is None else bar.tick,
    )
    with contextlib.ExitStack() as stack:
        if bar is not None:  # log lines above the bar, not through it
            from tqdm.contrib.logging import logging_redirect_tqdm

            stack.enter_context(logging_redirect_tqdm())
            stack.callback(bar.close)
        for step in steps:
            line = _line(step, args.data, out)
            if bar is not None:
                bar.step(step, line)
            elif line:
                emit(line)
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


def _line(step: dict[str, Any], data: str, out: str) -> str:
    """What a demo step says to a person."""
    if step.get("start"):
        if step["train"]:
            return (
                f"demo: training {', '.join(step['train'])} on {data} "
                f"(about {_minutes(step['minutes'])} on 2 cores); results in {out}"
            )
        if step["plan"]:
            return f"demo: every bundle in {out} exists; scoring only"
        return f"demo: every bundle and score in {out} is up to date"
    if step.get("day"):
        drift = ", ".join(f"{k} reads {v:+g}" for k, v in step["drift"].items())
        return (
            f"{step['job']} {step['day']}: scored {step['windows']} windows of {step['lots']} "
            f"lots ({drift}); {step['truth']} inspection result(s) arrived"
        )
    if step.get("phase") == "days":
        if step["cached"]:
            return f"{step['job']}: its {step['days']} days are up to date in {step['history']}"
        drift = ", ".join(f"{k} {v:+g}" for k, v in step["drift"].items())
        return (
            f"{step['job']}: {step['days']} days scored run by run into {step['history']} "
            f"({drift} on the last day)"
        )
    if step.get("training"):
        return (
            f"{step['job']}: training {step['model']} (about {_minutes(step['minutes'])}) "
            f"-> {step['bundle']}"
        )
    if step.get("cached"):
        return f"{step['job']}: scores up to date (same bundle, same input) in {step['output']}"
    if step.get("command") == "score" and "images" in step:
        return (
            f"{step['job']}: scored {step['images']} images ({step['images_per_s']:.1f} "
            f"images/s, {step['bad_images']} bad) -> {step['output']}"
        )
    if step.get("command") == "score":
        return (
            f"{step['job']}: scored {step['windows']} windows ({step['windows_per_s']:.1f} "
            f"windows/s) -> {step['output']}"
        )
    if step.get("reused"):
        return f"{step['job']}: reusing {step['bundle']}"
    return (
        f"{step['job']}: trained {step['bundle']} in {_minutes(step['seconds'] / 60)} "
        f"({step['verdict']})"
    )


def _watched() -> bool:
    """A person waits at a terminal (the bar goes to stderr)."""
    return sys.stderr.isatty() and not os.environ.get("CI")


class _Bar:
    """One progress bar for the whole demo, on stderr: it advances by each phase's estimated
    seconds as the phase ends. The time left starts as the sum of the estimates and follows
    the pace the finished phases actually took (their wall time over their estimates), less
    the time the running phase has had."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self._bar: Any = None
        self._plan: dict[tuple[str, str], float] = {}
        self._t0 = self._since = time.monotonic()
        self._done = 0.0  # estimated seconds of the finished phases

    def step(self, step: dict[str, Any], line: str) -> None:
        if step.get("start"):
            self._plan = {(p["job"], p["phase"]): p["seconds"] for p in step["plan"]}
            self._write(line)
            if self._plan:
                self._bar = self._tqdm(
                    total=round(sum(self._plan.values())),
                    desc="demo",
                    smoothing=0,
                    dynamic_ncols=True,
                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed} elapsed{postfix}",
                )
                self._left()
            self._describe(step, "training" if step["train"] else "scoring")
            return
        self._write(line)
        if step.get("training"):
            self._describe(step, "training")
            return
        if step.get("day"):
            return  # a day of the days phase, which ends with its own step
        phase = step.get("phase") or ("score" if step.get("command") == "score" else "train")
        done = self._plan.pop((step["job"], phase), None)
        if self._bar is not None and done is not None:
            self._done += done
            self._since = time.monotonic()
            self._left()
            self._bar.update(min(round(done), self._bar.total - self._bar.n))
        if phase == "train":
            self._describe(step, "scoring")

    def tick(self, _step: int, _loss: float) -> None:
        """After every optimizer step: let the clock and the ETA move."""
        if self._bar is not None:
            self._left()
            self._bar.update(0)  # redraws at most every 0.1 s

    def _left(self) -> None:
        """Time left: the unfinished phases' estimates at the pace of the finished ones."""
        now = time.monotonic()
        pace = (self._since - self._t0) / self._done if self._done > 0 else 1.0
        left = max(0.0, sum(self._plan.values()) * pace - (now - self._since))
        self._bar.set_postfix_str(f"about {_clock(left)} left", refresh=False)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def _describe(self, step: dict[str, Any], what: str) -> None:
        if self._bar is not None:
            job = "" if step.get("start") else f" {step['job']}"
            self._bar.set_description_str(f"demo ({what}{job})")

    def _write(self, line: str) -> None:
        if not line:
            return
        if self._bar is None:
            emit(line)
            return
        with self._tqdm.external_write_mode():
            emit(line)


def _clock(seconds: float) -> str:
    """``1:05``, ``12:00``: minutes and seconds.

    >>> _clock(65.4), _clock(0)
    ('1:05', '0:00')
    """
    m, sec = divmod(round(seconds), 60)
    return f"{m}:{sec:02d}"


def _minutes(minutes: float) -> str:
    """``40 s``, ``3 min``: a duration for a person waiting.

    >>> _minutes(0.5), _minutes(12.4)
    ('30 s', '12 min')
    """
    return f"{max(1, round(minutes * 60))} s" if minutes < 1.5 else f"{round(minutes)} min"
