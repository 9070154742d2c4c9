"""A six-condition run-to-failure fleet made from C-MAPSS FD001, and the job file that reads it:
a check of the multi-condition path (``data.regimes``, young engines, ``evaluate`` on NASA's
file formats) at the scale of a real fleet, with only a job file.

    python benchmarks/cmapss_conditions.py ../shared/datasets/cmapss_fd001 --out DIR
    mfgtx train sensor DIR/job.yaml && mfgtx evaluate DIR/job.yaml --report DIR/test.json

FD002 and FD004 run under six operating conditions, and every sensor's level jumps with the
condition of each cycle. This script gives FD001's engines (one condition) the same trait,
so that the shipped ``pipelines/configs/cmapss_fd001.yaml``, copied with its paths changed
and ``data.regimes`` added, can be checked end to end where FD002 is not at hand:

- each cycle draws one of six conditions at random (FD002's altitude / Mach / throttle
  triples, with small noise on the three settings, as in NASA's files);
- in condition ``c`` every sensor ``s`` reads ``level[c, s] + gain[c, s] * (s - mean(s))``:
  levels drawn tens of FD001 spreads apart, gains between 0.7 and 1.4 (condition 0, sea
  level, is FD001 itself), so without per-condition normalisation the wear trend drowns;
- ``--young K`` test engines are cut to 15 to 25 cycles (their truth grows by the cycles
  cut), younger than any FD001 test engine: every engine must still be scored.

The truth of the kept engines is NASA's, so the figures can be set beside FD001's own. Files
are written in NASA's format (``train_FD001X6.txt.gz``, ``test_...``, ``RUL_...``) to ``DIR``,
never into the data folder; the data set is read in place.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import _harness
import numpy as np
import pandas as pd
import yaml

from mfgtx.datasets import CMAPSS_COLUMNS, read_cmapss, read_cmapss_rul

CONFIG = Path(__file__).resolve().parents[1] / "pipelines" / "configs" / "cmapss_fd001.yaml"
#: FD002's six operating conditions: altitude (kft), Mach number, throttle resolver angle.
CONDITIONS = np.array(
    [[0.0, 0.0, 100.0], [10.0, 0.25, 100.0], [20.0, 0.70, 100.0],
     [25.0, 0.62, 60.0], [35.0, 0.84, 100.0], [42.0, 0.84, 100.0]]
)  # fmt: skip
SETTINGS = ["setting_1", "setting_2", "setting_3"]
SENSORS = [c for c in CMAPSS_COLUMNS if c.startswith("s_")]


def _write(df: pd.DataFrame, path: Path) -> None:
    with gzip.open(path, "wt") as f:
        df.to_csv(f, sep=" ", header=False, index=False, float_format="%.6g")


def conditioned(train: pd.DataFrame, test: pd.DataFrame, truth: np.ndarray, *, seed: int,
                young: int) -> tuple[pd.DataFrame, pd.DataFrame, np.ndarray]:  # fmt: skip
    """``train``, ``test`` and ``truth`` (RUL per test engine, in unit order) with six
    conditions drawn per cycle and ``young`` test engines cut short (see the module)."""
    rng = np.random.default_rng(seed)
    mean = train[SENSORS].mean().to_numpy()
    spread = train[SENSORS].std().to_numpy()
    spread = np.where(spread > 0, spread, np.abs(mean) * 1e-3 + 1e-3)  # constant sensors
    level = mean + spread * rng.uniform(-40, 40, (len(CONDITIONS), len(SENSORS)))
    gain = rng.uniform(0.7, 1.4, (len(CONDITIONS), len(SENSORS)))
    level[0], gain[0] = mean, 1.0  # sea level: FD001 as recorded

    def apply(df: pd.DataFrame) -> pd.DataFrame:
        df = df.copy()
        c = rng.integers(0, len(CONDITIONS), len(df))
        noise = rng.normal(0, [0.002, 0.0002, 0.0], (len(df), 3))
        df[SETTINGS] = np.round(CONDITIONS[c] + noise, 4)
        x = df[SENSORS].to_numpy(float)
        df[SENSORS] = level[c] + gain[c] * (x - mean)
        return df

    train, test = apply(train), apply(test)
    truth = truth.astype(float)
    units = np.sort(test["unit"].unique())
    for k in rng.choice(len(units), size=young, replace=False):
        life = int((test["unit"] == units[k]).sum())
        keep = int(rng.integers(15, 26))
        if keep < life:
            drop = (test["unit"] == units[k]) & (test["cycle"] > keep)
            test = test.loc[~drop]
            truth[k] += life - keep
    return train.reset_index(drop=True), test.reset_index(drop=True), truth


def job_file(out: Path, name: str) -> dict:
    """``cmapss_fd001.yaml`` with its paths moved to ``out`` and six regimes found by
    k-means on the three settings (the only change a user makes for such a fleet)."""
    job = yaml.safe_load(CONFIG.read_text())
    job["name"] = name
    job["data"]["source"]["path"] = str(out / f"train_{name}.txt.gz")
    job["data"]["regimes"] = {"columns": SETTINGS, "clusters": len(CONDITIONS)}
    for key in ("evaluate", "score"):
        job[key]["source"]["path"] = str(out / f"test_{name}.txt.gz")
    job["evaluate"]["truth"]["path"] = str(out / f"RUL_{name}.txt.gz")
    job["bundle"] = str(out / "models" / name)
    job["score"]["output"]["path"] = str(out / "results" / f"{name}.parquet")
    return job


def main(argv: list[str] | None = None) -> int:
    ap = _harness.parser("cmapss_conditions", __doc__, out_flag="--results")
    ap.add_argument("folder", type=Path, help="the C-MAPSS FD001 folder (read in place)")
    ap.add_argument("--out", type=Path, required=True, help="a new folder for the fleet")
    ap.add_argument("--young", type=int, default=6, help="test engines cut to 15-25 cycles")
    args = ap.parse_args(argv)
    run = _harness.start("cmapss_conditions", args)
    if args.out.exists() and any(args.out.iterdir()):
        raise SystemExit(f"{args.out} is not empty: give a new folder")
    args.out.mkdir(parents=True, exist_ok=True)
    train = read_cmapss(args.folder / "train_FD001.txt.gz")
    test = read_cmapss(args.folder / "test_FD001.txt.gz")
    truth = read_cmapss_rul(args.folder / "RUL_FD001.txt.gz")
    train, test, truth = conditioned(train, test, truth, seed=args.seed, young=args.young)
    name = "FD001X6"
    _write(train, args.out / f"train_{name}.txt.gz")
    _write(test, args.out / f"test_{name}.txt.gz")
    _write(pd.DataFrame({"rul": truth.astype(np.int64)}), args.out / f"RUL_{name}.txt.gz")
    (args.out / "job.yaml").write_text(yaml.safe_dump(job_file(args.out, name), sort_keys=False))
    lengths = test.groupby("unit").size()
    print(f"wrote {args.out}: {train['unit'].nunique()} training engines ({len(train)} cycles), "
          f"{len(lengths)} test engines, the shortest {lengths.min()} cycles; job: "
          f"{args.out / 'job.yaml'}")  # fmt: skip
    run.row(
        "the conditioned fleet",
        {"training engines": train["unit"].nunique(), "training cycles": len(train),
         "test engines": len(lengths), "shortest test engine": int(lengths.min())},
        units={"training cycles": "cycles", "shortest test engine": "cycles"},
    )  # fmt: skip
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
