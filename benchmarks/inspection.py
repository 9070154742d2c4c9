"""Full-size inspection photos: tiled DefectViT vs HOG + logistic regression, per photo.

Reads ``<folder>/manifest.csv`` (``sample_data/inspection``: 16 photos of 4 coils, pitting
outlined in labelme files) exactly as ``pipelines/configs/sample_inspection.yaml`` says (its
``images``, ``vit``, ``train`` and ``calibration`` sections; ``--set`` overrides them), and
cross-validates by coil: each coil is the test coil once, the next coil in time (the first,
after the last) validates (checkpoint, temperature, cost threshold), the other coils train.
The coils of a fold are not in time order (a coil may train on a later one): the synthetic
coils are exchangeable, and the job file's own split (the last coil tested) would score 4
photos only. Both predictors see the same folds: the ViT through ``VitKind.fit`` (as the
job file says: training tiles ``train_stride`` apart, balanced draws for the rare class,
threshold chosen on the validation photos' worst tiles), HOG + logistic regression fitted on
the same training tiles with its threshold chosen on the same validation photos by the same
cost rule (``mfgtx.kinds.vit.tile_scores.baseline_scorers``), both scoring the photo's tiles
``stride`` apart and a photo by its worst tile; the ViT scores each tile as the mean over
the job's ``images.views``, HOG + LR (fitted without flips) as cut, as ``mfgtx train
vit`` reports them. With more than one view, the same trained models are also scored the
other way (the ViT on tiles as cut, HOG + LR over the views; thresholds chosen again on the
validation photos), side by side.

Printed side by side, pooled over the held-out photos of every fold (each photo scored once,
by the model that did not see its coil): average precision and ROC AUC of the photo scores,
recall and false-alarm rate at each fold's cost threshold, and the average precision over
their labelled tiles; then per fold.

With ``--external DIR`` (photos of other coils, e.g. ``python sample_data/generate.py
--out DIR --seed 1 --inspection-coils 8``: the same process, 32 new photos), the predictors
of every fold (trained, validated and thresholded as above) score every photo of ``DIR``
instead of their own test coil, and the figures pool those scores (folds x photos): the
held-out set is then larger than one coil, so average precision is not stuck at its ceiling
by a handful of pitted photos.

Usage::

    PYTHONPATH=. python benchmarks/inspection.py sample_data/inspection [--seeds 0 1 2]
        [--set train.epochs=20 ...] [--folds K1 ...] [--external DIR/inspection]
"""

from __future__ import annotations

import logging
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

import _harness
import numpy as np
import torch

from mfgtx.jobfile.config import train_config
from mfgtx.jobs import load_config
from mfgtx.kinds import (
    VIT,
    FitRequest,
    Trained,
    VitPredictor,
    baseline_scorers,
    image_threshold,
    photo_scores,
    prepare_tiles,
)
from mfgtx.metrics import detection_metrics

JOB = Path(__file__).resolve().parents[1] / "pipelines" / "configs" / "sample_inspection.yaml"


