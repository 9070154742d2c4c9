"""The GEMM floor of a training step beside the step times of mfgtx and its peer, in one run.

The *floor* of a training step is the time of its matrix products alone, run as plain
``torch.mm`` / ``torch.bmm`` calls on the exact shapes and memory layouts the step uses, with
the same batch: for every linear layer (and the patch-embedding convolution, as the GEMM it
is) the forward product ``X W^T``, the input gradient ``dY W`` (left out where the input is
data that needs no gradient) and the weight gradient ``dY^T X``; for every attention layer
the six batched products of ``softmax(Q K^T) V`` and its backward (``Q K^T``, ``P V``,
``dO V^T``, ``P^T dO``, ``dS K``, ``dS^T Q``; dense, even under a causal mask). The shapes
are read from mfgtx's model by forward hooks during one real training forward, so they
cannot drift from the code. Biases, softmax, norms, activations, dropout and the optimizer
are what the step adds on top; ``mfgtx / floor`` says how much.

Two configurations:

* ``vit``: the ViT-Tiny configuration (224 px, patch 16, 1 channel, d_model 192, 12
  layers, 3 heads, d_ff 768, 10 classes, batch 32): :class:`mfgtx.models.DefectViT` against
  timm's ``vit_tiny_patch16_224`` (``in_chans=1``), both from scratch, cross-entropy.
* ``forecast``: the PatchTST-sized forecaster (7 channels, context 512, patch 16 stride 8,
  d_model 128, 16 heads, 3 layers, d_ff 256, horizon 96, channel independent, dropout 0.2,
  batch 32): :class:`mfgtx.models.CausalForecaster` (direct head) against Hugging Face
  ``PatchTSTForPrediction`` with the same sizes, MSE.

A step is what :func:`mfgtx.train.fit` runs per batch: forward and loss (under bf16 autocast
for bf16), ``zero_grad``, backward, gradient clipping to norm 1 and the optimizer step, with
the optimizer ``fit`` builds (:func:`mfgtx.train.build_optimizer`, which the peer gets too, so
that the ratio compares the models). Each round times the fp32 floor, the bf16 floor and
every (model, precision) step once, interleaved, so load from other processes hits all
alike; figures are medians over ``--repeats`` rounds after ``--warmup`` untimed ones.

Targets (issue 23; printed, never asserted): the step at most 2.0x its floor. The ViT
against the bf16 floor on a CPU with AMX and the fp32 floor on one without; the forecaster
against the fp32 floor everywhere, and also against the bf16 floor where bf16 is its faster
precision. The step compared is mfgtx's in its fastest measured precision.

``--precision auto`` (default) times steps in both precisions where the CPU has fast bf16
(AMX or AVX512-BF16) and in fp32 only elsewhere (a bf16 step is 8-10x slower there); the bf16
floor is then timed in one round after the others, so the table still shows it.

The peers are benchmark-only dependencies, kept out of mfgtx's environment in a git-ignored
venv. On x86_64 with Python 3.11 (PyPI's torchvision does not import beside the project's
torch 2.13 CPU build, and timm needs torchvision; this pair lies on the build machines'
disk)::

    python3 -m venv .venv-bench
    .venv-bench/bin/pip install torch==2.14.1 torchvision==0.29.1
    .venv-bench/bin/pip install timm transformers numpy pandas safetensors pyyaml tqdm pillow \\
        scikit-learn

Usage::

    PYTHONPATH=. .venv-bench/bin/python benchmarks/floor.py [--config vit|forecast|both] \\
        [--repeats 5] [--warmup 1] [--precision auto|fp32|bf16|both] [--threads N]

Without timm or transformers installed (e.g. with ``/work/main/.venv/bin/python``) the peer
is skipped with a note and the floor and mfgtx's step are still measured.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models import CausalForecaster, DefectViT, ForecasterConfig, ViTConfig
from mfgtx.nn import MultiHeadAttention
from mfgtx.train import TrainConfig, build_optimizer, cpu_has_fast_bf16

TARGET = 2.0
BATCH = 32
GRAD_CLIP = TrainConfig().grad_clip

# ---------------------------------------------------------------- the machine


def cpu_facts() -> dict[str, Any]:
    """CPU name, torch's kernel capability and whether ``lscpu`` shows AMX (bf16 tiles)."""
    try:
        flags_text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        flags_text = ""
    name = next(
        (ln.split(":", 1)[1].strip() for ln in flags_text.splitlines() if "Model name" in ln),
        platform.processor() or "unknown CPU",
    )
    return {
        "name": name,
        "capability": torch.backends.cpu.get_cpu_capability(),
        "amx_bf16": "amx_bf16" in flags_text.split(),
        "fast_bf16": cpu_has_fast_bf16(),
        "threads": torch.get_num_threads(),
    }


