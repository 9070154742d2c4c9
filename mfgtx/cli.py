"""The ``mfgtx`` command line.

This module is the presentation layer of the command: it is the one place in the package
that writes to stdout (through :func:`_emit`); the library itself only logs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import mfgtx

__all__ = ["main"]

log = logging.getLogger(__name__)


def _emit(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _demo(args: argparse.Namespace) -> int:
    """Build a tiny sensor-window encoder and a tiny causal model and show what they do."""
    import torch

    from mfgtx.nn import CausalLM, Encoder, TransformerConfig, generate

    torch.manual_seed(args.seed)
    _emit(f"mfgtx {mfgtx.__version__} demo (torch {torch.__version__}, device cpu)")

    # 1. a sensor window: 4 lots, 32 time steps, 6 sensors; one lot has 8 missing steps
    B, T, C = 4, 32, 6
    cfg = TransformerConfig(d_model=32, n_heads=4, n_layers=2, d_ff=64, dropout=0.0)
    embed = torch.nn.Linear(C, cfg.d_model)
    encoder = Encoder(cfg).eval()
    windows = torch.randn(B, T, C)
    observed = torch.ones(B, T, dtype=torch.bool)
    observed[2, -8:] = False
    with torch.no_grad():
        out = encoder(embed(windows), key_mask=observed, need_weights=True)
    pooled = out.output.mean(dim=1)
    _emit(f"encoder: windows {tuple(windows.shape)} -> tokens {tuple(out.output.shape)}")
    _emit(f"  attention weights: {len(out.weights)} layers x {tuple(out.weights[0].shape)}")
    _emit(f"  pooled features of lot 0: {[round(v, 3) for v in pooled[0, :6].tolist()]} ...")
    masked = float(out.weights[-1][2, :, :, -8:].sum())
    _emit(f"  attention on lot 2's missing steps: {masked:.1f} (masked out)")

    # 2. a causal model decoding 16 tokens with and without the KV cache
    lm = CausalLM(16, TransformerConfig(d_model=32, n_heads=4, n_layers=2, d_ff=64)).eval()
    prompt = torch.randint(0, 16, (1, 4))
    cached = generate(lm, prompt, 16)
    full = generate(lm, prompt, 16, use_cache=False)
    _emit(f"generate: prompt {prompt[0].tolist()} -> {cached[0, 4:].tolist()}")
    _emit(f"  cached decoding equals full recomputation: {bool(torch.equal(cached, full))}")
    return 0


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mfgtx",
        description="Manufacturing analytics on Transformer models.",
    )
    parser.add_argument("--version", action="version", version=f"mfgtx {mfgtx.__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = sub.add_parser("demo", help="build a tiny model and show its output")
    demo.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    demo.set_defaults(func=_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``mfgtx`` console script; returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.command is None:
        parser.print_help()
        return 0
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
