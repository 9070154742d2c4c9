"""Training-step time of DefectViT against timm's ``vit_tiny_patch16_224``, in one process.

Both models get the comparison configuration: 224 x 224 grey images (``in_chans=1``), patch
16, 6 classes, d_model 192, 3 heads, 12 layers, d_ff 768, batch 32, no dropout or drop-path,
AdamW. A step is ``forward + cross-entropy + backward + AdamW step`` on a fixed random batch.
Each model is timed in fp32 and in bf16 autocast; the rounds alternate between the four
(model, precision) pairs so that load from other processes hits all of them alike. The
figure of merit compares each model in its fastest precision.

timm is a benchmark-only dependency (never a runtime dependency of mfgtx).

Usage::

    PYTHONPATH=. python benchmarks/vit_speed.py [--steps 3] [--warmup 1] [--batch 32] \\
        [--precisions fp32,bf16]
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import time

import _harness
import torch
import torch.nn.functional as F
from torch import nn

from mfgtx.models import DefectViT, ViTConfig
from mfgtx.train import cpu_has_fast_bf16

CONFIG = ViTConfig(
    image_size=224,
    patch_size=16,
    in_chans=1,
    num_classes=6,
    d_model=192,
    n_heads=3,
    n_layers=12,
    d_ff=768,
    dropout=0.0,
    stem="linear",
)


def build(name: str) -> nn.Module:
    torch.manual_seed(0)
    if name == "mfgtx":
        return DefectViT(CONFIG).train()
    import timm

    return timm.create_model("vit_tiny_patch16_224", pretrained=False, in_chans=1, num_classes=6)


def step(
    model: nn.Module, opt: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor, bf16: bool
) -> float:
    t0 = time.perf_counter()
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext()
    with ctx:
        logits = model(x)
    loss = F.cross_entropy(logits.float(), y)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("vit_speed", __doc__)
    p.add_argument("--steps", type=int, default=3, help="timed steps per (model, precision)")
    p.add_argument("--warmup", type=int, default=1, help="untimed steps per pair")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument(
        "--precisions",
        default="fp32,bf16",
        help="comma-separated; on an AVX2-only CPU a bf16 step takes minutes, so "
        "--precisions fp32 --bf16-probe gives one bf16 step per model instead",
    )
    p.add_argument(
        "--bf16-probe",
        action="store_true",
        help="after the rounds, time ONE bf16 step per model (no warm-up): enough to see "
        "whether bf16 could be the faster precision here",
    )
    args = p.parse_args(argv)
    run = _harness.start("vit_speed", args)

    g = torch.Generator().manual_seed(0)
    x = torch.randn(args.batch, 1, 224, 224, generator=g)
    y = torch.randint(0, 6, (args.batch,), generator=g)
    pairs = [(m, prec) for m in ("mfgtx", "timm") for prec in args.precisions.split(",")]
    models = {m: build(m) for m in ("mfgtx", "timm")}
    opts = {m: torch.optim.AdamW(models[m].parameters(), lr=1e-4) for m in models}
    times: dict[tuple[str, str], list[float]] = {pair: [] for pair in pairs}
    for r in range(args.warmup + args.steps):
        for m, prec in pairs:
            t = step(models[m], opts[m], x, y, prec == "bf16")
            if r >= args.warmup:
                times[(m, prec)].append(t)
            kind = "warm-up" if r < args.warmup else "timed"
            print(f"  round {r} ({kind}) {m} {prec}: {t:.3f} s", flush=True)

    probe = {}
    if args.bf16_probe:
        for m in models:
            probe[m] = step(models[m], opts[m], x, y, bf16=True)
            print(f"  bf16 probe (one step, no warm-up) {m}: {probe[m]:.3f} s", flush=True)

    import timm

    print("# DefectViT vs timm vit_tiny_patch16_224: training step (CPU)\n")
    print(
        f"- torch {torch.__version__}, timm {timm.__version__}, {torch.get_num_threads()} "
        f"threads, fast bf16 hardware (AMX/AVX512-BF16): {cpu_has_fast_bf16()}"
    )
    params = {m: sum(q.numel() for q in models[m].parameters()) for m in models}
    print(
        f"- batch {args.batch} x 1 x 224 x 224, 6 classes; parameters mfgtx {params['mfgtx']:,}, "
        f"timm {params['timm']:,}; median of {args.steps} steps after {args.warmup} warm-up\n"
    )
    print("| model | precision | median step s | min step s |")
    print("|---|---|---:|---:|")
    units = {"median step": "s", "min step": "s"}
    for (m, prec), ts in times.items():
        print(f"| {m} | {prec} | {statistics.median(ts):.3f} | {min(ts):.3f} |")
        cells = {"model": m, "precision": prec, "median step": statistics.median(ts)}
        run.row("training step", {**cells, "min step": min(ts)}, units=units)
    for m, t in probe.items():
        print(f"| {m} | bf16 (one step, no warm-up) | {t:.3f} | {t:.3f} |")
        cells = {"model": m, "precision": "bf16 (one step, no warm-up)", "median step": t}
        run.row("training step", {**cells, "min step": t}, units=units)
    best = {
        m: min((statistics.median(times[(m, pr)]), pr) for mm, pr in pairs if mm == m)
        for m in models
    }
    ratio = best["mfgtx"][0] / best["timm"][0]
    print(
        f"\nfastest: mfgtx {best['mfgtx'][0]:.3f} s ({best['mfgtx'][1]}), timm "
        f"{best['timm'][0]:.3f} s ({best['timm'][1]}); mfgtx / timm = {ratio:.2f} "
        "(target <= 0.50)"
    )
    run.note(f"fastest precision of each: mfgtx / timm = {ratio:.2f} (target <= 0.50)")
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
