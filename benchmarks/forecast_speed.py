"""Speed of CausalForecaster: training steps against Hugging Face PatchTST, cached generation.

1. Training-step time (forward, backward, AdamW step) at the comparison configuration
   (7 channels, context 512, horizon 96, patch 16, stride 8, d_model 128, 16 heads, 3 layers,
   d_ff 256, dropout 0.2), against ``transformers.PatchTSTForPrediction`` with the same sizes,
   measured side by side in one process, alternating, same batch, same thread count.
2. ``generate`` for 64 patches with the KV cache against recomputing the whole sequence at
   every step, and the largest difference between the two outputs.

Needs ``transformers`` (benchmark environment only; never a runtime dependency)::

    PYTHONPATH=. nice -n 15 /work/main/.venv-bench/bin/python benchmarks/forecast_speed.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import _harness
import torch

from mfgtx.models import CausalForecaster, ForecasterConfig

SIZES = dict(context_length=512, horizon=96, patch_len=16, stride=8, d_model=128, n_heads=16,
             n_layers=3, d_ff=256, dropout=0.2, quantiles=())  # fmt: skip


def patchtst(n_channels: int):
    from transformers import PatchTSTConfig, PatchTSTForPrediction

    cfg = PatchTSTConfig(
        num_input_channels=n_channels,
        context_length=SIZES["context_length"],
        prediction_length=SIZES["horizon"],
        patch_length=SIZES["patch_len"],
        patch_stride=SIZES["stride"],
        d_model=SIZES["d_model"],
        num_attention_heads=SIZES["n_heads"],
        num_hidden_layers=SIZES["n_layers"],
        ffn_dim=SIZES["d_ff"],
        path_dropout=0.2,
        ff_dropout=0.2,
        positional_dropout=0.2,
        head_dropout=0.2,
        attention_dropout=0.0,
        scaling="std",
        pooling_type=None,  # PatchTST's flatten head over all patches, like ours
        loss="mse",
    )
    return PatchTSTForPrediction(cfg)


def _timed(step, repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        step()
        out.append(time.perf_counter() - t0)
    return out


def train_steps(args: argparse.Namespace, precision: str, run: _harness.Run) -> None:
    C, B = 7, args.batch_size
    x = torch.randn(B, SIZES["context_length"], C)
    y = torch.randn(B, SIZES["horizon"], C)
    ours = CausalForecaster(ForecasterConfig(n_channels=C, head_dropout=0.2, **SIZES)).train()
    theirs = patchtst(C).train()
    opt_ours = torch.optim.AdamW(ours.parameters(), lr=1e-4)
    opt_theirs = torch.optim.AdamW(theirs.parameters(), lr=1e-4)
    batch = {"x": x, "y": y}

    def autocast():
        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")

    def step_ours() -> None:
        opt_ours.zero_grad(set_to_none=True)
        with autocast():
            loss = ours.loss(batch)
        loss.backward()
        opt_ours.step()

    def step_theirs() -> None:
        opt_theirs.zero_grad(set_to_none=True)
        with autocast():
            loss = theirs(past_values=x, future_values=y).loss
        loss.backward()
        opt_theirs.step()

    for step in (step_ours, step_theirs):  # warm-up
        _timed(step, 2)
    t_ours, t_theirs = [], []
    for _ in range(args.rounds):  # alternate, so that machine load hits both alike
        t_ours += _timed(step_ours, args.repeats)
        t_theirs += _timed(step_theirs, args.repeats)
    mo, mt = statistics.median(t_ours), statistics.median(t_theirs)
    n_ours = sum(p.numel() for p in ours.parameters())
    n_theirs = sum(p.numel() for p in theirs.parameters())
    print(f"train step, batch {B}, {precision}, {torch.get_num_threads()} threads, "
          f"{len(t_ours)} steps each (median):")  # fmt: skip
    print(f"  CausalForecaster (direct)   {mo * 1e3:8.1f} ms   {n_ours:,} parameters")
    print(f"  PatchTSTForPrediction (HF)  {mt * 1e3:8.1f} ms   {n_theirs:,} parameters")
    print(f"  ratio ours / PatchTST       {mo / mt:8.2f}   (target <= 0.50)")
    run.row(
        "training step (median)",
        {
            "precision": precision,
            "batch": B,
            "CausalForecaster": mo * 1e3,
            "PatchTST (HF)": mt * 1e3,
            "ratio ours / PatchTST": mo / mt,
            "parameters ours": n_ours,
            "parameters PatchTST": n_theirs,
        },
        units={"CausalForecaster": "ms", "PatchTST (HF)": "ms"},
    )


def generation(args: argparse.Namespace, run: _harness.Run) -> None:
    C, B, steps = 7, args.gen_batch, 64
    model = CausalForecaster(ForecasterConfig(n_channels=C, head="autoregressive", **SIZES))
    model.eval()
    past = torch.randn(B, SIZES["context_length"], C)
    model.generate(past, 2)  # warm-up
    t0 = time.perf_counter()
    cached = model.generate(past, steps)
    t_cached = time.perf_counter() - t0
    t0 = time.perf_counter()
    full = model.generate(past, steps, use_cache=False)
    t_full = time.perf_counter() - t0
    diff = float((cached - full).abs().max())
    print(f"generate {steps} patches ({steps * SIZES['stride']} steps), batch {B} x {C} channels:")
    print(f"  with KV cache      {t_cached:8.2f} s")
    print(f"  recompute all      {t_full:8.2f} s")
    print(f"  speed-up           {t_full / t_cached:8.1f}x   (target >= 5x)")
    print(f"  max |cached - full| {diff:.2e}")
    run.row(
        "generation",
        {
            "patches": steps,
            "batch": B,
            "with KV cache": t_cached,
            "recompute all": t_full,
            "speed-up": t_full / t_cached,
            "max abs difference": diff,
        },
        units={"with KV cache": "s", "recompute all": "s"},
    )


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser(
        "forecast_speed", __doc__, threads=2, formatter_class=argparse.RawTextHelpFormatter
    )
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--gen-batch", type=int, default=8)
    p.add_argument("--precision", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    p.add_argument("--skip-patchtst", action="store_true")
    p.add_argument("--skip-generation", action="store_true")
    args = p.parse_args(argv)
    run = _harness.start("forecast_speed", args)  # seeds torch with --seed (0, as before)
    print(f"torch {torch.__version__}")
    if not args.skip_patchtst:
        for precision in args.precision:
            train_steps(args, precision, run)
    if not args.skip_generation:
        generation(args, run)
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
