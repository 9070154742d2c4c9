"""Dashboard response: seconds (and CPU seconds) per page rerun after a control change and
after a bundle switch, measured with AppTest, beside the targets.

Targets (issue 37, on 2 quiet cores): a warm control change within 0.5 s, a bundle switch
within 1 s. Each case opens a page with a demo bundle and warms it: a control case moves its
control through its values once (the first move is reported: it may compute what the new
value shows), then back and forth ``--repeats`` times; a switch case picks something for
the bundle shown (an image, a lot), then switches to the page's other bundle and back, each
bundle visited once before timing. Each timed rerun of the page script (what a browser
waits for before it redraws; drawing in the browser comes on top) is taken as wall seconds
and as the process's CPU seconds (every thread); on a shared machine the wall figure grows
with the load of others, so the result file records the load average at the start and the
end, and the CPU seconds, which stay near the quiet machine's wall figure while the page
runs on one core. The cases are interleaved, so that load falls on all of them alike.

Usage:
    python benchmarks/dashboard_response.py MODELS_DIR [--data sample_data] [--repeats 5]

``MODELS_DIR`` holds the demo's bundles (``mfgtx demo --quick`` writes them under
``demo-output/models``; any folder with ``sample_quality``, ``sample_rul``,
``sample_forecast``, ``sample_defects`` and ``sample_inspection`` bundles works). Pin the
run to two cores with ``taskset -c 0,1`` to measure as the target reads.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _harness

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "app" / "dashboard.py"
CONTROL_TARGET = 0.5  # s, a warm control change (issue 37)
SWITCH_TARGET = 1.0  # s, a bundle switch (issue 37)


@dataclass(frozen=True)
class Case:
    """One timed change: ``move(at, i)`` sets the widget of round ``i``; ``before(at, i)``,
    untimed, picks what the change finds (a switch case: an image or a lot)."""

    name: str
    kind: str  # "control" or "switch"
    page: str
    key: str
    bundle: str
    move: Callable[[Any, int], Any]
    before: Callable[[Any, int], Any] | None = None
    setup: Callable[[Any], Any] | None = None


def _page(app: Path, case: Case):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(app), default_timeout=600).run()
    at.switch_page(case.page).run()
    at.selectbox(key=case.key).set_value(case.bundle).run()
    if case.setup:
        case.setup(at)
    assert not at.exception, at.exception
    return at


def _images(value: Callable[[Any], list[str]]):
    """Pick the data folder's images ``value(at)`` on the defect page."""
    return lambda at, i=0: at.multiselect(key="defect_samples").set_value(value(at)).run()


def _last_lot(at, i=0) -> None:
    """Pick the last lot on the quality page."""
    at.selectbox(key="quality_lot").set_value(at.selectbox(key="quality_lot").options[-1]).run()


def _switch(key: str, a: str, b: str):
    return lambda at, i: at.selectbox(key=key).set_value([b, a][i % 2])


def _image_of(at) -> list[str]:  # an image the bundle shown reads: a patch, or a photo
    photo = at.selectbox(key="defect_bundle").value == "sample_inspection"
    return ["inspection/images/P01.png" if photo else "defects/images/000.png"]


def cases() -> list[Case]:
    pick_image = _images(lambda at: ["defects/images/000.png"])
    pick_photo = _images(lambda at: ["inspection/images/P01.png"])  # tile heat map, worst tile
    return [
        Case("quality: what-if threshold", "control", "views/quality.py", "quality_bundle",
             "sample_quality", lambda at, i: at.slider(key="quality_threshold").set_value(
                 [0.2, 0.8][i % 2])),
        Case("RUL: predict as of", "control", "views/quality.py", "quality_bundle",
             "sample_rul", lambda at, i: at.select_slider(key="quality_as_of").set_value(
                 at.select_slider(key="quality_as_of").options[[0, -1][i % 2]])),
        Case("forecast: horizon", "control", "views/forecast.py", "forecast_bundle",
             "sample_forecast",
             lambda at, i: at.select_slider(key="forecast_horizon").set_value([8, 32][i % 2])),
        Case("forecast: past origin", "control", "views/forecast.py", "forecast_bundle",
             "sample_forecast", lambda at, i: at.select_slider(key="forecast_origin").set_value(
                 100 + 5 * i)),  # a new origin every move, as a user drags it
        Case("defects: overlay opacity", "control", "views/defects.py", "defect_bundle",
             "sample_defects",
             lambda at, i: at.slider(key="defect_opacity").set_value([0.2, 0.8][i % 2]),
             setup=pick_image),
        Case("photo: overlay opacity (tiles)", "control", "views/defects.py", "defect_bundle",
             "sample_inspection",
             lambda at, i: at.slider(key="defect_opacity").set_value([0.2, 0.8][i % 2]),
             setup=pick_photo),
        Case("photo: attention map kind", "control", "views/defects.py", "defect_bundle",
             "sample_inspection",
             lambda at, i: at.radio(key="defect_map").set_value(["layer", "rollout"][i % 2]),
             setup=pick_photo),
        Case("evaluation: what-if threshold", "control", "views/evaluation.py",
             "evaluation_bundle", "sample_quality",
             lambda at, i: at.slider(key="eval_threshold").set_value([0.2, 0.8][i % 2])),
        Case("quality <-> RUL, a lot picked", "switch", "views/quality.py", "quality_bundle",
             "sample_quality", _switch("quality_bundle", "sample_quality", "sample_rul"),
             before=_last_lot),
        Case("patches <-> photos, an image picked", "switch", "views/defects.py",
             "defect_bundle", "sample_defects",
             _switch("defect_bundle", "sample_defects", "sample_inspection"),
             before=_images(_image_of)),
        Case("evaluation: quality <-> RUL", "switch", "views/evaluation.py",
             "evaluation_bundle", "sample_quality",
             _switch("evaluation_bundle", "sample_quality", "sample_rul")),
    ]  # fmt: skip


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _timed(at, case: Case, i: int) -> tuple[float, float]:
    """``(wall s, CPU s)`` of the rerun after ``case`` moves its widget for round ``i``."""
    if case.before:
        case.before(at, i)
    case.move(at, i)
    t, c = time.perf_counter(), time.process_time()
    at.run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    assert not at.exception, (case.name, at.exception)
    return wall, cpu


