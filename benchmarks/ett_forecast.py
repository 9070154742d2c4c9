"""ETTh1 long-horizon benchmark of CausalForecaster against the mfgtx.baselines forecasts.

Standard protocol (Informer; PatchTST and DLinear follow it), checked against the data set's
README: rows ``[0, 8640)`` train, ``[8640, 11520)`` validation, ``[11520, 14400)`` test (12/4/4
months); validation and test input windows reach back ``L`` rows before their border, only
the targets must lie inside it. Standardisation fitted on the train rows only. All 7 series
are forecast; MSE and MAE on the standardised scale over EVERY test window (stride 1, the last
partial batch included: 2880 - H + 1 windows).

The CSV is read in place and sliced in memory (its licence forbids modified copies).

Run (from the repository root)::

    nice -n 15 python benchmarks/ett_forecast.py --horizons 96 192 336 720 --models baselines
    nice -n 15 python benchmarks/ett_forecast.py --horizons 96 --models transformer --epochs 10
    # PatchTST's ETTh1 sizes (d_model 16, 4 heads, d_ff 128, dropout 0.3), lookback 336:
    python benchmarks/ett_forecast.py --horizons 96 --models transformer --context 336 \
        --d-model 16 --n-heads 4 --d-ff 128 --dropout 0.3 --head-dropout 0 --lr 1e-3
    nice -n 15 python benchmarks/ett_forecast.py --quick      # a smoke run of everything
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import _harness
import numpy as np
import pandas as pd
import torch

from mfgtx.baselines import LinearRidge, Naive, SeasonalNaive
from mfgtx.data import (
    ColumnMap,
    SensorScaler,
    SensorTable,
    WindowDataset,
    Windows,
    evaluation_batches,
    make_windows,
    read_table,
)
from mfgtx.kinds.forecast import ridge_map_alone
from mfgtx.models import CausalForecaster, ForecasterConfig
from mfgtx.train import TrainConfig, fit

SERIES = ("HUFL", "HULL", "MUFL", "MULL", "LUFL", "LULL", "OT")
TRAIN_END, VAL_END, TEST_END = 8640, 11520, 14400
DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/datasets/ett_small/ETTh1.csv.gz"


@dataclass(frozen=True)
class EttData:
    windows: Windows
    sets: dict[str, np.ndarray]  # train / val / test window positions
    scaler: SensorScaler  # fitted on rows [0, 8640)


@functools.cache
def _etth1_table(path: Path) -> SensorTable:
    df = pd.read_csv(path, parse_dates=["date"]).iloc[:TEST_END]
    df.insert(0, "lot", "ETTh1")  # one continuous series: one lot
    return read_table(df, ColumnMap(lot="lot", time="date", sensors=SERIES))


def etth1_windows(path: str | Path, context: int, horizon: int) -> EttData:
    """Every stride-1 window of the standard split, and the train-rows scaler."""
    table = _etth1_table(Path(path))
    w = make_windows(table, context, stride=1, horizon=horizon, forecast=list(SERIES))
    first_target = w.row_start + context
    last_target = first_target + horizon  # exclusive
    sets = {
        "train": np.flatnonzero(last_target <= TRAIN_END),
        "val": np.flatnonzero((first_target >= TRAIN_END) & (last_target <= VAL_END)),
        "test": np.flatnonzero((first_target >= VAL_END) & (last_target <= TEST_END)),
    }
    # the leakage rule of a single series: no target of an earlier set reaches a later one
    assert last_target[sets["train"]].max() <= first_target[sets["val"]].min()
    assert last_target[sets["val"]].max() <= first_target[sets["test"]].min()
    train_rows = w.values[:TRAIN_END].astype(np.float64)  # (8640, 7)
    scaler = SensorScaler(
        sensors=w.sensors,
        method="standard",
        center=tuple(float(v) for v in train_rows.mean(0)),
        scale=tuple(float(v) for v in train_rows.std(0)),
        fit_rows=((0, TRAIN_END),),
    )
    return EttData(w, sets, scaler)


class ScaledWindows(torch.utils.data.Dataset):
    """:class:`~mfgtx.data.WindowDataset` items with ``y`` standardised like ``x``."""

    def __init__(self, data: EttData, split: str, limit: int | None = None, every: int = 1) -> None:
        idx = data.sets[split][::every][:limit]
        with warnings.catch_warnings():  # y is scaled below, as the warning asks
            warnings.filterwarnings("ignore", "WindowDataset scales x but not y")
            self.items = WindowDataset(data.windows, idx, data.scaler)
        self.scaler = data.scaler

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        item = self.items[i]
        item["y"] = torch.from_numpy(self.scaler.transform(item["y"].numpy()))
        return item


def score(data: EttData, pred_scaled: np.ndarray, split: str = "test") -> dict[str, float]:
    """MSE and MAE on the standardised scale over every window of ``split``."""
    y = data.scaler.transform(data.windows.y[data.sets[split]])  # (N, H, 7)
    if pred_scaled.shape != y.shape:
        raise ValueError(f"predictions {pred_scaled.shape} do not cover the {split} set {y.shape}")
    err = pred_scaled.astype(np.float64) - y
    return {"mse": float((err**2).mean()), "mae": float(np.abs(err).mean()), "n": len(y)}


def run_baselines(data: EttData) -> dict[str, dict[str, float]]:
    train, test = data.sets["train"], data.sets["test"]
    out = {}
    for b in (Naive(), SeasonalNaive(24), LinearRidge(336), LinearRidge()):
        t0 = time.perf_counter()
        pred = b.fit(data.windows, train, data.scaler).predict(data.windows, test)
        out[b.name] = score(data, data.scaler.transform(pred)) | {
            "seconds": time.perf_counter() - t0
        }
    return out


def _forecast(model: CausalForecaster, data: EttData, idx: np.ndarray) -> np.ndarray:
    """Scaled point forecasts of windows ``idx``, every window, in order."""
    preds = []
    with torch.no_grad():
        for batch in evaluation_batches(idx, 256):
            x, observed = data.windows.features(batch, data.scaler)
            preds.append(model(torch.from_numpy(x), torch.from_numpy(observed)).numpy())
    return np.concatenate(preds)


def run_transformer(
    data: EttData, args: argparse.Namespace, horizon: int, seed: int
) -> dict[str, dict]:
    """One member: the trained Transformer's test scores and, with ``--linear-skip ridge``,
    its ridge map alone's and the one the job's choice rule ships (``pick: validation``:
    the lower MSE on every validation window, a tie to the map), with the test forecasts
    under ``"pred"``."""
    cfg = ForecasterConfig(
        n_channels=len(SERIES),
        context_length=args.context,
        horizon=horizon,
        patch_len=16,
        stride=8,
        d_model=args.d_model,
        n_heads=args.n_heads,
        n_layers=args.n_layers,
        d_ff=args.d_ff,
        dropout=args.dropout,
        head_dropout=args.head_dropout,
        positional=args.positional,
        linear_skip=args.linear_skip != "off",
        quantiles=(),
    )
    model = CausalForecaster(cfg)
    if args.linear_skip == "ridge":  # the ridge map on the training windows, then frozen
        train_idx = data.sets["train"][:: args.train_stride]
        x, observed = data.windows.features(train_idx, data.scaler)
        y = data.scaler.transform(data.windows.y[train_idx])
        model.fit_linear_skip(
            torch.from_numpy(x), torch.from_numpy(y).float(), torch.from_numpy(observed)
        )
    limit = 512 if args.quick else None
    tc = TrainConfig(
        epochs=args.epochs,
        batch_size=args.batch_size,
        lr=args.lr,
        patience=args.patience,
        precision=args.precision,
        device="cpu",
        progress="log",
        log_every=50,
        seed=seed,
    )
    t0 = time.perf_counter()
    every = args.train_stride
    train, val = (
        ScaledWindows(data, "train", limit, every),
        ScaledWindows(data, "val", limit, every),
    )
    result = fit(model, train, val, tc)
    train_s = time.perf_counter() - t0
    facts = {
        "train_seconds": train_s,
        "epochs_run": len(result.history),
        "best_epoch": result.best_epoch,
        "precision": result.precision,
        "train_windows": len(train),
        "seed": seed,
    }
    candidates = {"transformer": model}
    if args.linear_skip == "ridge":
        candidates["ridge map"] = ridge_map_alone(model)
    out: dict[str, dict] = {}
    for name, m in candidates.items():
        test = _forecast(m, data, data.sets["test"])
        val = score(data, _forecast(m, data, data.sets["val"]), "val")["mse"]
        out[name] = score(data, test) | facts | {"val_mse": val, "pred": test}
    if "ridge map" in out:  # the choice rule of forecast.pick: validation (a tie to the map)
        shipped = (
            "transformer"
            if out["transformer"]["val_mse"] < out["ridge map"]["val_mse"]
            else "ridge map"
        )
        out["picked"] = out[shipped] | {"shipped": shipped}
    return out


def _members_rows(members: list[dict[str, dict]], data: EttData) -> dict[str, dict]:
    """The table rows of one horizon's members: each member's, and with more than one
    member the ensemble mean of each kind (the picked one: each member's own pick)."""
    rows: dict[str, dict] = {}
    for kind in members[0]:
        label = {"transformer": "CausalForecaster", "ridge map": "its ridge map alone",
                 "picked": "choice rule (pick: validation)"}[kind]  # fmt: skip
        for m in members:
            r = m[kind]
            extra = f", shipped {r['shipped']}" if kind == "picked" else ""
            rows[f"{label}, seed {r['seed']}"] = {k: v for k, v in r.items() if k != "pred"} | {
                "note": f"val MSE {r['val_mse']:.4f}{extra}"
            }
        if len(members) > 1:
            mean = np.mean([m[kind]["pred"] for m in members], axis=0)
            shipped = [m[kind].get("shipped") for m in members]
            what = f" (shipped: {', '.join(shipped)})" if kind == "picked" else ""
            rows[f"{label}, ensemble of {len(members)}"] = score(data, mean) | {
                "note": f"mean of the members' forecasts{what}"
            }
    return rows


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser(
        "ett_forecast",
        __doc__,
        out_flag="--results",  # its own --out is the JSON file it wrote before the harness
        threads=2,
        formatter_class=argparse.RawTextHelpFormatter,
    )
    p.add_argument("--data", type=Path, default=DEFAULT_DATA)
    p.add_argument("--horizons", type=int, nargs="+", default=[96, 192, 336, 720])
    p.add_argument("--models", nargs="+", default=["baselines", "transformer"])
    p.add_argument("--context", type=int, default=512)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-heads", type=int, default=16)
    p.add_argument("--n-layers", type=int, default=3)
    p.add_argument("--d-ff", type=int, default=256)
    p.add_argument("--dropout", type=float, default=0.2)
    p.add_argument("--head-dropout", type=float, default=0.2)
    p.add_argument(
        "--positional", default="sinusoidal", choices=["sinusoidal", "learned", "rotary"]
    )
    p.add_argument(
        "--linear-skip",
        default="off",
        choices=["off", "learned", "ridge"],
        help="add a linear map of the context to the forecast: learned from zero, or the "
        "ridge fit on the training windows, frozen (the Transformer learns the rest)",
    )
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "auto"])
    p.add_argument(
        "--members",
        type=int,
        default=1,
        help="train members with seeds --seed, --seed+1, ... on the same split and report "
        "each and the mean of their forecasts (the protocol's one split: no cross-fitting)",
    )
    p.add_argument(
        "--train-stride",
        type=int,
        default=1,
        help="train and early-stop on every k-th window only (the test set is never thinned)",
    )
    p.add_argument("--quick", action="store_true", help="512 train/val windows, 1 epoch, h=96")
    p.add_argument("--out", type=Path, default=None, help="write the results as JSON")
    args = p.parse_args(argv)
    if args.members < 1:
        p.error("--members must be >= 1")
    if args.quick:
        args.epochs, args.horizons = 1, [96]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    run = _harness.start("ett_forecast", args)
    if not args.data.exists():
        print(f"ETTh1 not found at {args.data}; pass --data", file=sys.stderr)
        return 2
    print(f"# ETTh1 M (7->7), context {args.context}, torch {torch.__version__}, "
          f"{args.threads} threads, pid {os.getpid()}")  # fmt: skip
    results: dict[str, dict] = {}
    print("| horizon | model | MSE | MAE | test windows | notes |")
    print("| --- | --- | --- | --- | --- | --- |")
    for h in args.horizons:
        data = etth1_windows(args.data, args.context, h)
        rows: dict[str, dict] = {}
        if "baselines" in args.models:
            rows |= run_baselines(data)
        if "transformer" in args.models:
            members = [run_transformer(data, args, h, args.seed + i) for i in range(args.members)]
            rows |= _members_rows(members, data)
        for name, r in rows.items():
            if "train_seconds" in r:
                note = (
                    f"{r['train_seconds']:.0f} s training on {r['train_windows']} windows, "
                    f"{r['epochs_run']} epochs (best {r['best_epoch']}), {r['precision']}; "
                    f"{r['note']}"
                )
            else:
                note = r.get("note") or f"{r['seconds']:.1f} s"
            print(f"| {h} | {name} | {r['mse']:.3f} | {r['mae']:.3f} | {r['n']} | {note} |")
            cells = {"MSE": r["mse"], "MAE": r["mae"], "test windows": r["n"], "notes": note}
            run.row("ETTh1 M (7->7)", {"horizon": h, "model": name, **cells})
            sys.stdout.flush()
        results[str(h)] = rows
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2, sort_keys=True))
    run.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