def folds(lots: list[str]) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """``(test coil, train, val, test)`` photo positions, one fold per coil."""
    lots = np.asarray(lots)
    order = list(dict.fromkeys(lots))  # coils in time order (the manifest's order)
    out = []
    for k, test_lot in enumerate(order):
        val_lot = order[(k + 1) % len(order)]
        test = np.flatnonzero(lots == test_lot)
        val = np.flatnonzero(lots == val_lot)
        train = np.flatnonzero((lots != test_lot) & (lots != val_lot))
        out.append((test_lot, train, val, test))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = _harness.parser("inspection", __doc__)
    ap.add_argument("folder", type=Path, help="e.g. sample_data/inspection")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--set", action="append", default=[], help="job-file override KEY=VALUE")
    ap.add_argument(
        "--folds", nargs="+", default=None, metavar="COIL",
        help="test only these coils (quick looks; the figure to quote is every coil)",
    )  # fmt: skip
    ap.add_argument(
        "--external", type=Path, default=None, metavar="DIR",
        help="each fold's predictors score the photos of DIR instead of their test coil",
    )  # fmt: skip
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    run = _harness.start("inspection", args)  # --threads: torch's own unless given
    config = load_config(JOB, [f"images.path={args.folder / 'manifest.csv'}", *args.set])
    images, cost = config.images, config.calibration.cost_ratio
    t0 = time.perf_counter()
    prep = prepare_tiles(images, config.split, seed=0)
    import pandas as pd

    lots = pd.read_csv(args.folder / "manifest.csv", dtype=str).set_index("path")["lot"]
    coil = [lots[k] for k in prep.keys]
    c = prep.counts
    n_def = int((prep.tiles["label"] == 1).sum())
    print(
        f"{len(prep.keys)} photos ({int(prep.image_labels.sum())} with pitting), "
        f"{len(prep.tiles)} tiles of {prep.spec.size} px stride {prep.spec.step}: {n_def} defect, "
        f"{c['ambiguous_tiles']} ambiguous; read in {time.perf_counter() - t0:.1f} s"
    )
    print(f"vit: {config.vit}")
    print(
        f"train: epochs {config.train.epochs}, batch {config.train.batch_size}, "
        f"lr {config.train.lr}"
    )
    pooled: dict[str, dict[str, list]] = {}
    per_fold = []
    external = None
    if args.external is not None:
        ext_images = replace(images, path=str(args.external / "manifest.csv"))
        external = prepare_tiles(ext_images, config.split, seed=0)
        print(
            f"external: {len(external.keys)} photos ({int(external.image_labels.sum())} with "
            f"pitting) from {args.external}"
        )
    for seed in args.seeds:
        for test_lot, train, val, test in folds(coil):
            if args.folds is not None and test_lot not in args.folds:
                continue
            fold = replace(prep, train=train, val=val, test=test)
            tc = replace(train_config(config.train, None), seed=seed, progress="off")
            t1 = time.perf_counter()
            fitted = VIT.fit(fold, images, FitRequest(config.vit, config.split, tc, cost))
            vit = VitPredictor(VIT, Trained(fitted.model, fitted.calibration), fitted.spec)
            cal = fitted.calibration
            thr = 0.5 if cal is None or cal.threshold is None else cal.threshold.threshold
            views = fitted.spec.views
            scorers = {"DefectViT": (vit.tile_p, thr), **baseline_scorers(fold, cost_ratio=cost)}
            if views > 1:  # the same models the other way: each tile as cut, or over views
                one = VitPredictor(VIT, vit.bundle, replace(fitted.spec, views=1))
                hog, _ = baseline_scorers(fold, cost_ratio=cost, views=views)[
                    "HOG + logistic regression"
                ]
                for name, p_of in (
                    ("DefectViT, one view", one.tile_p),
                    (f"HOG + LR, {views} views", hog),
                ):
                    val_s = photo_scores(fold, val, p_of)
                    choice, _ = image_threshold(val_s.image, fold.image_labels[val], cost)
                    scorers[name] = (p_of, 0.5 if choice is None else choice.threshold)
            judged, on = (
                (fold, test) if external is None else (external, np.arange(len(external.keys)))
            )
            y = judged.image_labels[on]
            row = {"seed": seed, "test coil": test_lot, "seconds": time.perf_counter() - t1}
            for name, (p_of, t) in scorers.items():
                s = photo_scores(judged, on, p_of)
                acc = pooled.setdefault(
                    f"{name}|{seed}", {"y": [], "p": [], "flag": [], "tile_y": [], "tile_p": []}
                )
                acc["y"] += y.tolist()
                acc["p"] += s.image.tolist()
                acc["flag"] += (s.image > t).astype(int).tolist()
                tile_y = judged.tiles["label"].to_numpy()[s.rows]
                acc["tile_y"] += tile_y[tile_y >= 0].tolist()
                acc["tile_p"] += s.tile[tile_y >= 0].tolist()
                row[name] = (s.image, t)
            per_fold.append((row, y))
            print(
                f"seed {seed} fold {test_lot}: trained in {row['seconds']:.0f} s "
                f"({len(fitted.fit.history)} epochs, best {fitted.fit.best_epoch}, "
                f"{len(fold.training_tiles())} training tiles), threshold on "
                f"{fitted.split.get('threshold_chosen_on')}"
            )
            sys.stdout.flush()
    print(
        "\nPooled over the held-out photos of every fold (each photo once per seed):"
        if external is None
        else "\nPooled over every fold's scores of the external photos (each photo once per "
        "fold and seed):"
    )
    print(
        f"{'predictor':32s} {'seed':>4s} {'AP':>6s} {'ROC AUC':>8s} {'recall':>7s} "
        f"{'false alarms':>13s}   {'tile AP':>7s}"
    )
    summary: dict[str, list[float]] = {}
    for key, acc in pooled.items():
        name, seed = key.split("|")
        y, p, flag = (np.asarray(acc[k]) for k in ("y", "p", "flag"))
        m = detection_metrics(y, p, 0.5, reasons=[])
        recall = float(flag[y == 1].mean())
        fa = float(flag[y == 0].mean())
        summary.setdefault(name, []).append(m["average_precision"])
        tile = detection_metrics(np.asarray(acc["tile_y"]), np.asarray(acc["tile_p"]), 0.5,
                                 reasons=[])  # fmt: skip
        print(
            f"{name:32s} {seed:>4s} {m['average_precision']:6.3f} {m['roc_auc']:8.3f} "
            f"{recall:7.3f} {fa:7.3f} ({int(flag[y == 0].sum())}/{int((y == 0).sum())})"
            f"   {tile['average_precision']:7.3f}"
        )
        run.row(
            "pooled over the held-out photos" if external is None else "external photos",
            {"predictor": name, "seed": int(seed), "AP": m["average_precision"],
             "ROC AUC": m["roc_auc"], "recall": recall, "false alarms": fa,
             "tile AP": tile["average_precision"]},
        )  # fmt: skip
    if len(args.seeds) > 1:
        print("\nMedian AP over seeds: " + ", ".join(
            f"{n} {statistics.median(v):.3f}" for n, v in summary.items()))  # fmt: skip
    print("\nPer fold (photo scores: ViT | HOG + LR; * = flagged at that fold's threshold):")
    for row, y in per_fold:
        vit_p, vit_t = row["DefectViT"]
        hog_p, hog_t = row["HOG + logistic regression"]
        cells = [
            f"{'D' if yi else 'g'} {a:.2f}{'*' if a > vit_t else ' '}|"
            f"{b:.2f}{'*' if b > hog_t else ' '}"
            for yi, a, b in zip(y, vit_p, hog_p, strict=True)
        ]
        print(f"  seed {row['seed']} coil {row['test coil']}: " + "  ".join(cells))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; torch threads {torch.get_num_threads()}, "
          f"CPU capability {torch.backends.cpu.get_cpu_capability()}")  # fmt: skip
    run.write()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
