"""The GEMM floor of a training step beside the step times of mfgtx and its peer, in one run.

The *floor* of a training step (issue 23's definition) is the time of the matrix products of
its linear layers alone, run as plain ``torch.mm`` calls on the exact shapes and memory
layouts the step uses, with the same batch: for every linear layer (including a fused
query-key-value projection, and the patch-embedding convolution, as the GEMM it is) the
forward product ``X W^T``, the input gradient ``dY W`` (left out where the input is data that
needs no gradient) and the weight gradient ``dY^T X``. The step's other matrix products, the
six batched products of every attention layer (``Q K^T``, ``P V`` and, in backward,
``dO V^T``, ``P^T dO``, ``dS K``, ``dS^T Q``; dense, even under a causal mask), are timed as
``torch.bmm`` and shown beside it, with the ratio against every matrix product; the verdict
is against the linear layers' products. That is the stricter target: attention runs in the
fused kernel, and with small heads (the forecaster's are 8 wide) a bmm of those shapes is
mostly call overhead, so counting it would make the floor easy to meet.

The shapes are read from mfgtx's model by forward hooks during one real training forward, so
they cannot drift from the code, and torch's ``FlopCounterMode`` checks in the same run that
the floor's linear products hold every FLOP of the step's real matrix products and
convolutions. Biases, attention (softmax and its products), norms, activations, dropout and
the optimizer are what the step adds on top; ``step / floor`` says how much.

The *fused attention* line times the step's own attention calls: every
``scaled_dot_product_attention`` call of one real training forward is recorded (shapes,
strides, mask, causal flag, scale, dropout) and replayed, forward and backward, on fresh
tensors of the same layout. Attention must run in some kernel, so ``(floor + fused
attention) / floor`` is the lowest ratio the step can reach with PyTorch's fastest attention
kernel on this CPU, whatever else is fused away; it is printed beside the target.

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
against the floor of the precision whose matrix products are faster on this CPU (bf16 with
AMX or AVX512-BF16, fp32 on an AVX2-only CPU); the forecaster against the fp32 floor
everywhere, and also against the bf16 floor where bf16 is its faster precision. The step
compared is mfgtx's in its fastest measured precision.

The steps run inside :func:`mfgtx.train.heap.keep_freed_memory`, as in ``fit`` (freed blocks
stay in the heap, so a step does not page-fault the memory of the one before);
``--heap system`` leaves glibc's defaults, to see what that is worth.

``--precision auto`` (default) times steps in both precisions where the CPU has fast bf16
(AMX or AVX512-BF16) and in fp32 only elsewhere (a bf16 step is 8-10x slower there); the bf16
floor is then timed in one round after the others (linear layers only: bf16 bmm is slower
still), so the table still shows it. ``--precision fp32`` leaves bf16 out altogether.

On a 2-core machine shared with other work, two threads lose a lot to each other's load
(a thread of every parallel region waits for a core): compare runs only at similar load
averages (printed at start and end), or pass ``--threads 1``, which other processes disturb
far less.

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
import math
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

import _harness
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models import CausalForecaster, DefectViT, ForecasterConfig, ViTConfig
from mfgtx.nn import MultiHeadAttention
from mfgtx.nn import attention as mfgtx_attention
from mfgtx.train import TrainConfig, build_optimizer, cpu_has_fast_bf16
from mfgtx.train.heap import keep_freed_memory

TARGET = 2.0
ATTENTION = "attention Q K^T, P V and their backward (bmm)"
FUSED = "fused attention"  # the step's own SDPA calls, replayed (not a GEMM floor part)
MFGTX_ATTENTION = "mfgtx attention"  # the same calls through mfgtx.nn.attention's rule
BATCH = 32
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
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
    """Every matrix product of one training step of ``model``, counted, from forward hooks.

    Each ``nn.Linear`` call gives its three products. A self-attention layer whose query,
    key and value projections ran as one fused product (no call of ``q_proj`` during its
    forward) gives the products of that ``(D, 3D)`` linear map instead.
    """
    found: Counter = Counter()
    calls: Counter = Counter()  # forward calls per linear module
    q_calls_before: dict[nn.Module, int] = {}
    hooks = []

    def on_linear(name: str) -> Callable:
        def hook(m: nn.Linear, args: tuple, _out: Tensor) -> None:
            calls[m] += 1
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

    def before_attention(m: MultiHeadAttention, _args: tuple, _kwargs: dict) -> None:
        q_calls_before[m] = calls[m.q_proj]

    def on_attention(m: MultiHeadAttention, args: tuple, kwargs: dict, _out: Any) -> None:
        q = args[0]
        key = kwargs.get("key", args[1] if len(args) > 1 else None)
        if calls[m.q_proj] == q_calls_before.pop(m):  # one fused (D, 3D) projection
            for p in _linear_products("attention projections", q, 3 * m.d_model, m.d_model):
                found[p] += 1
        B, T, _ = q.shape
        S = T if key is None else key.shape[1]
        BH, Dh, g = B * m.n_heads, m.head_dim, ATTENTION
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
            hooks.append(mod.register_forward_pre_hook(before_attention, with_kwargs=True))
            hooks.append(mod.register_forward_hook(on_attention, with_kwargs=True))
    try:
        loss_of()  # a training forward with autograd on: requires_grad tells what backward needs
    finally:
        for h in hooks:
            h.remove()
    return found


def linear_flops(model: nn.Module, loss_of: Callable[[], Tensor]) -> int:
    """GEMM FLOPs of the ``nn.Linear`` calls of any model's step (the peer's linear work)."""
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


def gemm_flops(model: nn.Module, loss_of: Callable[[], Tensor]) -> int:
    """FLOPs torch's own counter sees in matrix products and convolutions of one forward
    and backward of ``model`` (the gradients are cleared afterwards)."""
    from torch.utils.flop_counter import FlopCounterMode

    ops = {"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward"}
    with FlopCounterMode(display=False) as counter:
        loss_of().backward()
    model.zero_grad(set_to_none=True)
    counts = counter.get_flop_counts().get("Global", {})
    return sum(n for op, n in counts.items() if str(op).split(".")[1] in ops)


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

    def run(self, *, skip: tuple[str, ...] = (), warm: bool = False) -> dict[str, float]:
        """Seconds per group for one step's worth of products (``warm``: one untimed call of
        each first)."""
        per_group: dict[str, float] = Counter()
        for p, count in self.products.items():
            if p.group in skip:
                continue
            a, b = self.operands[p]
            out = self.outs[p]
            mm = torch.bmm if a.dim() == 3 else torch.mm
            if warm:
                mm(a, b, out=out)
            t0 = time.perf_counter()
            for _ in range(count):
                mm(a, b, out=out)
            per_group[p.group] += time.perf_counter() - t0
        return per_group


@dataclass(frozen=True)
class SdpaCall:
    """One ``scaled_dot_product_attention`` call of the step: operand layouts and options."""

    q: tuple[tuple[int, ...], tuple[int, ...]]  # (shape, stride)
    k: tuple[tuple[int, ...], tuple[int, ...]]
    v: tuple[tuple[int, ...], tuple[int, ...]]
    mask: Tensor | None
    dropout_p: float
    is_causal: bool
    scale: float | None


def sdpa_calls(loss_of: Callable[[], Tensor]) -> list[SdpaCall]:
    """Every ``F.scaled_dot_product_attention`` call of one training forward, as it ran."""
    calls: list[SdpaCall] = []
    real = F.scaled_dot_product_attention

    def recording(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, **kw):
        if kw:
            raise NotImplementedError(f"floor.py does not replay SDPA options {sorted(kw)}")
        layout = [(tuple(t.shape), tuple(t.stride())) for t in (q, k, v)]
        mask = None if attn_mask is None else attn_mask.detach().clone()
        calls.append(SdpaCall(*layout, mask, float(dropout_p), bool(is_causal), scale))
        return real(q, k, v, attn_mask=attn_mask, dropout_p=dropout_p, is_causal=is_causal,
                    scale=scale)  # fmt: skip

    F.scaled_dot_product_attention = recording  # mfgtx.nn.attention calls it through F
    try:
        loss_of()
    finally:
        F.scaled_dot_product_attention = real
    return calls


class FusedAttention:
    """Replays the step's attention calls, forward and backward, in the fused kernel, or
    (``via_mfgtx``) through :func:`mfgtx.nn.attention`, which picks the kernel by its rule
    (bf16 training on the CPU materialises short attention)."""

    def __init__(self, calls: list[SdpaCall], dtype: torch.dtype, via_mfgtx: bool = False) -> None:
        self.via_mfgtx = via_mfgtx

        def leaf(layout: tuple[tuple[int, ...], tuple[int, ...]]) -> Tensor:
            shape, stride = layout
            return torch.empty_strided(shape, stride, dtype=dtype).normal_().requires_grad_()

        self.calls = calls
        self.inputs = [(leaf(c.q), leaf(c.k), leaf(c.v)) for c in calls]
        self.grads = [torch.randn((*c.q[0][:-1], c.v[0][-1]), dtype=dtype) for c in calls]

    def run(self) -> float:
        """Seconds for one step's attention calls, forward and backward."""
        total = 0.0
        for c, (q, k, v), g in zip(self.calls, self.inputs, self.grads, strict=True):
            t0 = time.perf_counter()
            if self.via_mfgtx:
                masks = {}
                if c.mask is not None:  # SDPA took a boolean mask or an additive float bias
                    masks = {"attn_mask" if c.mask.dtype == torch.bool else "attn_bias": c.mask}
                out = mfgtx_attention(q, k, v, is_causal=c.is_causal, dropout_p=c.dropout_p,
                                      scale=c.scale, **masks).output  # fmt: skip
            else:
                out = F.scaled_dot_product_attention(
                    q, k, v, attn_mask=c.mask, dropout_p=c.dropout_p, is_causal=c.is_causal,
                    scale=c.scale,
                )  # fmt: skip
            out.backward(g)
            total += time.perf_counter() - t0
            q.grad = k.grad = v.grad = None
        return total


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
    floor_precision: Callable[[dict[str, float], dict[str, float]], list[str]]


