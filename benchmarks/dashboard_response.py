"""Dashboard response after a control change: seconds per script run, measured with AppTest.

Each case opens a page with a demo bundle, warms it (first run: loads, reads and explains),
then moves one control back and forth ``--repeats`` times and times each rerun of the page
script (what a browser waits for before it redraws; drawing in the browser comes on top).
The cases are interleaved, so that load from other users of a shared machine falls on all of
them alike; medians and maxima are printed.

Usage:
    python benchmarks/dashboard_response.py MODELS_DIR [--data sample_data] [--repeats 5]

``MODELS_DIR`` holds the demo's bundles (``mfgtx demo --quick`` writes them under
``demo-output/models``; any folder with ``sample_quality``, ``sample_rul``,
``sample_forecast``, ``sample_defects`` and ``sample_inspection`` bundles works).
"""

from __future__ import annotations

import os
import statistics
import sys
import time
import warnings
from pathlib import Path

import _harness

ROOT = Path(__file__).resolve().parent.parent
MAIN = ROOT / "app" / "dashboard.py"


def _page(app: Path, page: str, key: str | None, bundle: str | None, setup=None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(app), default_timeout=600).run()
    at.switch_page(page).run()
    if key:
        at.selectbox(key=key).set_value(bundle).run()
    if setup:
        setup(at)
    assert not at.exception, at.exception
    return at


def cases():
    """``(name, page, bundle key, bundle, setup, control(at, i))``: each control moves."""

    def pick_image(at):
        at.multiselect(key="defect_samples").set_value(["defects/images/000.png"]).run()

    def pick_photo(at):  # a full-size photo of the tiled bundle: tile heat map + worst tile
        at.multiselect(key="defect_samples").set_value(["inspection/images/P01.png"]).run()

    return [
        ("quality: what-if threshold", "views/quality.py", "quality_bundle", "sample_quality",
         None, lambda at, i: at.slider(key="quality_threshold").set_value([0.2, 0.8][i % 2])),
        ("RUL: predict as of", "views/quality.py", "quality_bundle", "sample_rul", None,
         lambda at, i: at.select_slider(key="quality_as_of").set_value(
             at.select_slider(key="quality_as_of").options[[0, -1][i % 2]])),
        ("forecast: horizon", "views/forecast.py", "forecast_bundle", "sample_forecast", None,
         lambda at, i: at.select_slider(key="forecast_horizon").set_value([8, 32][i % 2])),
        ("forecast: past origin", "views/forecast.py", "forecast_bundle", "sample_forecast",
         None, lambda at, i: at.select_slider(key="forecast_origin").set_value(100 + 10 * i)),
        ("defects: overlay opacity", "views/defects.py", "defect_bundle", "sample_defects",
         pick_image, lambda at, i: at.slider(key="defect_opacity").set_value([0.2, 0.8][i % 2])),
        ("photo: overlay opacity (tiles)", "views/defects.py", "defect_bundle",
         "sample_inspection", pick_photo,
         lambda at, i: at.slider(key="defect_opacity").set_value([0.2, 0.8][i % 2])),
        ("photo: attention map kind", "views/defects.py", "defect_bundle", "sample_inspection",
         pick_photo,
         lambda at, i: at.radio(key="defect_map").set_value(["layer", "rollout"][i % 2])),
        ("evaluation: what-if threshold", "views/evaluation.py", "evaluation_bundle",
         "sample_quality", None,
         lambda at, i: at.slider(key="eval_threshold").set_value([0.2, 0.8][i % 2])),
    ]  # fmt: skip


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
    opened = []
    for name, page, key, bundle, setup, control in cases():
        if only and name not in only:
            continue
        t = time.perf_counter()
        at = _page(app, page, key, bundle, setup)
        opened.append((name, at, control, time.perf_counter() - t))
    times: dict[str, list[float]] = {name: [] for name, *_ in opened}
    for i in range(args.repeats):  # interleaved: one change of each control per round
        for name, at, control, _ in opened:
            control(at, i)
            t = time.perf_counter()
            at.run()
            times[name].append(time.perf_counter() - t)
            assert not at.exception, (name, at.exception)
    print(f"app {app}")
    print(f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()}, "
          f"threads {torch.get_num_threads()}, {os.cpu_count()} CPUs")  # fmt: skip
    print(f"{'control':32} {'open s':>8} {'median s':>9} {'max s':>7}  (n={args.repeats})")
    for name, _, _, first in opened:
        runs = times[name]
        print(f"{name:32} {first:8.2f} {statistics.median(runs):9.3f} {max(runs):7.3f}")
        cells = {"open": first, "median": statistics.median(runs), "max": max(runs)}
        run.row(
            "page rerun after one control changes",
            {"control": name, **cells},
            units=dict.fromkeys(cells, "s"),
        )
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
