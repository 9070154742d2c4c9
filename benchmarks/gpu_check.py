"""On a CUDA machine: prove which attention kernel each model trains on, and time the steps.

Part 1 (kernel proof) runs one training step (loss, backward, optimizer step) of small
models on each attention path and counts PyTorch's own profiler events of the fused
kernels (``aten::_scaled_dot_product_flash_attention``, ``..._efficient_attention``,
``..._cudnn_attention`` and their ``_backward``) and of the math fallback, one forward and
one backward expected per attention layer:

* no mask (complete sensor windows, causal decoders, the ViT), bf16 autocast: FlashAttention
  (or cuDNN attention, should PyTorch prefer it);
* the same in fp32: the memory-efficient kernel (CUDA's flash kernel is 16-bit only);
* a padded batch (a key mask), an ALiBi bias, the learned T5 bias (a bias with a gradient):
  the memory-efficient kernel (or cuDNN attention, should PyTorch pick it: fused all the same).

A case passes when its expected kernels ran exactly that often, the math kernel never, and
the loss is finite (the padded batch holds a window with nothing observed, whose fully masked
attention rows must give zeros, not NaN, on every kernel).

Part 2 (timing) times a training step of DefectViT against timm's ``vit_tiny_patch16_224``
and of CausalForecaster against Hugging Face ``PatchTSTForPrediction`` at the comparison
sizes of ``benchmarks/vit_speed.py`` and ``benchmarks/forecast_speed.py``, side by side in
one process, alternating, in bf16 autocast and fp32; timm and transformers are imported only
here and a missing one is reported and skipped.

Without CUDA it prints "no GPU" and exits 0. ``--device cpu`` runs part 1 against the CPU
kernels instead (flash everywhere except the learned T5 bias, which trains on the math
kernel there), which is how the script itself is tested on machines without a GPU.

Usage::

    PYTHONPATH=. python benchmarks/gpu_check.py [--steps 20] [--warmup 5] [--batch 32]
    PYTHONPATH=. python benchmarks/gpu_check.py --device cpu --skip-timing
"""

from __future__ import annotations

import argparse
import contextlib
import math
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _harness
import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

from mfgtx.models import (
    CausalForecaster,
    DefectViT,
    ForecasterConfig,
    SensorEncoder,
    SensorEncoderConfig,
    ViTConfig,
)
from mfgtx.nn import Encoder, TransformerConfig

LAYERS = 2
KERNELS = {  # short name -> (forward op, backward op), as torch.profiler names them
    "flash": ("aten::_scaled_dot_product_flash_attention",) * 2,
    "efficient": ("aten::_scaled_dot_product_efficient_attention",) * 2,
    "cudnn": ("aten::_scaled_dot_product_cudnn_attention",) * 2,
    "flash_cpu": ("aten::_scaled_dot_product_flash_attention_for_cpu",) * 2,
    "math": ("aten::_scaled_dot_product_attention_math",) * 2,  # its backward: no one op
}
KERNELS = {k: (fwd, bwd + "_backward") for k, (fwd, bwd) in KERNELS.items()}


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]]
    bf16: bool
    cuda: tuple[str, ...]  # kernels any of which may serve it on CUDA
    cpu: tuple[str, ...]  # on CPU


def _encoder(gaps: bool) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    c = SensorEncoderConfig(n_channels=4, max_len=64, patch_len=4, d_model=64, n_heads=4,
                            n_layers=LAYERS, d_ff=128)  # fmt: skip
    x = torch.randn(16, 64, 4)
    if gaps:
        x[3] = float("nan")  # a window with nothing observed: every token masked
    return SensorEncoder(c), {"x": x, "observed": ~torch.isnan(x), "y": torch.randn(16, 1)}