def _missing(package: str) -> str | None:
    if importlib.util.find_spec(package) is None:
        return f"{package} not installed: peer skipped"
    return None


VIT = ViTConfig(image_size=224, patch_size=16, in_chans=1, num_classes=10, d_model=192,
                n_heads=3, n_layers=12, d_ff=768, dropout=0.0, stem="linear")  # fmt: skip
FORECAST = dict(n_channels=7, context_length=512, horizon=96, patch_len=16, stride=8,
                d_model=128, n_heads=16, n_layers=3, d_ff=256, dropout=0.2,
                quantiles=())  # fmt: skip


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

    def target(floors: dict[str, float], steps: dict[str, float]) -> list[str]:
        # the floor of the precision whose products are faster here: bf16 with AMX or
        # AVX512-BF16, fp32 on an AVX2-only CPU (an untimed bf16 floor counts as slower)
        return ["bf16"] if floors.get("bf16", math.inf) < floors["fp32"] else ["fp32"]

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

    def target(floors: dict[str, float], steps: dict[str, float]) -> list[str]:
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


def run_case(case: Case, cpu: dict[str, Any], args: argparse.Namespace, run: _harness.Run) -> None:
    step_prec = _step_precisions(args.precision, cpu)
    products = step_products(case.ours, lambda: case.ours_loss(case.ours))
    floor_prec = ("fp32", "bf16") if args.precision != "fp32" else ("fp32",)
    floors = {p: Floor(products, DTYPES[p]) for p in floor_prec}
    calls = sdpa_calls(lambda: case.ours_loss(case.ours))
    if not calls and any(p.group == ATTENTION for p in products):
        raise RuntimeError("the step's attention ran outside F.scaled_dot_product_attention: "
                           "its fused-kernel time cannot be replayed")  # fmt: skip
    fused = {p: FusedAttention(calls, DTYPES[p]) for p in step_prec}
    ruled = {p: FusedAttention(calls, DTYPES[p], via_mfgtx=True) for p in step_prec}
    steppers = {"ours": Stepper(case.ours, case.ours_loss)}
    if case.peer is not None:
        steppers["peer"] = Stepper(case.peer, case.peer_loss)
    if args.compile:  # the same models and batches through torch.compile (Inductor)
        steppers["ours compiled"] = Stepper(case.ours, torch.compile(case.ours_loss))
        if case.peer is not None:
            steppers["peer compiled"] = Stepper(case.peer, torch.compile(case.peer_loss))

    floor_t: dict[str, list[dict[str, float]]] = {p: [] for p in floor_prec}
    steps: dict[tuple[str, str], list[float]] = {}
    for r in range(args.warmup + args.repeats):
        timed = r >= args.warmup
        for prec in step_prec:
            slow_bmm = prec == "bf16" and not cpu["fast_bf16"]  # minutes without AMX
            groups = floors[prec].run(skip=(ATTENTION,) if slow_bmm else ())
            groups[FUSED] = fused[prec].run()
            groups[MFGTX_ATTENTION] = ruled[prec].run()
            if timed:
                floor_t[prec].append(groups)
            for who, stepper in steppers.items():
                t = stepper(prec)  # a compiled stepper's first call compiles: a warm-up round
                if timed:
                    steps.setdefault((who, prec), []).append(t)
        print(f"  round {r + 1}/{args.warmup + args.repeats} done", file=sys.stderr, flush=True)
    if "bf16" in floor_prec and "bf16" not in step_prec:  # one round, linear layers only
        print("  timing the bf16 floor once (slow on this CPU)", file=sys.stderr, flush=True)
        floor_t["bf16"].append(floors["bf16"].run(skip=(ATTENTION,), warm=True))

    _report(case, cpu, products, floor_t, steps, step_prec, args, calls, run)


