"""X-SDD (hot-rolled steel strip, 7 defect classes, 1,360 images): DefectViT vs HOG + boosting.

The images are read from ``X-SDD.zip`` in memory (never extracted or copied). The split is a
fixed-seed stratified 80/20 split in which byte-identical files (X-SDD has nine duplicate
pairs) always share one set; the ViT trains on part of the 80 % and chooses its checkpoint on
the rest (a validation part of the training set, stratified, duplicates kept together), never
on the test set. The baseline is fitted on the whole 80 %: histogram-of-oriented-gradient
features (``mfgtx.baselines.hog_features``: numpy, no scikit-image) and scikit-learn's
HistGradientBoostingClassifier. Both are scored on the same 20 %: accuracy, macro-F1 and the
per-class confusion matrix.

Per seed, the ViT trains from scratch for ``--epochs`` epochs, fewer if the ``--minutes``
budget would be exceeded: a throw-away copy of the model times a few training steps in each
precision ``--precision`` allows (fp32, and bf16 where the CPU has fast bf16), eagerly and,
with ``--compile auto`` or ``on``, through ``torch.compile`` (its compile time is charged to
the budget); the fastest way is then passed to :func:`mfgtx.train.fit` by name, and the
epochs are fitted to the budget (the learning-rate schedule spans the epochs actually run).
The budget is also passed to ``fit`` as ``max_minutes``: where the machine runs slower than
the probe said, no epoch starts that would end past it.
The split stays fixed across seeds (``--split-seed``); the seed changes initialisation,
shuffling and augmentation.
Each seed is also scored with flip averaging (the mean softmax of a test image and its three
flips), printed as its own row; the per-seed mean is of the plain predictions.

With ``--peers vit_tiny resnet18`` (benchmark venv: timm), the models a plant engineer would
train instead run beside DefectViT on the same split, the same augmented images, the same
loss (class weights, label smoothing 0.1), the same time budget fitted the same way and the
same loop (:func:`mfgtx.train.fit`: AdamW, warmup and cosine, checkpoint chosen on the
validation loss): timm's ``vit_tiny_patch16_224`` (DeiT-Tiny, at ``--image-size``, drop path
0.1, weight decay 0.05 as in DeiT's recipe) and timm's ``resnet18`` (channels-last, weight
decay 0.05 as in the AdamW recipes of timm's ResNet training), both from scratch. Only the
model differs between the rows.

Usage::

    PYTHONPATH=. python benchmarks/xsdd_vit.py [--zip PATH] [--seeds 0 1 2] [--epochs 60]
        [--minutes 20] [--quick] [--baseline-only] [--no-baseline]
        [--peers vit_tiny resnet18] [--no-defectvit]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import _harness
import numpy as np
import torch
from sklearn.ensemble import HistGradientBoostingClassifier
from threadpoolctl import threadpool_limits

from mfgtx.baselines import hog_features
from mfgtx.images import ImageDataset, ImageRecords, SurfaceAugment, load_images, split_images
from mfgtx.metrics import accuracy, f1
from mfgtx.models import ClassLoss, DefectViT, ViTConfig
from mfgtx.train import TrainConfig, cpu_has_fast_bf16, fit, keep_freed_memory, predict

DEFAULT_ZIP = (
    Path(
        os.environ.get(
            "MFGTX_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"
        )
    )
    / "xsdd"
    / "X-SDD.zip"
)


# ---------------------------------------------------------------------- HOG baseline


def run_baseline(
    grey: np.ndarray, y: np.ndarray, train: np.ndarray, test: np.ndarray
) -> np.ndarray:
    t0 = time.perf_counter()
    feats = hog_features(grey)
    print(f"- HOG: {feats.shape[1]} features in {time.perf_counter() - t0:.0f} s", flush=True)
    t0 = time.perf_counter()
    clf = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.1, early_stopping=False, random_state=0
    )
    # One OpenMP thread: on a shared 2-core machine the per-node parallel regions of the
    # histogram builder spend most of their time in barrier waits (measured: > 35 min).
    with threadpool_limits(1, user_api="openmp"):
        clf.fit(feats[train], y[train])
        proba = clf.predict_proba(feats[test])
    print(f"- gradient boosting fitted and scored in {time.perf_counter() - t0:.0f} s", flush=True)
    return proba


# ---------------------------------------------------------------------- report


def confusion(y: np.ndarray, pred: np.ndarray, k: int) -> np.ndarray:
    m = np.zeros((k, k), dtype=int)
    np.add.at(m, (y, pred), 1)
    return m


def print_confusion(title: str, y: np.ndarray, proba: np.ndarray, names: tuple[str, ...]) -> None:
    m = confusion(y, proba.argmax(1), len(names))
    print(f"\n{title} (rows: true class, columns: predicted)\n")
    print("| true \\ predicted | " + " | ".join(f"{i}" for i in range(len(names))) + " | recall |")
    print("|---|" + "---:|" * (len(names) + 1))
    for i, name in enumerate(names):
        recall = m[i, i] / max(m[i].sum(), 1)
        print(f"| {i} {name} | " + " | ".join(str(v) for v in m[i]) + f" | {recall:.2f} |")


# ---------------------------------------------------------------------- ViT


def vit_config(args: argparse.Namespace) -> ViTConfig:
    """The benchmark model: conv stem, mean pooling, 2-D sine-cosine positions, RGB input."""
    common = dict(in_chans=3, num_classes=7, n_heads=3, dropout=0.0, stem="conv", pooling="mean",
                  positional="sinusoidal")  # fmt: skip
    if args.quick:
        return ViTConfig(image_size=64, patch_size=8, d_model=96, n_layers=4, d_ff=192,
                         drop_path=0.05, **common)  # fmt: skip
    return ViTConfig(image_size=args.image_size, patch_size=16, d_model=192, n_layers=9,
                     d_ff=384, drop_path=0.1, **common)  # fmt: skip


class Peer(torch.nn.Module):
    """A timm classifier with DefectViT's training protocol: the same loss on the same batches."""

    def __init__(self, net: torch.nn.Module, weights: tuple[float, ...], channels_last: bool):
        super().__init__()
        self.net = net.to(memory_format=torch.channels_last) if channels_last else net
        self.channels_last = channels_last
        self.register_buffer("class_weights", torch.tensor(weights, dtype=torch.float32))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.channels_last:
            images = images.contiguous(memory_format=torch.channels_last)
        return self.net(images)

    def predict(self, batch: dict) -> torch.Tensor:
        return self(batch["images"])

    def loss(self, batch: dict) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(
            self(batch["images"]).float(), batch["y"].long().view(-1),
            weight=self.class_weights, label_smoothing=0.1,
        )  # fmt: skip