def _forecaster(head: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    c = ForecasterConfig(n_channels=3, context_length=64, horizon=16, patch_len=8, stride=8,
                         d_model=64, n_heads=4, n_layers=LAYERS, d_ff=128, head=head, dropout=0.2,
                         quantiles=())  # fmt: skip
    return CausalForecaster(c), {"x": torch.randn(8, 64, 3), "y": torch.randn(8, 16, 3)}


def _vit(stem: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    c = ViTConfig(image_size=32, patch_size=4, num_classes=3, d_model=64, n_heads=4,
                  n_layers=LAYERS, d_ff=128, stem=stem, dropout=0.0)  # fmt: skip
    return DefectViT(c), {"images": torch.randn(8, 1, 32, 32), "y": torch.randint(0, 3, (8,))}


class _Stack(torch.nn.Module):
    """An encoder stack with a regression loss, for the positional schemes."""

    def __init__(self, positional: str) -> None:
        super().__init__()
        self.encoder = Encoder(TransformerConfig(d_model=64, n_heads=4, n_layers=LAYERS,
                                                 d_ff=128, positional=positional))  # fmt: skip

    def loss(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return F.mse_loss(self.encoder(batch["x"]).output.mean((1, 2)).float(), batch["y"])


def _stack(positional: str) -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    return _Stack(positional), {"x": torch.randn(8, 48, 64), "y": torch.randn(8)}


NO_MASK = ("flash", "cudnn")
MASKED = ("efficient", "cudnn")  # CUDA flash takes no mask or bias; cuDNN may, on some GPUs
CASES = [
    Case("SensorEncoder, every token observed", lambda: _encoder(False), True, NO_MASK,
         ("flash_cpu",)),
    Case("SensorEncoder, every token observed, fp32", lambda: _encoder(False), False,
         ("efficient",), ("flash_cpu",)),
    Case("SensorEncoder, padded batch (key mask)", lambda: _encoder(True), True, MASKED,
         ("flash_cpu",)),
    Case("CausalForecaster direct (is_causal)", lambda: _forecaster("direct"), True, NO_MASK,
         ("flash_cpu",)),
    Case("CausalForecaster autoregressive (is_causal)", lambda: _forecaster("autoregressive"),
         True, NO_MASK, ("flash_cpu",)),
    Case("DefectViT conv stem", lambda: _vit("conv"), True, NO_MASK, ("flash_cpu",)),
    Case("DefectViT linear stem", lambda: _vit("linear"), True, NO_MASK, ("flash_cpu",)),
    Case("Encoder, ALiBi bias (fixed)", lambda: _stack("alibi"), True, MASKED, ("flash_cpu",)),
    Case("Encoder, T5 relative bias (learned)", lambda: _stack("relative"), True, MASKED,
         ("math",)),
]  # fmt: skip


def _to(batch: dict[str, torch.Tensor], device: torch.device) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in batch.items()}


def _autocast(device: torch.device, bf16: bool) -> contextlib.AbstractContextManager:
    if not bf16:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=torch.bfloat16)


def kernel_proof(device: torch.device, run: _harness.Run) -> bool:
    print(f"## Kernel proof on {device} ({LAYERS} attention layers per model)\n")
    print("| case | precision | expected | flash fwd/bwd | efficient | cudnn | cpu flash | math "
          "| loss | verdict |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    ok = True
    for case in CASES:
        torch.manual_seed(0)
        model, batch = case.build()
        model = model.to(device).train()
        batch = _to(batch, device)
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
        bf16 = case.bf16 and device.type == "cuda"  # the CPU kernels serve fp32 alike

        losses: list[float] = []

        def step(model=model, batch=batch, opt=opt, bf16=bf16, losses=losses) -> None:
            with _autocast(device, bf16):
                loss = model.loss(batch)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # KernelWarning for the learned bias on CPU
            step()  # warm-up outside the profiler
            with profile(activities=[ProfilerActivity.CPU]) as prof:
                step()
                if device.type == "cuda":
                    torch.cuda.synchronize()
        ran = Counter({e.key: e.count for e in prof.key_averages()})
        counts = {k: (ran[fwd], ran[bwd]) for k, (fwd, bwd) in KERNELS.items()}
        expected = case.cuda if device.type == "cuda" else case.cpu
        fused = [k for k in expected if k != "math"]  # math's backward is no single operator
        fwd = sum(counts[k][0] for k in expected)
        bwd = sum(counts[k][1] for k in fused)
        math_ok = "math" in expected or counts["math"][0] == 0
        finite = all(math.isfinite(v) for v in losses)  # a fully masked row must not give NaN
        passed = fwd == LAYERS and bwd == (LAYERS if fused else 0) and math_ok and finite
        ok &= passed
        cells = [f"{counts[k][0]}/{counts[k][1]}" for k in
                 ("flash", "efficient", "cudnn", "flash_cpu", "math")]  # fmt: skip
        precision = "bf16" if bf16 else "fp32"
        print(f"| {case.name} | {precision} | {' or '.join(expected)} | {' | '.join(cells)} | "
              f"{losses[-1]:.4g} | {'PASS' if passed else 'FAIL'} |")  # fmt: skip
        names = ("flash fwd/bwd", "efficient", "cudnn", "cpu flash", "math")
        kernels = dict(zip(names, cells, strict=True))
        run.row(
            f"kernel proof ({LAYERS} attention layers per model)",
            {"case": case.name, "precision": precision, "expected": " or ".join(expected),
             **kernels, "loss": losses[-1], "verdict": "PASS" if passed else "FAIL"},
        )  # fmt: skip
    print(f"\nkernel proof: {'PASS' if ok else 'FAIL'}\n")
    return ok


def _timed_pairs(
    steps: dict[str, Callable[[], None]], device: torch.device, n: int, warmup: int
) -> dict[str, float]:
    """Median seconds per step of each callable, measured alternately."""

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    for fn in steps.values():
        for _ in range(warmup):
            fn()
    sync()
    times: dict[str, list[float]] = {name: [] for name in steps}
    for _ in range(n):
        for name, fn in steps.items():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _train_step(model: torch.nn.Module, loss: Callable[[], torch.Tensor], bf16: bool,
                device: torch.device) -> Callable[[], None]:  # fmt: skip
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step() -> None:
        with _autocast(device, bf16):
            value = loss()
        opt.zero_grad(set_to_none=True)
        value.float().backward()
        opt.step()

    return step


def time_vit(device: torch.device, args: argparse.Namespace, run: _harness.Run) -> None:
    try:
        import timm
    except ImportError as err:  # absent, or a dependency of it (torchvision) is
        print(f"timm not installed ({err}): DefectViT vs timm vit_tiny_patch16_224 skipped\n")
        return
    from vit_speed import CONFIG

    torch.manual_seed(0)
    ours = DefectViT(CONFIG).to(device).train()
    theirs = (
        timm.create_model("vit_tiny_patch16_224", pretrained=False, in_chans=1, num_classes=6)
        .to(device)
        .train()
    )
    x = torch.randn(args.batch, 1, 224, 224, device=device)
    y = torch.randint(0, 6, (args.batch,), device=device)
    print(f"## Training step: DefectViT vs timm {timm.__version__} vit_tiny_patch16_224, "
          f"batch {args.batch}, 224 px grey\n")  # fmt: skip
    _print_times(device, args, {
        "DefectViT": lambda bf16: _train_step(ours, lambda: F.cross_entropy(ours(x).float(), y),
                                              bf16, device),
        "timm": lambda bf16: _train_step(theirs, lambda: F.cross_entropy(theirs(x).float(), y),
                                         bf16, device),
    }, run, f"training step: DefectViT vs timm vit_tiny, batch {args.batch}")  # fmt: skip


def time_forecaster(device: torch.device, args: argparse.Namespace, run: _harness.Run) -> None:
    try:
        import transformers
        from transformers import PatchTSTForPrediction  # noqa: F401  (its imports too)
    except ImportError as err:
        print(f"transformers not installed ({err}): CausalForecaster vs PatchTST skipped\n")
        return
    from forecast_speed import SIZES, patchtst

    torch.manual_seed(0)
    C = 7
    ours = CausalForecaster(ForecasterConfig(n_channels=C, head_dropout=0.2, **SIZES))
    ours = ours.to(device).train()
    theirs = patchtst(C).to(device).train()
    x = torch.randn(args.batch, SIZES["context_length"], C, device=device)
    y = torch.randn(args.batch, SIZES["horizon"], C, device=device)
    batch = {"x": x, "y": y}
    print(f"## Training step: CausalForecaster vs transformers {transformers.__version__} "
          f"PatchTSTForPrediction, batch {args.batch}, comparison sizes\n")  # fmt: skip
    _print_times(device, args, {
        "CausalForecaster": lambda bf16: _train_step(ours, lambda: ours.loss(batch), bf16,
                                                     device),
        "PatchTST": lambda bf16: _train_step(
            theirs, lambda: theirs(past_values=x, future_values=y).loss, bf16, device),
    }, run, f"training step: CausalForecaster vs PatchTST, batch {args.batch}")  # fmt: skip


def _print_times(
    device: torch.device,
    args: argparse.Namespace,
    builders: dict[str, Callable[[bool], Any]],
    run: _harness.Run,
    table: str,
) -> None:
    (ours, theirs) = builders
    print(f"| precision | {ours} ms | {theirs} ms | {ours} / {theirs} |")
    print("|---|---:|---:|---:|")
    for precision in ("bf16", "fp32"):
        bf16 = precision == "bf16"
        steps = {name: build(bf16) for name, build in builders.items()}
        med = _timed_pairs(steps, device, args.steps, args.warmup)
        print(f"| {precision} | {med[ours] * 1e3:.2f} | {med[theirs] * 1e3:.2f} | "
              f"{med[ours] / med[theirs]:.2f} |")  # fmt: skip
        run.row(
            table,
            {"precision": precision, ours: med[ours] * 1e3, theirs: med[theirs] * 1e3,
             f"{ours} / {theirs}": med[ours] / med[theirs]},
            units={ours: "ms", theirs: "ms"},
        )  # fmt: skip
    print(f"\nmedian of {args.steps} alternating steps after {args.warmup} warm-up steps each\n")


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("gpu_check", __doc__)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--steps", type=int, default=20, help="timed steps per model and precision")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--skip-timing", action="store_true")
    args = p.parse_args(argv)
    if args.device == "cuda" and not torch.cuda.is_available():
        print("no GPU: torch.cuda.is_available() is False, nothing to check here")
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))  # vit_speed, forecast_speed
    run = _harness.start("gpu_check", args)
    device = torch.device(args.device)
    print(f"# mfgtx GPU check: torch {torch.__version__}, device {device}", end="")
    if device.type == "cuda":
        print(f" ({torch.cuda.get_device_name(device)}, CUDA {torch.version.cuda})", end="")
    print("\n")
    ok = kernel_proof(device, run)
    run.note(f"kernel proof: {'PASS' if ok else 'FAIL'}")
    if not args.skip_timing:
        time_vit(device, args, run)
        time_forecaster(device, args, run)
    run.write()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
