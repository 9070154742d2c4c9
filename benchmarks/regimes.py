"""Operating regimes on a multi-condition run-to-failure fleet: encoder with and without
``data.regimes`` beside gradient boosting and ridge, side by side in one run.

    python benchmarks/regimes.py sample_data/regimes [--epochs 30] [--seeds 3]

``FOLDER`` holds ``train.csv`` (run to failure), ``test.csv`` (other machines cut off before
failure) and ``test_rul.csv`` (their true RUL), as ``sample_data/generate.py`` writes them.
Each variant is ``pipelines/configs/sample_regimes.yaml`` with its paths moved to
``FOLDER``: ``regimes`` as shipped (k-means on the three settings, per-regime normalisation,
one-hot regime channels), ``raw`` without ``data.regimes`` (the settings read as three more
plain sensors, so the model has the same information). Figures: RMSE on the job's own test
lots (split from train.csv) and on the external test machines (last window of each machine
of test.csv against test_rul.csv; machines shorter than a window are left out for every
model alike). Baselines are fitted on the same training windows as the encoder, on the
windows as that variant's model reads them (per-regime normalised with ``regimes``).
Encoder figures: median over ``--seeds`` training seeds, with the range.
"""

from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path

import _harness
import numpy as np
import pandas as pd

import mfgtx
from mfgtx.baselines import fit_baselines
from mfgtx.jobfile.config import load_config
from mfgtx.jobfile.prepare import read_windows, split
from mfgtx.jobs.train import train
from mfgtx.kinds import SENSOR, cross_fit

CONFIG = Path(__file__).resolve().parents[1] / "pipelines" / "configs" / "sample_regimes.yaml"
SETTINGS = ["setting_1", "setting_2", "setting_3"]
SENSORS = ["t24", "t30", "t50", "p30", "nc", "phi"]


def _overrides(
    folder: Path, variant: str, epochs: int, seed: int, bundle: Path, extra: list[str]
) -> list[str]:
    out = [
        *extra,
        f"data.source.path={folder / 'train.csv'}",
        f"bundle={bundle}",
        f"train.epochs={epochs}",
        f"train.seed={seed}",
        f"train.checkpoint_dir={bundle}.ckpt",
    ]
    if variant == "raw":
        out += ["data.regimes=null", f"data.columns.sensors=[{', '.join(SENSORS + SETTINGS)}]"]
    return out


def _rmse(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(np.sqrt(np.mean((np.asarray(pred, float) - np.asarray(truth, float)) ** 2)))


def _external(folder: Path, window: int) -> tuple[pd.DataFrame, pd.Series]:
    test = pd.read_csv(folder / "test.csv")
    truth = pd.read_csv(folder / "test_rul.csv").set_index("machine")["rul_cycles"]
    long_enough = test.groupby("machine").size()
    keep = long_enough.index[long_enough >= window]
    return test[test["machine"].isin(keep)].reset_index(drop=True), truth.loc[keep]


def run(
    folder: Path, epochs: int, seeds: int, extra: list[str], variants: tuple[str, ...]
) -> list[dict[str, str]]:
    logging.disable(logging.INFO)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for variant in variants:
            config = None
            for seed in range(seeds):
                bundle = Path(tmp) / f"{variant}-{seed}"
                config = load_config(
                    CONFIG, _overrides(folder, variant, epochs, seed, bundle, extra)
                )
                t0 = time.perf_counter()
                outcome = train("sensor", config)
                seconds = time.perf_counter() - t0
                predictor = mfgtx.load(bundle)
                test, truth = _external(folder, config.windows.need)
                scored = predictor.score(test, last_per_lot=True)
                ext = scored.rows.set_index("lot")["rul_cycles"].loc[truth.index]
                rows.append(
                    {
                        "variant": variant,
                        "model": "SensorEncoder",
                        "seed": seed,
                        "test_lots_rmse": outcome.metrics["rmse"],
                        "external_rmse": _rmse(ext.to_numpy(), truth.to_numpy()),
                        "epochs": outcome.epochs_run,
                        "seconds": seconds,
                    }
                )
                print(
                    f"{variant:8s} seed {seed}: test lots {outcome.metrics['rmse']:.2f}, "
                    f"external {rows[-1]['external_rmse']:.2f} ({outcome.epochs_run} epochs, "
                    f"{seconds:.0f} s)",
                    flush=True,
                )
            assert config is not None
            # the baselines the job's report holds, refitted here to score the external set
            windows, _ = read_windows(config, SENSOR)
            if config.train.ensemble is not None:  # the lots the ensemble learnt from
                prep = cross_fit(
                    windows,
                    config.split,
                    config.train.ensemble.members,
                    regimes=config.data.regimes,
                )
                learn = prep.train
            else:
                prep = split(config, windows)
                learn = prep.sets.train
            report = predictor.report
            assert report is not None
            baselines = fit_baselines(prep.windows, learn, "regression", scaler=prep.scaler)
            ext_windows = predictor.windows(test)
            last = ext_windows.last_per_lot()
            order = truth.loc[ext_windows.lot[last]].to_numpy()
            for b in baselines:
                in_report = next(r for r in report.rows if r.name == b.name)
                rows.append(
                    {
                        "variant": variant,
                        "model": b.name,
                        "seed": -1,
                        "test_lots_rmse": in_report.metrics["rmse"],
                        "external_rmse": _rmse(b.predict(ext_windows, last)[:, 0], order),
                        "epochs": 0,
                        "seconds": 0.0,
                    }
                )
    table = pd.DataFrame(rows)
    print(f"\nRMSE (cycles), {folder}: encoder median [min, max] over {seeds} seeds")
    print(f"job: {CONFIG.name} {' '.join(extra)}")
    print(f"external: {len(truth)} test machines of test.csv (shorter than a window: left out)")
    summary = []
    for (variant, model), part in table.groupby(["variant", "model"], sort=False):
        entry = {"variant": variant, "model": model}
        for col in ("test_lots_rmse", "external_rmse"):
            v = part[col].to_numpy()
            entry[col] = (
                f"{np.median(v):.2f} [{v.min():.2f}, {v.max():.2f}]"
                if len(v) > 1
                else f"{v[0]:.2f}"
            )
        summary.append(entry)
    print(pd.DataFrame(summary).to_string(index=False))
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = _harness.parser("regimes", __doc__)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--set", action="append", default=[], help="job-file override for both variants"
    )
    parser.add_argument("--variants", default="regimes,raw", help="regimes, raw or both")
    args = parser.parse_args(argv)
    record = _harness.start("regimes", args)
    summary = run(args.folder, args.epochs, args.seeds, args.set, tuple(args.variants.split(",")))
    for entry in summary:  # encoder: median [min, max] over the seeds
        record.row("RMSE (cycles)", entry)
    record.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