# ---------------------------------------------------------------- the products


@dataclass(frozen=True)
class Product:
    """One matrix product of the step: ``a @ b`` (``bmm`` when the shapes are 3-D).

    ``a_t`` / ``b_t``: the operand is the transpose of a contiguous tensor (a strided view),
    as autograd hands it to the GEMM.
    """

    group: str
    role: str  # "forward", "backward dX", "backward dW", ...
    a: tuple[int, ...]
    b: tuple[int, ...]
    a_t: bool = False
    b_t: bool = False

    @property
    def flops(self) -> int:
        *batch, m, k = self.a
        n = self.b[-1]
        return 2 * m * k * n * (batch[0] if batch else 1)


def _operand(shape: tuple[int, ...], transposed: bool, dtype: torch.dtype) -> Tensor:
    if not transposed:
        return torch.randn(shape, dtype=dtype)
    flipped = (*shape[:-2], shape[-1], shape[-2])
    return torch.randn(flipped, dtype=dtype).transpose(-2, -1)


def _group_of(name: str) -> str:
    last = name.rsplit(".", 1)[-1]
    if last in ("q_proj", "k_proj", "v_proj", "out_proj", "qkv_proj", "in_proj"):
        return "attention projections"
    if last in ("linear1", "linear2"):
        return "feed-forward"
    if name.startswith("stem"):
        return "patch embedding"
    if last == "embed":
        return "patch embedding"
    return "head"


def _linear_products(group: str, x: Tensor, out_features: int, in_features: int) -> list:
    M = x.numel() // in_features  # rows of the (M, K) input matrix
    K, N = in_features, out_features
    prods = [Product(group, "forward", (M, K), (K, N), b_t=True)]
    if x.requires_grad:
        prods.append(Product(group, "backward dX", (M, N), (N, K)))
    prods.append(Product(group, "backward dW", (N, M), (M, K), a_t=True))
    return prods


