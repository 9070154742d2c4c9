"""Peak memory of a tiled photo job as the number of photos grows: 16, 64 and 200 full-size
photos, each job run as a plant engineer runs it (``mfgtx train vit`` then ``mfgtx score``),
in its own process under ``/usr/bin/time -v``.

The photos are generated once into ``--out``: ``--width x --height`` grey PNGs of a rolled
surface (streaks along x, uneven light, sensor noise), half of them with 1 to 4 pits
outlined as labelme polygons beside the photo (a 10-gon each, as an annotator draws them),
and a manifest with lots (``--per-lot`` photos a coil) and times. Each size reads the first N rows
of that manifest, so the smaller sets are subsets of the larger.

The job is ``pipelines/configs/sample_inspection.yaml``'s, with the paths changed and the
model, epochs and views set by the flags (defaults chosen so that the 200-photo job trains
and judges in minutes on 2 cores; memory does not depend on them but on the tiles and the
photos). For each size it prints the peak resident memory of training (which also judges the
model on its test photos beside HOG + logistic regression and writes the bundle) and of
scoring every photo, the wall time, and the ratio of each peak to the smallest size's.

With ``--whole`` the same photos are judged whole instead (no tiles: each photo resized to
``--image-size`` px and classified pit / good, the ViT job of a folder of inspection images),
to show that whole-image jobs, too, hold a batch and not every photo.

Usage::

    python benchmarks/tile_memory.py [--photos 16 64 200] [--out /tmp/mfgtx-tile-memory]
    python benchmarks/tile_memory.py --whole --image-size 128 --batch-size 8
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import _harness
import numpy as np
import pandas as pd
import torch
from PIL import Image, ImageDraw


def _blur(x: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Box blur of width ``k`` along ``axis`` (running sums, wrapping around)."""
    pad = [(0, 0), (0, 0)]
    pad[axis] = (k // 2 + 1, k - k // 2 - 1)
    c = np.cumsum(np.pad(x, pad, mode="wrap"), axis=axis)
    n = x.shape[axis]
    return (np.take(c, np.arange(k, k + n), axis=axis) - np.take(c, np.arange(n), axis=axis)) / k


def photo(rng: np.random.Generator, h: int, w: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """One grey photo ``(h, w)`` uint8 and its pit outlines (``(10, 2)`` x, y each)."""
    streaks = _blur(rng.normal(0.0, 1.0, (h, w)).astype(np.float32), 81, 1)
    img = 120.0 + streaks / streaks.std() * 3.5
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32) / np.array([h, w], np.float32)[:, None, None]
    img += rng.uniform(-10, 10) * (xx - 0.5) - 12.0 * ((xx - 0.5) ** 2 + (yy - 0.5) ** 2)
    pits = []
    if rng.random() < 0.5:
        mask = Image.new("L", (w, h), 0)
        for _ in range(int(rng.integers(1, 5))):
            cx, cy, r = rng.uniform(10, w - 10), rng.uniform(10, h - 10), rng.uniform(3, 7)
            a = np.arange(10) * 2 * np.pi / 10 + rng.uniform(-0.2, 0.2, 10)
            rad = r * rng.uniform(0.8, 1.15, 10)
            pts = np.stack([cx + rad * np.cos(a), cy + rad * np.sin(a)], axis=1).round(1)
            ImageDraw.Draw(mask).polygon([(int(x), int(y)) for x, y in pts], fill=1, outline=1)
            pits.append(pts)
        img -= rng.uniform(25, 60) * np.asarray(mask, dtype=np.float32)
    img += rng.normal(0.0, 1.5, (h, w)).astype(np.float32)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8), pits


def labelme(pits: list[np.ndarray], name: str, h: int, w: int) -> str:
    shapes = [
        {"label": "pit", "points": p.tolist(), "group_id": None, "description": "",
         "shape_type": "polygon", "flags": {}}
        for p in pits
    ]  # fmt: skip
    doc = {"version": "5.5.0", "flags": {}, "shapes": shapes, "imagePath": name,
           "imageData": None, "imageHeight": h, "imageWidth": w}  # fmt: skip
    return json.dumps(doc) + "\n"


def generate(out: Path, n: int, h: int, w: int, per_lot: int, seed: int = 0) -> pd.DataFrame:
    """Write (or reuse) ``n`` photos, their labelme files and ``manifest.csv`` in ``out``."""
    folder = out / "images"
    folder.mkdir(parents=True, exist_ok=True)
    start = pd.Timestamp("2026-03-01T06:00:00Z")
    rows = []
    for i in range(n):
        name = f"P{i:04d}.png"
        lot = i // per_lot
        sub = np.random.default_rng([seed, i])
        if not (folder / name).is_file():
            img, pits = photo(sub, h, w)
            (folder / name).with_suffix(".json").write_text(labelme(pits, name, h, w))
            Image.fromarray(img).save(folder / name, compress_level=1)
        pitted = bool(json.loads((folder / name).with_suffix(".json").read_text())["shapes"])
        rows.append({"path": f"images/{name}", "lot": f"C{lot:03d}",
                     "timestamp": (start + pd.Timedelta(minutes=5 * i)).isoformat(),
                     "label": "pit" if pitted else "good"})  # fmt: skip
    return pd.DataFrame(rows)


JOB = """name: tile_memory_{n}
images:
  path: {manifest}
  image_size: {image_size}
  mode: L
  rot90: true
  views: {views}
{tiling}split: {{test_size: 0.25, val_size: 0.25}}
vit: {{patch_size: 8, stem: conv, d_model: 32, n_heads: 2, n_layers: 2, d_ff: 64, dropout: 0.1,
      label_smoothing: 0.1}}
train: {{epochs: {epochs}, batch_size: {batch}, lr: 0.001, progress: "off"}}
calibration: {{cost_ratio: 5}}
bundle: {bundle}
score:
  images: {manifest}
{score_batch}  output: {{path: {scores}}}
"""


