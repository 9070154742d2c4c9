"""Does the 80 % band hold on the test lots? Nominal vs realized coverage, uncalibrated and
conformal, beside the ridge baseline's conformal interval, for the job files given.

    python benchmarks/interval_coverage.py pipelines/configs/sample_rul.yaml \
        pipelines/configs/sample_forecast.yaml
    python benchmarks/interval_coverage.py pipelines/configs/etth1.yaml \\
        --datasets ../shared/datasets --methods off,cqr

Each job (a ``forecast`` job or a ``sensor`` regression with quantiles) is trained once per
``--methods`` entry with ``calibration.intervals=<method>`` (``off``: the model's own
quantiles; ``conformal``: a band around the point; ``cqr``: the quantile band widened or
narrowed), the same seed, split and epochs each time. Figures come from the bundle's report
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

import _harness

import mfgtx
from mfgtx.jobfile.config import load_config
from mfgtx.jobs.train import train

METHODS = ("off", "conformal", "cqr")


def _data_path(job: Path, datasets: Path | None) -> list[str]:
    """``data.source.path=...`` moved under ``datasets``, or nothing to override."""
    if datasets is None:
        return []
    config = load_config(job)
    source = getattr(getattr(config.data, "source", None), "path", None)
    if not source or "datasets" not in PurePosixPath(str(source)).parts:
        return []
    parts = PurePosixPath(str(source)).parts
    rest = parts[parts.index("datasets") + 1 :]
    return [f"data.source.path={Path(datasets).joinpath(*rest)}"]


def run(
    job: Path, methods: tuple[str, ...], epochs: int | None, datasets: Path | None,
    extra: list[str],
) -> list[dict[str, object]]:  # fmt: skip
    logging.disable(logging.INFO)
    base = load_config(job)
    kind = "forecast" if base.forecast is not None else "sensor"
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for method in methods:
            bundle = Path(tmp) / method
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
            for who, c in zip(("model", "ridge baseline"), report.intervals, strict=False):
                rows.append(
                    {
                        "job": job.name,
                        "calibration.intervals": method,
                        "predictor": who,
                        "band": c.band_words,
                        "nominal": round(c.nominal, 3),
                        "realized (by lot)": round(c.coverage, 3),
                        "95 % interval": f"{c.low:.3f} to {c.high:.3f}",
                        "mean width": round(c.width, 4),
                        "test lots": c.lots,
                        "share of windows' values": round(c.pooled, 3),
                        "epochs": outcome.epochs_run,
                        "seconds": round(seconds, 1),
                    }
                )
                print(
                    f"{method:9s} {who:15s} nominal {c.nominal:.2f}  realized {c.coverage:.3f} "
                    f"[{c.low:.3f}, {c.high:.3f}] over {c.lots} test lots  width {c.width:.4g}",
                    flush=True,
                )
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
        "--methods", default=",".join(METHODS), help="calibration.intervals values to compare"
    )
    parser.add_argument("--epochs", type=int, default=None, help="train.epochs (default: job's)")
    parser.add_argument("--set", action="append", default=[], help="job-file override")
    args = parser.parse_args(argv)
    methods = tuple(m for m in args.methods.split(",") if m)
    unknown = sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"--methods: {unknown} are not among {list(METHODS)}")
    record = _harness.start("interval_coverage", args)
    for job in args.jobs:
        for row in run(job, methods, args.epochs, args.datasets, args.set):
            record.row("Coverage on the test lots", row, units={"mean width": "target units"})
    record.note(
        "realized coverage: mean over test lots of each lot's share of values inside the band; "
        "95 % Clopper-Pearson interval with n = test lots (mfgtx.calibration.coverage)"
    )
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