def step_products(model: nn.Module, loss_of: Callable[[], Tensor]) -> Counter:
    """Every matrix product of one training step of ``model``, counted, from forward hooks."""
    found: Counter = Counter()
    hooks = []

    def on_linear(name: str) -> Callable:
        def hook(m: nn.Linear, args: tuple, _out: Tensor) -> None:
            for p in _linear_products(_group_of(name), args[0], m.out_features, m.in_features):
                found[p] += 1

        return hook

    def on_conv(name: str) -> Callable:
        def hook(m: nn.Conv2d, args: tuple, out: Tensor) -> None:
            x = args[0]
            B, _, h, w = out.shape
            K = m.in_channels * m.kernel_size[0] * m.kernel_size[1] // m.groups
            M = B * h * w  # the im2col GEMM: one row per output pixel
            prods = [Product(_group_of(name), "forward", (M, K), (K, m.out_channels))]
            if x.requires_grad:
                prods.append(Product(_group_of(name), "backward dX", (M, m.out_channels),
                                     (m.out_channels, K)))  # fmt: skip
            prods.append(Product(_group_of(name), "backward dW", (m.out_channels, M), (M, K),
                                 a_t=True))  # fmt: skip
            for p in prods:
                found[p] += 1

        return hook

    def on_attention(m: MultiHeadAttention, args: tuple, kwargs: dict, _out: Any) -> None:
        q = args[0]
        key = kwargs.get("key", args[1] if len(args) > 1 else None)
        B, T, _ = q.shape
        S = T if key is None else key.shape[1]
        BH, Dh, g = B * m.n_heads, m.head_dim, "attention QK^T, PV (bmm)"
        for p in (
            Product(g, "forward Q K^T", (BH, T, Dh), (BH, Dh, S), b_t=True),
            Product(g, "forward P V", (BH, T, S), (BH, S, Dh)),
            Product(g, "backward dP = dO V^T", (BH, T, Dh), (BH, Dh, S), b_t=True),
            Product(g, "backward dV = P^T dO", (BH, S, T), (BH, T, Dh), a_t=True),
            Product(g, "backward dQ = dS K", (BH, T, S), (BH, S, Dh)),
            Product(g, "backward dK = dS^T Q", (BH, S, T), (BH, T, Dh), a_t=True),
        ):
            found[p] += 1

    for name, mod in model.named_modules():
        if isinstance(mod, nn.Linear):
            hooks.append(mod.register_forward_hook(on_linear(name)))
        elif isinstance(mod, nn.Conv2d):
            hooks.append(mod.register_forward_hook(on_conv(name)))
        elif isinstance(mod, MultiHeadAttention):
            hooks.append(mod.register_forward_hook(on_attention, with_kwargs=True))
    try:
        loss_of()  # a training forward with autograd on: requires_grad tells what backward needs
    finally:
        for h in hooks:
            h.remove()
    return found


def linear_flops(model: nn.Module, loss_of: Callable[[], Tensor]) -> int:
    """GEMM FLOPs of the linear layers of any model's step (a cross-check for the peer)."""
    total = 0

    def hook(m: nn.Linear, args: tuple, _out: Tensor) -> None:
        nonlocal total
        total += sum(p.flops for p in _linear_products("", args[0], m.out_features,
                                                         m.in_features))  # fmt: skip

    hooks = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        loss_of()
    finally:
        for h in hooks:
            h.remove()
    return total


class Floor:
    """Times the products of a step, each run as often as the step runs it."""

    def __init__(self, products: Counter, dtype: torch.dtype) -> None:
        self.products = products
        self.dtype = dtype
        self.operands = {p: (_operand(p.a, p.a_t, dtype), _operand(p.b, p.b_t, dtype))
                         for p in products}  # fmt: skip
        self.outs = {
            p: torch.empty((*p.a[:-1], p.b[-1]), dtype=dtype) for p in products
        }  # (.., M, N)

    def run(self) -> dict[str, float]:
        """Seconds per group for one step's worth of products."""
        per_group: dict[str, float] = Counter()
        for p, count in self.products.items():
            a, b = self.operands[p]
            out = self.outs[p]
            mm = torch.bmm if a.dim() == 3 else torch.mm
            t0 = time.perf_counter()
            for _ in range(count):
                mm(a, b, out=out)
            per_group[p.group] += time.perf_counter() - t0
        return per_group


# ---------------------------------------------------------------- the models


@dataclass
class Case:
    """One configuration: mfgtx's model, the peer (or why it is missing), the batch."""

    title: str
    ours_name: str
    peer_name: str
    ours: nn.Module
    peer: nn.Module | None
    peer_missing: str | None
    ours_loss: Callable[[nn.Module], Tensor]
    peer_loss: Callable[[nn.Module], Tensor] | None
    floor_precision: Callable[[dict[str, Any], dict[str, float]], list[str]]


def _missing(package: str) -> str | None:
    if importlib.util.find_spec(package) is None:
        return f"{package} not installed: peer skipped"
    return None


VIT = ViTConfig(image_size=224, patch_size=16, in_chans=1, num_classes=10, d_model=192,
                n_heads=3, n_layers=12, d_ff=768)  # fmt: skip
FORECAST = dict(n_channels=7, context_length=512, horizon=96, patch_len=16, stride=8,
                d_model=128, n_heads=16, n_layers=3, d_ff=256, dropout=0.2)  # fmt: skip