def build_model(name: str, args: argparse.Namespace, weights: tuple[float, ...]) -> torch.nn.Module:
    if name == "DefectViT":
        loss = ClassLoss(class_weights=weights, label_smoothing=0.1)
        return DefectViT(vit_config(args), loss=loss)
    import timm  # benchmark venv only

    size = 64 if args.quick else args.image_size
    if name == "vit_tiny":
        net = timm.create_model("vit_tiny_patch16_224", pretrained=False, num_classes=7,
                                img_size=size, patch_size=8 if args.quick else 16,
                                drop_path_rate=0.1)  # fmt: skip
        return Peer(net, weights, channels_last=False)
    if name == "resnet18":
        net = timm.create_model("resnet18", pretrained=False, num_classes=7)
        return Peer(net, weights, channels_last=True)
    raise ValueError(f"unknown model {name!r}; choose DefectViT, vit_tiny or resnet18")


def run_model(
    name: str,
    seed: int,
    args: argparse.Namespace,
    data: dict[str, ImageDataset],
    weights: tuple[float, ...],
) -> tuple[np.ndarray, dict[str, float]]:
    torch.manual_seed(seed)
    model = build_model(name, args, weights)
    n_params = sum(p.numel() for p in model.parameters())
    way = probe_steps(name, args, data, weights)
    base = dict(batch_size=args.batch, lr=args.lr, weight_decay=0.05, warmup_fraction=0.05,
                patience=None, seed=seed, precision=way["precision"],
                compile="on" if way["compiled"] else "off", ema_decay=args.ema,
                progress="off")  # fmt: skip
    epoch_s = way["epoch_s"]
    # 5 % of the budget for the machine's run-to-run spread; compiling the real model costs
    # what compiling the probe did
    budget = args.minutes * 60 * 0.95 - way["compile_s"]
    epochs = max(1, min(args.epochs, math.floor(budget / epoch_s)))
    t0 = time.perf_counter()
    # the budget is also a hard limit: a machine slower than the probe ends training on time
    config = TrainConfig(epochs=epochs, max_minutes=args.minutes, **base)
    result = fit(model, data["train"], data["val"], config)
    minutes = (time.perf_counter() - t0) / 60
    proba = torch.softmax(predict(model, data["test"]), -1).numpy()
    # flip averaging: both flips are training augmentations, so each flipped view is in
    # distribution; the mean of the four softmax outputs is reported beside the plain one
    test = data["test"]
    views = [
        torch.softmax(predict(model, ImageDataset(test.images.flip(dims), test.y)), -1)
        for dims in ((-1,), (-2,), (-2, -1))
    ]
    proba_flips = ((torch.from_numpy(proba) + sum(views)) / 4).numpy()
    info = {"params": n_params, "epochs": epochs, "ran": len(result.history),
            "best_epoch": result.best_epoch,
            "minutes": minutes, "epoch_s": epoch_s, "proba_flips": proba_flips,
            "way": f"{result.precision}{', compiled' if result.compiled else ''}"}  # fmt: skip
    return proba, info