def timed(cmd: list[str], log: Path) -> tuple[float, float, int]:
    """``(peak RSS MiB, wall s, exit code)`` of ``cmd`` under ``/usr/bin/time -v``."""
    t0 = time.perf_counter()
    with log.open("w") as f:
        rc = subprocess.run(
            ["/usr/bin/time", "-v", *cmd], stdout=f, stderr=subprocess.STDOUT
        ).returncode
    wall = time.perf_counter() - t0
    found = re.search(r"Maximum resident set size \(kbytes\): (\d+)", log.read_text())
    return (int(found.group(1)) / 1024 if found else float("nan")), wall, rc


def main(argv: list[str] | None = None) -> int:
    # --out is this benchmark's working folder (photos, jobs, bundles), as the docs give it;
    # the result file goes to --results
    p = _harness.parser("tile_memory", __doc__, out_flag="--results")
    p.add_argument("--photos", type=int, nargs="+", default=[16, 64, 200])
    p.add_argument("--out", type=Path, default=Path("/tmp/mfgtx-tile-memory"))
    p.add_argument("--width", type=int, default=2900)
    p.add_argument("--height", type=int, default=1000)
    p.add_argument("--per-lot", type=int, default=4, help="photos per coil (lot)")
    p.add_argument("--stride", type=int, default=32)
    p.add_argument("--train-stride", type=int, default=32)
    p.add_argument("--image-size", type=int, default=32)
    p.add_argument("--views", type=int, default=1)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--no-score", action="store_true", help="train (and judge) only")
    p.add_argument("--whole", action="store_true", help="judge whole photos, not tiles")
    p.add_argument(
        "--batch-size", type=int, default=None,
        help="training and scoring batch (default: training 128, scoring the job default); "
        "memory follows it: with --whole, take one smaller than the smallest set's training "
        "images so that every size runs full batches",
    )  # fmt: skip
    args = p.parse_args(argv)
    record = _harness.start("tile_memory", args)
    mfgtx = [sys.executable, "-m", "mfgtx"]  # this interpreter, this mfgtx
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = generate(
        args.out / "photos", max(args.photos), args.height, args.width, args.per_lot, args.seed
    )
    cpu = _harness.cpu_model()
    cpu += f", {torch.backends.cpu.get_cpu_capability()}, torch {torch.__version__}"
    how = (
        "whole photos"
        if args.whole
        else (f"tiles 64 px stride {args.stride} (training {args.train_stride})")
    )
    tiling = (
        "  good_class: good\n"
        if args.whole
        else (
            f"  tiles: {{size: 64, stride: {args.stride}, train_stride: {args.train_stride}}}\n"
            "  masks: {format: labelme, min_defect_px: 8}\n"
        )
    )
    print(f"{'whole-image' if args.whole else 'tiled'} job, {args.width} x {args.height} px "
          f"grey photos, {how}, model input {args.image_size} px, views {args.views}, "
          f"batch {args.batch_size or 128}, {args.epochs} epoch(s); CPU: {cpu}")  # fmt: skip
    results = []
    for n in args.photos:
        run = args.out / f"n{n}"
        run.mkdir(exist_ok=True)
        listed = run / "manifest.csv"
        rows = manifest.head(n).copy()
        rows["path"] = [str((args.out / "photos" / r).resolve()) for r in rows["path"]]
        rows.to_csv(listed, index=False)
        job = run / "job.yaml"
        for old in (run / "scores.csv", run / "scores.errors.csv"):
            old.unlink(missing_ok=True)
        job.write_text(JOB.format(
            n=n, manifest=listed, image_size=args.image_size, views=args.views,
            tiling=tiling, epochs=args.epochs, batch=args.batch_size or 128,
            score_batch=f"  batch_size: {args.batch_size}\n" if args.batch_size else "",
            bundle=run / "bundle", scores=run / "scores.csv",
        ))  # fmt: skip
        train = timed([*mfgtx, "train", "vit", str(job)], run / "train.log")
        score = (float("nan"), float("nan"), 0)
        if not args.no_score and train[2] == 0:
            score = timed([*mfgtx, "score", str(job)], run / "score.log")
        results.append((n, train, score))
        print(f"{n:4d} photos: train {train[0]:7.0f} MiB {train[1]:6.0f} s (exit {train[2]}), "
              f"score {score[0]:7.0f} MiB {score[1]:6.0f} s (exit {score[2]})",
              flush=True)  # fmt: skip
        record.row(
            f"{'whole-image' if args.whole else 'tiled'} job, peak resident memory and wall time",
            {"photos": n, "train peak": train[0], "train wall": train[1], "train exit": train[2],
             "score peak": score[0], "score wall": score[1], "score exit": score[2]},
            units={"train peak": "MiB", "train wall": "s", "score peak": "MiB", "score wall": "s"},
        )  # fmt: skip
    base = results[0]
    for n, train, score in results[1:]:
        print(f"peak ratio {n} / {base[0]} photos: train {train[0] / base[1][0]:.2f}x, "
              f"score {score[0] / base[2][0]:.2f}x")  # fmt: skip
        record.note(f"peak ratio {n} / {base[0]} photos: train {train[0] / base[1][0]:.2f}x, "
                    f"score {score[0] / base[2][0]:.2f}x")  # fmt: skip
    record.write()
    return 0 if all(t[2] == 0 and s[2] == 0 for _, t, s in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