def vit_case(batch: int) -> Case:
    g = torch.Generator().manual_seed(0)
    images = torch.randn(batch, 1, 224, 224, generator=g)
    y = torch.randint(0, VIT.num_classes, (batch,), generator=g)
    torch.manual_seed(0)
    ours = DefectViT(VIT).train()
    missing = _missing("timm")
    peer = None
    if missing is None:
        import timm

        torch.manual_seed(0)
        peer = timm.create_model("vit_tiny_patch16_224", pretrained=False, in_chans=1,
                                 num_classes=VIT.num_classes).train()  # fmt: skip

    def target(cpu: dict[str, Any], steps: dict[str, float]) -> list[str]:
        return ["bf16"] if cpu["amx_bf16"] else ["fp32"]

    return Case(
        title=f"ViT-Tiny config (224/16, 1 ch, d 192, 12 layers, 3 heads, batch {batch})",
        ours_name="mfgtx DefectViT",
        peer_name="timm vit_tiny_patch16_224",
        ours=ours,
        peer=peer,
        peer_missing=missing,
        ours_loss=lambda m: m.loss({"images": images, "y": y}),
        peer_loss=lambda m: F.cross_entropy(m(images).float(), y),
        floor_precision=target,
    )


def patchtst(c: dict[str, Any]) -> nn.Module:
    from transformers import PatchTSTConfig, PatchTSTForPrediction

    cfg = PatchTSTConfig(
        num_input_channels=c["n_channels"],
        context_length=c["context_length"],
        prediction_length=c["horizon"],
        patch_length=c["patch_len"],
        patch_stride=c["stride"],
        d_model=c["d_model"],
        num_attention_heads=c["n_heads"],
        num_hidden_layers=c["n_layers"],
        ffn_dim=c["d_ff"],
        path_dropout=c["dropout"],
        ff_dropout=c["dropout"],
        positional_dropout=c["dropout"],
        head_dropout=c["dropout"],
        attention_dropout=0.0,
        scaling="std",
        pooling_type=None,  # the flatten head over all patches, like mfgtx's direct head
        loss="mse",
    )
    return PatchTSTForPrediction(cfg)


def forecast_case(batch: int) -> Case:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(batch, FORECAST["context_length"], FORECAST["n_channels"], generator=g)
    y = torch.randn(batch, FORECAST["horizon"], FORECAST["n_channels"], generator=g)
    torch.manual_seed(0)
    ours = CausalForecaster(ForecasterConfig(head_dropout=FORECAST["dropout"], **FORECAST))
    missing = _missing("transformers")
    peer = None
    if missing is None:
        torch.manual_seed(0)
        peer = patchtst(FORECAST).train()

    def target(cpu: dict[str, Any], steps: dict[str, float]) -> list[str]:
        bf16_faster = "bf16" in steps and steps["bf16"] < steps.get("fp32", float("inf"))
        return ["fp32", "bf16"] if bf16_faster else ["fp32"]

    return Case(
        title=(
            f"PatchTST-sized forecaster (7 ch, L512, patch 16/8, d 128, 16 heads, 3 layers, "
            f"H96, batch {batch})"
        ),
        ours_name="mfgtx CausalForecaster",
        peer_name="HF PatchTSTForPrediction",
        ours=ours.train(),
        peer=peer,
        peer_missing=missing,
        ours_loss=lambda m: m.loss({"x": x, "y": y}),
        peer_loss=lambda m: m(past_values=x, future_values=y).loss,
        floor_precision=target,
    )


# ---------------------------------------------------------------- the step


class Stepper:
    """One model's training step as ``fit`` runs it, in a given precision."""

    def __init__(self, model: nn.Module, loss: Callable[[nn.Module], Tensor]) -> None:
        self.model, self.loss = model, loss
        self.opt = build_optimizer(model, TrainConfig())

    def __call__(self, precision: str) -> float:
        t0 = time.perf_counter()
        ctx = (
            torch.autocast("cpu", dtype=torch.bfloat16)
            if precision == "bf16"
            else contextlib.nullcontext()
        )
        with ctx:
            loss = self.loss(self.model)
        float(loss.detach())  # fit reads the loss to check it is finite
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), GRAD_CLIP)
        self.opt.step()
        return time.perf_counter() - t0