def probe_steps(
    name: str, args: argparse.Namespace, data: dict[str, ImageDataset], weights: tuple
) -> dict:
    """The fastest way to train ``name`` here: precision, eager or compiled, seconds per
    epoch and the compile time, timed on a throw-away copy of the model: 6 training steps on
    batches drawn (and augmented) as fit draws them, the median of the last 4 (the first
    call's excess is the compile time), times the steps of an epoch, plus one validation
    pass."""
    loader = torch.utils.data.DataLoader(data["train"], batch_size=args.batch, shuffle=True)
    n_steps = len(loader)
    precisions = ["fp32", "bf16"] if cpu_has_fast_bf16() else ["fp32"]
    if args.precision != "auto":
        precisions = [args.precision]
    ways = []
    for precision in precisions:
        for compiled in [False, True] if args.compile != "off" else [False]:
            if args.compile == "on" and not compiled:
                continue
            torch.manual_seed(0)
            probe = build_model(name, args, weights).train()
            opt = torch.optim.AdamW(probe.parameters(), lr=args.lr, fused=True)
            loss_of = torch.compile(probe.loss, dynamic=False) if compiled else probe.loss
            cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
            step_s = []
            with keep_freed_memory():  # as fit trains
                batches = iter(loader)
                for _ in range(6):
                    t0 = time.perf_counter()
                    batch = next(batches)
                    with cast:
                        loss = loss_of(batch)
                    opt.zero_grad()
                    loss.backward()
                    opt.step()
                    step_s.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                with cast:
                    predict(probe, data["val"], batch_size=args.batch)
                val_s = time.perf_counter() - t0
            step = statistics.median(step_s[2:])
            ways.append({"precision": precision, "compiled": compiled,
                         "epoch_s": step * n_steps + val_s,
                         "compile_s": max(0.0, step_s[0] - step) if compiled else 0.0})  # fmt: skip
            print(f"  probe {name} {precision}{' compiled' if compiled else ''}: {step:.3f} s a "
                  f"step with its batch (first {step_s[0]:.1f} s), validation {val_s:.1f} s",
                  flush=True)  # fmt: skip
    return min(ways, key=lambda w: w["epoch_s"] * args.epochs + w["compile_s"])


