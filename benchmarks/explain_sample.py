"""Attention maps on sample_data's defect patches: overlap with the true regions, deletion test.

Trains the demo's defect ViT (``mfgtx train vit`` on the demo's job, lot-and-time split) unless
``--bundle`` names one, then on the test images it reports, as data-set-level sanity figures
(never as a verdict on one image):

- overlap of the attention rollout with the known defect masks, at patch resolution (a patch
  is "defect" when any of its pixels is): pointing game and AUROC of map values for defect
  patches (0.5 = chance), defect images only;
- the deletion test: masking the 10 % most-attended patches vs random 10 % (10 draws),
  change of the predicted class probability.

Attention weights are a non-causal diagnostic: high overlap says the map sits on the
defect, not that the model decided because of it; the deletion test is the check on that.

Usage::

    python benchmarks/explain_sample.py [sample_data] [--bundle DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
import tempfile
from pathlib import Path

import _harness
import numpy as np
import pandas as pd
import torch
from PIL import Image

import mfgtx
from mfgtx.explain import NOTICE, attention_maps, deletion_test, overlap_score
from mfgtx.images import ImageRecords, load_images, split_images
from mfgtx.jobs.demo import demo_configs
from mfgtx.jobs.train import train


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser(
        "explain_sample", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("folder", type=Path, nargs="?", default=Path("sample_data"))
    p.add_argument("--bundle", type=Path, help="a trained defect bundle (default: train one)")
    args = p.parse_args(argv)
    run = _harness.start("explain_sample", args)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    with tempfile.TemporaryDirectory() as tmp:
        path = args.bundle or Path(tmp) / "defects"
        if args.bundle is None:
            config = demo_configs(args.folder, tmp)["sample_defects"]
            outcome = train("vit", dataclasses.replace(config, bundle=str(path)))
            print(f"- trained the demo defect ViT: {outcome.verdict}")
        bundle = mfgtx.load(path)
    size = int(bundle.input_spec.image_size)
    records = ImageRecords.from_manifest(args.folder / "defects" / "manifest.csv")
    split = split_images(records, test_size=0.25, val_size=0.2)  # the training split
    frame = records.frame.iloc[split.test]
    manifest = pd.read_csv(args.folder / "defects" / "manifest.csv", dtype=str)
    mask_of = dict(zip(manifest["path"], manifest["mask_path"], strict=True))
    images, _, _ = load_images([records.root / q for q in frame["path"]], size)
    masks = np.stack(
        [
            np.asarray(Image.open(records.root / m).convert("L").resize((size,) * 2)) > 0
            for m in frame["path"].map(mask_of)
        ]
    )
    x = (images - 0.5) / 0.5
    maps = attention_maps(bundle.model, x)
    defect = masks.reshape(len(masks), -1).any(1)
    # scored at the maps' own resolution: a patch is "defect" if any of its pixels is
    h, w = maps.grid
    P = size // h
    masks = masks.reshape(len(masks), h, P, w, P).any(axis=(2, 4))
    rollout = maps.rollout.reshape(-1, h, w).numpy()
    last = maps.head_mean(-1).reshape(-1, h, w).numpy()
    torch.manual_seed(0)
    check = deletion_test(bundle.model, x, maps, fraction=0.1, n_random=10)
    print(
        f"\n# Attention maps on {len(frame)} sample test patches "
        f"({int(defect.sum())} with a defect)\n"
    )
    print(f"> {NOTICE}\n")
    print("| map | pointing game | AUROC vs mask | images |")
    print("|---|---:|---:|---:|")
    for name, m in (("rollout", rollout), ("last layer, heads averaged", last)):
        s = overlap_score(m[defect], masks[defect])
        print(f"| {name} | {s.pointing_game:.2f} | {s.auroc:.2f} | {s.images} |")
        cells = {"pointing game": s.pointing_game, "AUROC vs mask": s.auroc, "images": s.images}
        run.row("attention maps against the defect masks", {"map": name, **cells})
    rng = np.random.default_rng(0)
    s = overlap_score(rng.random(rollout[defect].shape), masks[defect])
    print(f"| random map (reference) | {s.pointing_game:.2f} | {s.auroc:.2f} | {s.images} |")
    cells = {"pointing game": s.pointing_game, "AUROC vs mask": s.auroc, "images": s.images}
    run.row("attention maps against the defect masks", {"map": "random map (reference)", **cells})
    print(f"\n- deletion test: {check.sentence()}")
    run.note(f"deletion test: {check.sentence()}")
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