# ---------------------------------------------------------------- one configuration


def _med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def run_case(case: Case, cpu: dict[str, Any], args: argparse.Namespace) -> None:
    step_prec = _step_precisions(args.precision, cpu)
    products = step_products(case.ours, lambda: case.ours_loss(case.ours))
    floors = {"fp32": Floor(products, torch.float32), "bf16": Floor(products, torch.bfloat16)}
    floor_rounds = {"fp32": args.repeats, "bf16": args.repeats if "bf16" in step_prec else 1}
    ours = Stepper(case.ours, case.ours_loss)
    peer = Stepper(case.peer, case.peer_loss) if case.peer is not None else None

    floor_t: dict[str, list[dict[str, float]]] = {"fp32": [], "bf16": []}
    steps: dict[tuple[str, str], list[float]] = {}
    for r in range(args.warmup + args.repeats):
        timed = r >= args.warmup
        for prec in ("fp32", "bf16"):
            if prec == "fp32" or "bf16" in step_prec:
                groups = floors[prec].run()
                if timed:
                    floor_t[prec].append(groups)
            for who, stepper in (("ours", ours), ("peer", peer)):
                if stepper is None or prec not in step_prec:
                    continue
                t = stepper(prec)
                if timed:
                    steps.setdefault((who, prec), []).append(t)
        print(f"  round {r + 1}/{args.warmup + args.repeats} done", file=sys.stderr, flush=True)
    if "bf16" not in step_prec:  # one bf16 floor round (after a warm-up call of each product)
        floors["bf16"].run()
        floor_t["bf16"].append(floors["bf16"].run())

    _report(case, cpu, products, floor_t, floor_rounds, steps, step_prec, args)


def _step_precisions(choice: str, cpu: dict[str, Any]) -> tuple[str, ...]:
    if choice == "auto":
        return ("fp32", "bf16") if cpu["fast_bf16"] else ("fp32",)
    return ("fp32", "bf16") if choice == "both" else (choice,)


