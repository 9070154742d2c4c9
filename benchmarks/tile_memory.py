"""Memory and speed of cutting full-size photos into tiles: batches vs all tiles at once.

Writes ``--photos`` synthetic 1130 x 460 grey PNGs (noise, so they do not compress to nothing)
into a temporary folder, then, side by side in one process and interleaved over ``--repeats``
rounds, measures:

- ``iter_tiles``: one photo at a time, batches of ``--batch`` tiles, each batch dropped after use;
- ``all at once``: every photo read and every tile cut (``cut_tiles``) and kept, as a script
  that builds one big tile array would.

Peak memory is what ``tracemalloc`` sees allocated by Python and numpy (decoded photos and tile
arrays; Pillow's own C buffers are not counted), medians over the rounds.

Usage::

    python benchmarks/tile_memory.py [--photos 40] [--stride 32] [--batch 256] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
from PIL import Image

from mfgtx.images import TileSpec, cut_tiles, iter_tiles, read_image


def batched(paths: list[Path], spec: TileSpec, batch: int) -> int:
    n = 0
    for b in iter_tiles(paths, spec, batch_size=batch):
        n += len(b)  # a consumer would score the batch here and drop it
    return n


def all_at_once(paths: list[Path], spec: TileSpec) -> int:
    tiles = [cut_tiles(read_image(p), spec)[0] for p in paths]
    return int(sum(len(t) for t in tiles))


def measure(fn, *args) -> tuple[float, float, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    n = fn(*args)
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak / 2**20, seconds, n


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--photos", type=int, default=40)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--stride", type=int, default=32)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    spec = TileSpec(args.size, args.stride)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as folder:
        paths = []
        for i in range(args.photos):
            paths.append(Path(folder) / f"{i:03d}.png")
            Image.fromarray(rng.integers(0, 256, (460, 1130), dtype=np.uint8)).save(paths[-1])
        results: dict[str, list[tuple[float, float, int]]] = {"iter_tiles": [], "all at once": []}
        for _ in range(args.repeats):
            results["iter_tiles"].append(measure(batched, paths, spec, args.batch))
            results["all at once"].append(measure(all_at_once, paths, spec))
    per_photo = spec.count(460, 1130)
    print(
        f"{args.photos} photos of 1130 x 460, tiles {args.size} px stride {spec.step} "
        f"({per_photo} per photo), batch {args.batch}, median of {args.repeats}"
    )
    peaks = {}
    for name, rows in results.items():
        peak = statistics.median(r[0] for r in rows)
        seconds = statistics.median(r[1] for r in rows)
        tiles = rows[0][2]
        peaks[name] = peak
        print(f"{name:12s} peak {peak:8.1f} MiB  {seconds:6.2f} s  {tiles / seconds:9.0f} tiles/s")
    print(f"peak ratio all-at-once / iter_tiles: {peaks['all at once'] / peaks['iter_tiles']:.1f}")


if __name__ == "__main__":
    main()
