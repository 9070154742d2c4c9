"""Does the 80 % band hold on the test lots? Nominal vs realized coverage, uncalibrated and
conformal, beside the ridge baseline's conformal interval, for the job files given.

    python benchmarks/interval_coverage.py pipelines/configs/sample_rul.yaml \
        pipelines/configs/sample_forecast.yaml
    python benchmarks/interval_coverage.py pipelines/configs/etth1.yaml \\
        --datasets ../shared/datasets --methods off,cqr

Each job (a ``forecast`` job or a ``sensor`` regression with quantiles) is trained once per
``--methods`` entry (default ``cqr``) with ``calibration.intervals=<method>`` (``off``: the
model's own quantiles; ``conformal``: a band around the point; ``cqr``: the quantile band
widened or narrowed), the same seed, split and epochs each time. A calibrated model's report
also shows its own quantiles on the same test lots (``model, uncalibrated``), so one ``cqr``
run gives the band before and after its calibration. Figures come from the bundle's report
(:class:`mfgtx.calibration.coverage.Coverage`): the realized coverage on the job's own test
lots counted by lot (each lot weighs the same; windows of one lot are one piece of evidence),
its 95 % Clopper-Pearson interval over the test lots, the mean width in the target's units,
and the same for the ridge baseline's split-conformal interval from the same validation lots.
``--datasets`` replaces the part of the job's data path up to ``datasets/`` (the job files
name ``../shared/datasets/...``); a path without it is read as it is.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path, PurePosixPath
from typing import Any

import _harness

import mfgtx
from mfgtx.jobfile.config import load_config
from mfgtx.jobs.evaluate import evaluate
from mfgtx.jobs.train import train

METHODS = ("off", "conformal", "cqr")
DEFAULT = ("cqr",)  # its report shows the model's own quantiles too


def _data_path(job: Path, datasets: Path | None) -> list[str]:
    """``data.source.path=...`` (and an ``evaluate`` section's source and truth) moved under
    ``datasets``, or nothing to override."""
    if datasets is None:
        return []
    config = load_config(job)
    evaluate = config.evaluate
    keys = {
        "data.source.path": getattr(getattr(config.data, "source", None), "path", None),
        "evaluate.source.path": getattr(getattr(evaluate, "source", None), "path", None),
        "evaluate.truth.path": getattr(getattr(evaluate, "truth", None), "path", None),
    }
    out = []
    for key, source in keys.items():
        if not source or "datasets" not in PurePosixPath(str(source)).parts:
            continue
        parts = PurePosixPath(str(source)).parts
        rest = parts[parts.index("datasets") + 1 :]
        out.append(f"{key}={Path(datasets).joinpath(*rest)}")
    return out


def _rows(
    intervals: tuple[Any, ...], job: Path, method: str, test_set: str, run: dict[str, object],
    skip_raw: bool,
) -> list[dict[str, object]]:  # fmt: skip
    """One row per band judged on ``test_set`` (every target together)."""
    rows: list[dict[str, object]] = []
    model = intervals[0].name
    for c in (c for c in intervals if c.target is None):
        if c.name != model:
            who = "ridge baseline"
        else:
            who = "model, uncalibrated" if c.method == "quantiles" else "model"
        if who == "model, uncalibrated" and method != "off" and skip_raw:
            continue  # the `off` run measures the same band
        rows.append(
            {
                "job": job.name,
                "test set": test_set,
                "calibration.intervals": method,
                "predictor": who,
                "band": c.band_words,
                "nominal": round(c.nominal, 3),
                "realized (by lot)": round(c.coverage, 3),
                "95 % interval": f"{c.low:.3f} to {c.high:.3f}",
                "mean width": round(c.width, 4),
                "test lots": c.lots,
                "share of windows' values": round(c.pooled, 3),
                **run,
            }
        )
        print(
            f"{method:9s} {test_set:8s} {who:19s} nominal {c.nominal:.2f}  realized "
            f"{c.coverage:.3f} [{c.low:.3f}, {c.high:.3f}] over {c.lots} test lots  "
            f"width {c.width:.4g}",
            flush=True,
        )
    return rows


def run(
    job: Path, methods: tuple[str, ...], epochs: int | None, datasets: Path | None,
    extra: list[str], keep: Path | None = None,
) -> list[dict[str, object]]:  # fmt: skip
    logging.disable(logging.INFO)
    base = load_config(job)
    kind = "forecast" if base.forecast is not None else "sensor"
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for method in methods:
            bundle = (Path(tmp) if keep is None else keep / job.stem) / method
            overrides = [
                *_data_path(job, datasets),
                f"calibration.intervals={method}",
                f"bundle={bundle}",
                f"train.checkpoint_dir={bundle}.ckpt",
                *([f"train.epochs={epochs}"] if epochs is not None else []),
                *extra,
            ]
            config = load_config(job, overrides)
            t0 = time.perf_counter()
            outcome = train(kind, config)
            seconds = time.perf_counter() - t0
            report = mfgtx.load(bundle).report
            if report is None or not report.intervals:
                raise SystemExit(f"{job}: the model has no interval (quantiles) to measure")
            run = {"epochs": outcome.epochs_run, "seconds": round(seconds, 1)}
            skip_raw = "off" in methods
            rows += _rows(report.intervals, job, method, "internal", run, skip_raw)
            if config.evaluate is not None:  # the job's external test set (e.g. NASA's)
                _, judged = evaluate(config)
                if judged.intervals:
                    rows += _rows(judged.intervals, job, method, "external", run, skip_raw)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = _harness.parser("interval_coverage", __doc__)
    parser.add_argument(
        "jobs", type=Path, nargs="+", help="forecast or sensor-regression job files"
    )
    parser.add_argument(
        "--datasets", type=Path, default=None, help="the datasets folder (default: as the job)"
    )
    parser.add_argument(
        "--methods", default=",".join(DEFAULT), help="calibration.intervals values to compare"
    )
    parser.add_argument("--epochs", type=int, default=None, help="train.epochs (default: job's)")
    parser.add_argument("--set", action="append", default=[], help="job-file override")
    parser.add_argument(
        "--keep", type=Path, default=None, help="write the bundles under this folder (kept)"
    )
    args = parser.parse_args(argv)
    methods = tuple(m for m in args.methods.split(",") if m)
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: {unknown} are not among {list(METHODS)}")
    variant = ", ".join(job.stem for job in args.jobs)
    record = _harness.start("interval_coverage", args, variant=variant)
    for job in args.jobs:
        for row in run(job, methods, args.epochs, args.datasets, args.set, args.keep):
            record.row("Coverage on the test lots", row, units={"mean width": "target units"})
    record.note(
        "realized coverage: mean over test lots of each lot's share of values inside the band; "
        "95 % Clopper-Pearson interval with n = test lots (mfgtx.calibration.coverage)"
    )
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