def _report(
    case: Case,
    cpu: dict[str, Any],
    products: Counter,
    floor_t: dict[str, list[dict[str, float]]],
    floor_rounds: dict[str, int],
    steps: dict[tuple[str, str], list[float]],
    step_prec: tuple[str, ...],
    args: argparse.Namespace,
) -> None:
    print(f"\n## {case.title}\n")
    groups = list(dict.fromkeys(p.group for p in products))
    gflop = Counter()
    n_prod = Counter()
    for p, count in products.items():
        gflop[p.group] += p.flops * count / 1e9
        n_prod[p.group] += count

    def floor_of(prec: str, group: str | None = None) -> float:
        rounds = floor_t[prec]
        if group is None:
            return _med([sum(r.values()) for r in rounds])
        return _med([r.get(group, 0.0) for r in rounds])

    print("| GEMM floor part | products | GFLOP | fp32 ms | bf16 ms |")
    print("|---|---:|---:|---:|---:|")
    for g in groups:
        print(f"| {g} | {n_prod[g]} | {gflop[g]:.2f} | {floor_of('fp32', g) * 1e3:.1f} | "
              f"{floor_of('bf16', g) * 1e3:.1f} |")  # fmt: skip
    total_gflop = sum(gflop.values())
    f32, b16 = floor_of("fp32"), floor_of("bf16")
    print(f"| **floor (all products)** | {sum(n_prod.values())} | {total_gflop:.2f} | "
          f"**{f32 * 1e3:.1f}** | **{b16 * 1e3:.1f}** |")  # fmt: skip
    print(
        f"\nfloor throughput: fp32 {total_gflop / f32:.1f} GFLOP/s, bf16 {total_gflop / b16:.1f} "
        f"GFLOP/s (bf16 floor: median of {len(floor_t['bf16'])} round(s))"
    )

    print(f"\n| step (median of {args.repeats}) | " + " | ".join(f"{p} s" for p in step_prec)
          + " | " + " | ".join(f"{p} / {p} floor" for p in step_prec) + " |")  # fmt: skip
    print("|---|" + "---:|" * (2 * len(step_prec)))
    floor_s = {"fp32": f32, "bf16": b16}
    med = {k: _med(v) for k, v in steps.items()}
    for who, name in (("ours", case.ours_name), ("peer", case.peer_name)):
        if who == "peer" and case.peer is None:
            print(f"| {name} | {case.peer_missing} |")
            continue
        cells = [f"{med[(who, p)]:.3f}" for p in step_prec]
        cells += [f"{med[(who, p)] / floor_s[p]:.2f}" for p in step_prec]
        print(f"| {name} | " + " | ".join(cells) + " |")

    ours_by_prec = {p: med[("ours", p)] for p in step_prec}
    best_prec = min(ours_by_prec, key=ours_by_prec.__getitem__)
    best = ours_by_prec[best_prec]
    if case.peer is not None:
        peer_by_prec = {p: med[("peer", p)] for p in step_prec}
        peer_prec = min(peer_by_prec, key=peer_by_prec.__getitem__)
        print(
            f"\nmfgtx / peer (each in its fastest measured precision): {best:.3f} s "
            f"({best_prec}) / {peer_by_prec[peer_prec]:.3f} s ({peer_prec}) = "
            f"{best / peer_by_prec[peer_prec]:.2f}"
        )
        ours_lin = linear_flops(case.ours, lambda: case.ours_loss(case.ours)) / 1e9
        peer_lin = linear_flops(case.peer, lambda: case.peer_loss(case.peer)) / 1e9
        print(f"linear-layer GEMM work per step (cross-check): mfgtx {ours_lin:.2f} GFLOP, "
              f"peer {peer_lin:.2f} GFLOP")  # fmt: skip
    else:
        print(f"\nmfgtx / peer: not measured ({case.peer_missing})")

    for fp in case.floor_precision(cpu, ours_by_prec):
        ratio = best / floor_s[fp]
        why = {
            ("fp32", False): "fp32 floor (no AMX)",
            ("bf16", True): "bf16 floor (AMX)",
        }.get((fp, cpu["amx_bf16"]), f"{fp} floor")
        print(
            f"SUMMARY {case.ours_name}: target step <= {TARGET:.1f}x the {why}: "
            f"{best:.3f} s ({best_prec}) / {floor_s[fp]:.3f} s = {ratio:.2f}x -> "
            f"{'PASS' if ratio <= TARGET else 'FAIL'}"
        )


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--config", choices=("vit", "forecast", "both"), default="both")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (medians are reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "both"), default="auto")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    p.add_argument("--batch", type=int, default=BATCH)
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        p.error("--repeats must be >= 1 and --warmup >= 0")
    if args.threads:
        torch.set_num_threads(args.threads)
    cpu = cpu_facts()
    versions = [f"torch {torch.__version__}"]
    for pkg in ("timm", "transformers"):
        if importlib.util.find_spec(pkg) is not None:
            versions.append(f"{pkg} {__import__(pkg).__version__}")
    print("# GEMM floor of a training step: mfgtx and its peer, side by side (CPU)\n")
    print(
        f"- CPU: {cpu['name']}; torch.backends.cpu.get_cpu_capability() = "
        f"{cpu['capability']}; lscpu amx_bf16: {'yes' if cpu['amx_bf16'] else 'no'}; "
        f"{cpu['threads']} threads; {', '.join(versions)}"
    )
    print(f"- load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    cases = {"vit": vit_case, "forecast": forecast_case}
    names = ("vit", "forecast") if args.config == "both" else (args.config,)
    for name in names:
        run_case(cases[name](args.batch), cpu, args)
    print(f"\n- load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