def _step_precisions(choice: str, cpu: dict[str, Any]) -> tuple[str, ...]:
    if choice == "auto":
        return ("fp32", "bf16") if cpu["fast_bf16"] else ("fp32",)
    return ("fp32", "bf16") if choice == "both" else (choice,)


def _report(
    case: Case,
    cpu: dict[str, Any],
    products: Counter,
    floor_t: dict[str, list[dict[str, float]]],
    steps: dict[tuple[str, str], list[float]],
    step_prec: tuple[str, ...],
    args: argparse.Namespace,
    calls: list[SdpaCall],
    run: _harness.Run,
) -> None:
    print(f"\n## {case.title}\n")
    groups = [g for g in dict.fromkeys(p.group for p in products) if g != ATTENTION]
    gflop: Counter = Counter()
    n_prod: Counter = Counter()
    for p, count in products.items():
        gflop[p.group] += p.flops * count / 1e9
        n_prod[p.group] += count

    def ms(prec: str, which: tuple[str, ...]) -> float:
        """Median over rounds of the summed seconds of the groups ``which`` (NaN if any of
        them was not timed)."""
        rounds = [r for r in floor_t.get(prec, []) if all(g in r for g in which)]
        return _med([sum(r[g] for g in which) for r in rounds])

    def cell(x: float) -> str:
        return "not timed" if x != x else f"{x * 1e3:.1f}"  # NaN: not timed

    def row(label: str, which: tuple[str, ...], bold: bool = False) -> None:
        b = "**" if bold else ""
        print(f"| {b}{label}{b} | {sum(n_prod[g] for g in which)} | "
              f"{sum(gflop[g] for g in which):.2f} | {b}{cell(ms('fp32', which))}{b} | "
              f"{b}{cell(ms('bf16', which))}{b} |")  # fmt: skip
        run.row(
            f"{case.title}: GEMM floor",
            {"part": label, "products": sum(n_prod[g] for g in which),
             "GFLOP": sum(gflop[g] for g in which), "fp32": ms("fp32", which) * 1e3,
             "bf16": ms("bf16", which) * 1e3},
            units={"fp32": "ms", "bf16": "ms"},
        )  # fmt: skip

    linear, every = tuple(groups), (*groups, ATTENTION)
    print("| GEMM floor part | products | GFLOP | fp32 ms | bf16 ms |")
    print("|---|---:|---:|---:|---:|")
    for g in groups:
        row(g, (g,))
    row("floor: linear layers", linear, bold=True)
    row(ATTENTION, (ATTENTION,))
    row("every matrix product", every, bold=True)
    floor_s = {p: ms(p, linear) for p in DTYPES}
    every_s = {p: ms(p, every) for p in DTYPES}
    fused_s = {p: ms(p, (FUSED,)) for p in DTYPES}
    ruled_s = {p: ms(p, (MFGTX_ATTENTION,)) for p in DTYPES}
    shapes = sorted({f"{c.q[0]}{' causal' if c.is_causal else ''}" for c in calls})
    print(f"| fused attention: the step's {len(calls)} SDPA call(s) {', '.join(shapes)}, "
          f"forward and backward | {len(calls)} | | {cell(fused_s['fp32'])} | "
          f"{cell(fused_s['bf16'])} |")  # fmt: skip
    print(f"| the same calls through mfgtx.nn.attention (the kernel its rule picks in training)"
          f" | {len(calls)} | | {cell(ruled_s['fp32'])} | {cell(ruled_s['bf16'])} |")  # fmt: skip
    rates = ", ".join(
        f"{p} {sum(gflop[g] for g in linear) / floor_s[p]:.1f} GFLOP/s (median of "
        f"{len(floor_t[p])} round(s))"
        for p in floor_t
    )
    print(f"\nlinear-layer products' throughput: {rates}")
    counted = gemm_flops(case.ours, lambda: case.ours_loss(case.ours)) / 1e9
    print(
        f"completeness check: the floor's linear products hold {sum(gflop[g] for g in linear):.2f}"
        f" GFLOP; torch's FlopCounterMode counts {counted:.2f} GFLOP of mm/addmm/bmm/convolution"
        " in one real forward and backward of the step (attention runs in the fused kernel, "
        "which it does not count)"
    )

    med = {k: _med(v) for k, v in steps.items()}
    head = " | ".join(f"{p} s" for p in step_prec)
    ratio_head = " | ".join(f"{p} step / {p} floor | {p} step / every product" for p in step_prec)
    print(f"\n| step (median of {args.repeats}) | {head} | {ratio_head} |")
    print("|---|" + "---:|" * (3 * len(step_prec)))
    whos = [
        ("ours", case.ours_name),
        ("ours compiled", f"{case.ours_name}, torch.compile"),
        ("peer", case.peer_name),
        ("peer compiled", f"{case.peer_name}, torch.compile"),
    ]
    for who, name in whos:
        if who == "peer" and case.peer is None:
            print(f"| {name} | {case.peer_missing} |" + " |" * (3 * len(step_prec) - 1))
        if (who, step_prec[0]) not in med:
            continue
        cells = [f"{med[(who, p)]:.3f}" for p in step_prec]
        cells += [f"{med[(who, p)] / f[p]:.2f}" for p in step_prec for f in (floor_s, every_s)]
        print(f"| {name} | " + " | ".join(cells) + " |")
        run.row(
            f"{case.title}: step, median of {args.repeats}",
            {"model": name}
            | {p: med[(who, p)] for p in step_prec}
            | {f"{p} step / {p} floor": med[(who, p)] / floor_s[p] for p in step_prec},
            units=dict.fromkeys(step_prec, "s"),
        )

    def fastest(side: str) -> tuple[str, float]:
        """The fastest (mode and precision, seconds) of one side's measured steps."""
        timed = {f"{who.replace(side, '').strip() or 'eager'} {p}": t
                 for (who, p), t in med.items() if who.startswith(side)}  # fmt: skip
        label = min(timed, key=timed.__getitem__)
        return label, timed[label]

    best_prec, best = fastest("ours")
    ours_by_prec = {p: min(t for (w, q), t in med.items() if w.startswith("ours") and q == p)
                    for p in step_prec}  # fmt: skip
    if case.peer is not None:
        peer_prec, peer_best = fastest("peer")
        print(
            f"\nmfgtx / peer (each in its fastest measured mode and precision): {best:.3f} s "
            f"({best_prec}) / {peer_best:.3f} s ({peer_prec}) = {best / peer_best:.2f}"
        )
        peer_lin = linear_flops(case.peer, lambda: case.peer_loss(case.peer)) / 1e9
        print(f"linear-layer GEMM work per step: mfgtx {sum(gflop[g] for g in linear):.2f} "
              f"GFLOP (the floor's), peer {peer_lin:.2f} GFLOP (its nn.Linear calls)")  # fmt: skip
    else:
        print(f"\nmfgtx / peer: not measured ({case.peer_missing})")

    timed_floors = {p: t for p, t in floor_s.items() if t == t}  # NaN: not timed
    for fp in case.floor_precision(timed_floors, ours_by_prec):
        faster = min(timed_floors, key=timed_floors.__getitem__)
        why = f"{fp} floor" + (" (the faster products here)" if fp == faster else "")
        if floor_s[fp] != floor_s[fp]:
            print(f"SUMMARY {case.ours_name}: the {why} was not timed (--precision fp32, or "
                  "bf16 attention products on a CPU without fast bf16)")  # fmt: skip
            continue
        ratio = best / floor_s[fp]
        every = (
            f"{every_s[fp]:.3f} s: {best / every_s[fp]:.2f}x"
            if every_s[fp] == every_s[fp]
            else "not timed"
        )
        for label, att in (("PyTorch's fused attention", fused_s[fp]),
                           ("attention as mfgtx.nn.attention runs it", ruled_s[fp])):  # fmt: skip
            if att != att:  # NaN: this precision's attention was not timed
                continue
            bound = (floor_s[fp] + att) / floor_s[fp]
            line = (f"BOUND {case.ours_name}: with {label} on this CPU the step cannot go below "
                    f"(floor + attention) / floor = ({floor_s[fp]:.3f} + {att:.3f}) / "
                    f"{floor_s[fp]:.3f} = {bound:.2f}x the {fp} floor"
                    + (f", above the {TARGET:.1f}x target" if bound > TARGET else ""))  # fmt: skip
            print(line)
            run.note(line)
        line = (
            f"SUMMARY {case.ours_name}: target step <= {TARGET:.1f}x the {why}: "
            f"{best:.3f} s ({best_prec}) / {floor_s[fp]:.3f} s = {ratio:.2f}x -> "
            f"{'PASS' if ratio <= TARGET else 'FAIL'} (against every matrix product, "
            f"attention's as bmm, {every})"
        )
        print(line)
        run.note(line)


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = _harness.parser("floor", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", choices=("vit", "forecast", "both"), default="both")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (medians are reported)")
    p.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    p.add_argument("--precision", choices=("auto", "fp32", "bf16", "both"), default="auto")
    p.add_argument("--batch", type=int, default=BATCH)
    p.add_argument(
        "--compile",
        action="store_true",
        help="also time both models' steps through torch.compile (Inductor)",
    )
    p.add_argument(
        "--heap",
        choices=("kept", "system"),
        default="kept",
        help="keep freed memory in the heap as fit does (default), or not",
    )
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        p.error("--repeats must be >= 1 and --warmup >= 0")
    run = _harness.start("floor", args)  # --threads: torch's own unless given
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
    print(f"- heap: {'freed memory kept, as in fit' if args.heap == 'kept' else 'system'}")
    with keep_freed_memory(enabled=args.heap == "kept"):
        for name in names:
            run_case(cases[name](args.batch), cpu, args, run)
    print(f"\n- load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    run.note(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
