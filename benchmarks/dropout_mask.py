"""Dropout on CPU: forward and backward of one dropout, mfgtx.nn.Dropout against torch's.

Usage::

    python benchmarks/dropout_mask.py [--shape 224 64 128] [--p 0.2] [--repeats 30] [--rounds 3]

Prints the mean time per forward-and-backward of each variant, the variants alternating in
one process, one line per round: ``torch.nn.Dropout`` (``bernoulli_`` mask), a mask from
fp32 uniforms (``torch.rand``, what ``mfgtx.nn.Dropout`` drew before) and
``mfgtx.nn.Dropout`` (16-bit uniforms read from 64-bit draws). The default shape is one
activation of the forecaster's comparison configuration (32 x 7 series, 64 patches, d_model
128).
"""

from __future__ import annotations

import sys
import time

import _harness
import torch

from mfgtx.nn import Dropout


def fp32_uniform_dropout(x: torch.Tensor, p: float) -> torch.Tensor:
    return x * torch.rand(x.shape).ge_(p).mul_(1.0 / (1.0 - p))


def main(argv: list[str] | None = None) -> int:
    ap = _harness.parser("dropout_mask", __doc__, threads=2)
    ap.add_argument("--shape", type=int, nargs="+", default=[224, 64, 128])
    ap.add_argument("--p", type=float, default=0.2)
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    run = _harness.start("dropout_mask", args)
    x = torch.randn(args.shape, requires_grad=True)
    ours = Dropout(args.p).train()
    variants = {
        "torch.nn.Dropout": lambda: torch.nn.functional.dropout(x, args.p, True),
        "fp32 uniforms": lambda: fp32_uniform_dropout(x, args.p),
        "mfgtx.nn.Dropout": lambda: ours(x),
    }

    def timed(f) -> float:
        f().sum().backward()  # warm-up
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            f().sum().backward()
        return (time.perf_counter() - t0) / args.repeats * 1e3

    print(
        f"dropout p={args.p} on {tuple(args.shape)}, forward + backward, ms "
        f"(mean of {args.repeats}), {args.threads} threads, torch {torch.__version__}"
    )
    for r in range(args.rounds):
        ms = {k: timed(f) for k, f in variants.items()}
        print(f"round {r + 1}: " + ", ".join(f"{k} {t:.1f}" for k, t in ms.items()))
        run.row("forward + backward, mean", {"round": r + 1, **ms}, units=dict.fromkeys(ms, "ms"))
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