def main(argv: list[str] | None = None) -> int:
    parser = _harness.parser("dashboard_response", __doc__)
    parser.add_argument("models", type=Path)
    parser.add_argument("--data", type=Path, default=ROOT / "sample_data")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--app", type=Path, default=MAIN, help="the dashboard script (e.g. an older checkout's)"
    )
    parser.add_argument("--only", default="", help="comma-separated case names to run")
    args = parser.parse_args(argv)
    run = _harness.start("dashboard_response", args)
    app = args.app.resolve()
    only = {c.strip() for c in args.only.split(",") if c.strip()}
    os.environ.update(
        MFGTX_MODELS_DIR=str(args.models.resolve()),
        MFGTX_DATA_DIR=str(args.data.resolve()),
        MFGTX_APP_NO_AUTH="1",
    )
    os.chdir(ROOT)
    import logging

    import torch

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    chosen = [c for c in cases() if not only or c.name in only]
    opened, first = [], {}
    for case in chosen:
        t = time.perf_counter()
        at = _page(app, case)
        opened.append((case, at, time.perf_counter() - t))
    for case, at, _ in opened:  # warm: every value (every bundle) once; the first move kept
        first[case.name] = _timed(at, case, 0)[0]
        _timed(at, case, 1)
    walls: dict[str, list[float]] = {c.name: [] for c, *_ in opened}
    cpus: dict[str, list[float]] = {c.name: [] for c, *_ in opened}
    for i in range(args.repeats):  # interleaved: one change of each case per round
        for case, at, _ in opened:
            wall, cpu = _timed(at, case, i + 2)  # 0 and 1 were the warm-up
            walls[case.name].append(wall)
            cpus[case.name].append(cpu)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = _loadavg()
    print(f"app {app}")
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"threads {torch.get_num_threads()}, {cores} cores to run on, load average "
          f"{run.environment['load_average']} at the start, {load} at the end")  # fmt: skip
    print(f"{'change':36} {'open s':>7} {'first s':>8} {'median s':>9} {'max s':>7} "
          f"{'CPU s':>6} {'target':>7}  (n={args.repeats}, medians)")  # fmt: skip
    tables = {"control": "warm control change", "switch": "bundle switch"}
    for case, _, opening in opened:
        target = CONTROL_TARGET if case.kind == "control" else SWITCH_TARGET
        wall, cpu = statistics.median(walls[case.name]), statistics.median(cpus[case.name])
        print(f"{case.name:36} {opening:7.2f} {first[case.name]:8.2f} {wall:9.3f} "
              f"{max(walls[case.name]):7.3f} {cpu:6.3f} {target:7.1f}")  # fmt: skip
        cells = {
            "change": case.name,
            "open": opening,
            "first": first[case.name],
            "median": wall,
            "max": max(walls[case.name]),
            "median CPU": cpu,
            "target": target,
            "median within target": wall <= target,
            "CPU within target": cpu <= target,
        }
        secs = ("open", "first", "median", "max", "median CPU", "target")
        run.row(tables[case.kind], cells, units=dict.fromkeys(secs, "s"))
    run.environment["cores_used"] = cores
    run.environment["load_average_end"] = load
    busy = max(run.environment["load_average"][0], load[0]) > 0.5 * (cores or 1)
    run.note(
        f"Ran on {cores} core(s) with a load average of {run.environment['load_average'][0]} "
        f"at the start and {load[0]} at the end"
        + (
            ": a shared, loaded machine, so the wall seconds are not the quiet figure the "
            "targets are for; the CPU seconds per rerun (all threads of the process) are the "
            "steadier figure here."
            if busy
            else "."
        )
    )
    run.note(
        "'first' is the first move of the control (or the first switch to the other bundle): "
        "it may compute what the new value shows (an attention map kind's deletion test, a "
        "bundle's first load); 'median' and 'max' are the warm moves after it."
    )
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
