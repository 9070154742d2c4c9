"""Benchmark the training engine: fp32 vs bf16 step time, 1 vs 2 torchrun processes.

Part 1 times ``forward + backward + AdamW step`` of a fixed encoder regressor (the same
model in both precisions, bf16 through autocast as :func:`mfgtx.train.fit` runs it) and
prints the median step time of each and the speed-up, measured side by side in one run.

Part 2 runs :func:`mfgtx.train.fit` for a fixed number of epochs under
``torchrun --standalone --nproc_per_node=N`` for N = 1 and N = 2 and prints the training
throughput (samples/s, from :class:`mfgtx.train.FitResult`) of each. On a machine with C
cores, each of the N processes gets C // N threads, so both runs use the same cores.

Usage::

    python benchmarks/train_step.py [--steps 20] [--batch 32] [--seq 256] [--skip-ddp]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _harness
import torch
from torch import Tensor, nn
from torch.utils.data import Dataset

from mfgtx.nn import Encoder, TransformerConfig
from mfgtx.train import TrainConfig, cpu_has_fast_bf16, fit

ENCODER = TransformerConfig(d_model=128, n_heads=8, n_layers=4, d_ff=512, dropout=0.1)
CHANNELS = 8


class Regressor(nn.Module):
    """Sensor windows ``(B, T, C)`` -> one value per window."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Linear(CHANNELS, ENCODER.d_model)
        self.encoder = Encoder(ENCODER)
        self.head = nn.Linear(ENCODER.d_model, 1)

    def predict(self, batch: dict[str, Tensor]) -> Tensor:
        return self.head(self.encoder(self.embed(batch["x"])).output.mean(1)).squeeze(-1)

    def loss(self, batch: dict[str, Tensor]) -> Tensor:
        return nn.functional.mse_loss(self.predict(batch).float(), batch["y"])


class Windows(Dataset):
    def __init__(self, n: int, seq: int) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, seq, CHANNELS, generator=g)
        self.y = self.x.mean((1, 2))

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, Tensor]:
        return {"x": self.x[i], "y": self.y[i]}


def step_times(precision: str, steps: int, batch: int, seq: int) -> list[float]:
    torch.manual_seed(0)
    model = Regressor()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    data = Windows(batch, seq)
    b = {"x": data.x, "y": data.y}
    times = []
    for i in range(steps + 3):  # 3 warm-up steps
        t0 = time.perf_counter()
        if precision == "bf16":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model.loss(b)
        else:
            loss = model.loss(b)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    return times


def ddp_worker(out: Path, n: int, seq: int, batch: int, epochs: int) -> None:
    """Run by torchrun: fit and write the throughput of rank 0."""
    result = fit(
        Regressor(),
        Windows(n, seq),
        Windows(batch, seq),
        TrainConfig(
            epochs=epochs, batch_size=batch, precision="fp32", progress="off", patience=None
        ),
    )
    if int(os.environ.get("RANK", "0")) == 0:
        rates = [h["samples_per_s"] for h in result.history[1:]] or [
            result.history[0]["samples_per_s"]
        ]
        out.write_text(
            json.dumps({"samples_per_s": statistics.median(rates), "world_size": result.world_size})
        )


def torchrun_throughput(nproc: int, args: argparse.Namespace) -> float:
    cores = os.cpu_count() or 1
    threads = max(1, cores // nproc)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        env = os.environ | {
            "OMP_NUM_THREADS": str(threads),
            "PYTHONPATH": str(Path(__file__).resolve().parents[1]),
        }
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={nproc}",
            __file__,
            "--worker",
            str(out),
            "--samples",
            str(args.samples),
            "--seq",
            str(args.seq),
            "--batch",
            str(args.batch),
            "--epochs",
            str(args.epochs),
        ]
        subprocess.run(cmd, check=True, env=env, capture_output=True, text=True)
        return float(json.loads(out.read_text())["samples_per_s"])


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("train_step", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=20, help="timed steps per precision")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--samples", type=int, default=512, help="training samples for part 2")
    p.add_argument("--epochs", type=int, default=3, help="epochs for part 2")
    p.add_argument("--skip-ddp", action="store_true")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker is not None:
        ddp_worker(args.worker, args.samples, args.seq, args.batch, args.epochs)
        return 0
    run = _harness.start("train_step", args)

    print("# Training-step benchmark (CPU)\n")
    print(
        f"- torch {torch.__version__}, {torch.get_num_threads()} threads, "
        f"fast bf16 hardware (AMX/AVX512-BF16): {cpu_has_fast_bf16()}"
    )
    print(
        f"- encoder d_model={ENCODER.d_model} n_heads={ENCODER.n_heads} "
        f"n_layers={ENCODER.n_layers} d_ff={ENCODER.d_ff}; batch {args.batch} x "
        f"{args.seq} steps x {CHANNELS} channels; median of {args.steps} steps\n"
    )
    medians = {}
    print("| precision | median step ms | samples/s |")
    print("|---|---:|---:|")
    for precision in ("fp32", "bf16"):
        t = statistics.median(step_times(precision, args.steps, args.batch, args.seq))
        medians[precision] = t
        print(f"| {precision} | {t * 1e3:.1f} | {args.batch / t:.0f} |")
        cells = {"precision": precision, "median step": t * 1e3, "samples/s": args.batch / t}
        run.row("training step", cells, units={"median step": "ms"})
    print(
        f"\nbf16 speed-up over fp32: {medians['fp32'] / medians['bf16']:.2f}x "
        "(>1 means bf16 is faster here)"
    )
    run.note(f"bf16 speed-up over fp32: {medians['fp32'] / medians['bf16']:.2f}x")
    if args.skip_ddp:
        run.write()
        return 0
    print(f"\n## fit() under torchrun: {args.samples} samples x {args.epochs} epochs, fp32\n")
    print("| processes | threads each | samples/s |")
    print("|---:|---:|---:|")
    rates = {}
    for nproc in (1, 2):
        rates[nproc] = torchrun_throughput(nproc, args)
        threads = max(1, (os.cpu_count() or 1) // nproc)
        print(f"| {nproc} | {threads} | {rates[nproc]:.0f} |")
        cells = {"processes": nproc, "threads each": threads, "samples/s": rates[nproc]}
        run.row("fit() under torchrun, fp32", cells)
    print(f"\n2 processes vs 1: {rates[2] / rates[1]:.2f}x throughput")
    run.note(f"2 torchrun processes vs 1: {rates[2] / rates[1]:.2f}x throughput")
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