def main(argv: list[str] | None = None) -> int:
    # --threads (shared): 1 avoids OpenMP barrier stalls when other jobs share the cores
    p = _harness.parser("xsdd_vit", __doc__)
    p.add_argument("--zip", type=Path, default=DEFAULT_ZIP)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--split-seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=60, help="most epochs per seed")
    p.add_argument("--minutes", type=float, default=20.0, help="training budget per seed")
    p.add_argument("--image-size", type=int, default=128)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument(
        "--precision",
        choices=["auto", "fp32", "bf16"],
        default="auto",
        help="auto: the faster of fp32 and (where the CPU has fast bf16) bf16",
    )
    p.add_argument(
        "--ema",
        type=float,
        default=None,
        help="train every model with TrainConfig(ema_decay=EMA): the moving average of its "
        "weights is validated and kept",
    )
    p.add_argument(
        "--compile",
        choices=["auto", "on", "off"],
        default="auto",
        help="auto: compiled where that is faster over the run, compile time counted",
    )
    p.add_argument("--quick", action="store_true", help="small ViT at 64 px (a smoke run)")
    p.add_argument("--baseline-only", action="store_true")
    p.add_argument("--no-baseline", action="store_true")
    p.add_argument(
        "--peers",
        nargs="*",
        default=[],
        choices=["vit_tiny", "resnet18"],
        help="timm models trained beside DefectViT from scratch (benchmark venv)",
    )
    p.add_argument("--no-defectvit", action="store_true", help="train only the --peers")
    args = p.parse_args(argv)
    run = _harness.start("xsdd_vit", args)
    if not args.zip.is_file():
        print(f"X-SDD not found at {args.zip}; pass --zip", file=sys.stderr)
        return 2

    records = ImageRecords.from_folder(args.zip, subdir="X-SDD/datas")
    names = records.class_names
    y = records.labels
    split = split_images(records, test_size=0.2, val_size=0.1, seed=args.split_seed)
    trainval = np.sort(np.concatenate([split.train, split.val]))
    print(
        "# X-SDD: DefectViT vs HOG + gradient boosting"
        + "".join(f" vs {m}" for m in args.peers)
        + "\n"
    )
    print(f"- {len(records)} images, {len(names)} classes, read from {args.zip.name} in memory")
    print(
        f"- split seed {args.split_seed}: test {len(split.test)} (20 %), training {len(trainval)} "
        f"(ViT: {len(split.train)} train + {len(split.val)} validation); duplicates kept together"
    )
    print(f"- classes: {', '.join(f'{i} {n}' for i, n in enumerate(names))}")
    print(f"- torch {torch.__version__}, {torch.get_num_threads()} threads\n")

    sources = records.read_bytes()
    results: dict[str, tuple[float, float]] = {}
    if not args.no_baseline:
        grey, idx, errors = load_images(sources, 128, mode="L")
        assert not errors and idx == list(range(len(records)))
        proba = run_baseline(grey[:, 0].numpy(), y, trainval, split.test)
        results["HOG + boosting"] = (accuracy(y[split.test], proba), f1(y[split.test], proba))
        print_confusion("HOG + boosting", y[split.test], proba, names)
    if not args.baseline_only:
        size = 64 if args.quick else args.image_size
        rgb, idx, errors = load_images(sources, size, mode="RGB")
        assert not errors
        from mfgtx.images import class_weights

        weights = class_weights(y[split.train], len(names))
        data = {
            "train": ImageDataset(rgb[split.train], y[split.train], augment=SurfaceAugment()),
            "val": ImageDataset(rgb[split.val], y[split.val]),
            "test": ImageDataset(rgb[split.test], y[split.test]),
        }
        models = ([] if args.no_defectvit else ["DefectViT"]) + list(args.peers)
        for name in models:
            accs, took = [], []
            for seed in args.seeds:
                proba, info = run_model(name, seed, args, data, weights)
                acc, mf1 = accuracy(y[split.test], proba), f1(y[split.test], proba)
                accs.append(acc)
                took.append(info["minutes"])
                results[f"{name} seed {seed}"] = (acc, mf1)
                print(
                    f"\n- {name} seed {seed} ({info['way']}): {info['params']:,} parameters, "
                    f"{info['ran']} of {info['epochs']} planned "
                    f"epochs (estimated {info['epoch_s']:.0f} s per epoch), best validation "
                    f"epoch {info['best_epoch']}, {info['minutes']:.1f} min training; "
                    f"test accuracy {acc:.4f}, macro-F1 {mf1:.4f}",
                    flush=True,
                )
                print_confusion(f"{name} seed {seed}", y[split.test], proba, names)
                pf = info["proba_flips"]
                results[f"{name} seed {seed}, flip-averaged"] = (
                    accuracy(y[split.test], pf),
                    f1(y[split.test], pf),
                )
            if accs:
                results[f"{name} mean over seeds ({statistics.mean(took):.1f} min each)"] = (
                    statistics.mean(accs),
                    float("nan"),
                )
    print("\n| model | test accuracy | macro-F1 |\n|---|---:|---:|")
    for name, (acc, mf1) in results.items():
        print(f"| {name} | {acc:.4f} | {'' if math.isnan(mf1) else f'{mf1:.4f}'} |")
        run.row("X-SDD test set", {"model": name, "test accuracy": acc, "macro-F1": mf1})
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
