"""Benchmark fused (FlashAttention) vs explicit attention on CPU: time and peak memory.

Both paths go through :func:`mfgtx.nn.attention`, the function under test:

* fused: ``attention(q, k, v, is_causal=...)`` (``need_weights=False``), which calls
  :func:`torch.nn.functional.scaled_dot_product_attention`. It is run inside
  ``torch.nn.attention.sdpa_kernel(SDPBackend.FLASH_ATTENTION)``, so the timings are
  guaranteed to come from the FlashAttention kernel (the call raises otherwise).
* explicit: ``attention(q, k, v, is_causal=..., need_weights=True)``, the
  ``softmax(q k^T / sqrt(Dh)) v`` path that materialises the ``(B, H, T, T)`` weights.

Each (path, length, mode) case runs in a fresh subprocess so that peak memory is measured
per case: the extra peak is the peak RSS during the first full-size call minus the RSS just
before it (inputs already allocated, kernels warmed up at a tiny size). Time is the median of
``--repeats`` calls after ``--warmup`` calls. Modes are ``fwd`` (no autograd) and
``fwd+bwd`` (q, k, v require grad; ``attention(...).output.sum().backward()``).

Usage:
    python benchmarks/attention.py [--lengths 512,1024,2048] [--no-causal] [--dtype bf16]
        [--repeats 3] [--warmup 1] [--threads 4] [--explicit-max 8192] [--mem-limit-gb 6]

The default lengths go up to 16384 and take a while on a small machine; for a quick check use
e.g. ``--lengths 256,512 --repeats 2``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import _harness
import torch
from torch import Tensor
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfgtx.nn import attention

MODES: tuple[str, ...] = ("fwd", "fwd+bwd")
PATHS: tuple[str, ...] = ("fused", "explicit")
DTYPES: dict[str, torch.dtype] = {"fp32": torch.float32, "bf16": torch.bfloat16}
MIB = 2**20
GIB = 2**30
# Estimated live (B, H, T, T) fp32 score-sized buffers at the explicit path's peak; used only
# to decide whether to skip it. The explicit path always computes its scores in fp32.
# Conservative: measured here (causal, n=4096..8192) ~2.0x fwd and ~3.1x fwd+bwd.
EXPLICIT_SCORE_COPIES: dict[str, float] = {"fwd": 3.0, "fwd+bwd": 3.5}
WARMUP_LEN = 64  # tiny warm-up size that initialises kernels and threads before measuring
RESULT_TAG = "BENCH_RESULT "
SPEEDUP_TARGET = 4.0
SPEEDUP_TARGET_LEN = 4096
LINEAR_EXPONENT_MAX = 1.2


@dataclass(frozen=True)
class Case:
    """One measurement: a path (fused / explicit), a mode (fwd / fwd+bwd) and a length."""

    path: str
    mode: str
    n: int


@dataclass(frozen=True)
class Result:
    """Outcome of one case: median time and extra peak memory, or why there is none."""

    ms: float | None = None
    extra_bytes: int | None = None
    note: str = ""


# --------------------------------------------------------------------------- arguments


def _int_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError as err:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers: {text!r}") from err
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers: {text!r}")
    return sorted(set(values))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = _harness.parser(
        "attention", __doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--lengths",
        type=_int_list,
        default=_int_list("512,1024,2048,4096,8192,16384"),
        help="comma-separated sequence lengths T = S (default: %(default)s)",
    )
    parser.add_argument("--batch", type=int, default=1, help="B (default: %(default)s)")
    parser.add_argument("--heads", type=int, default=8, help="H (default: %(default)s)")
    parser.add_argument("--head-dim", type=int, default=64, help="Dh (default: %(default)s)")
    parser.add_argument(
        "--causal",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="causal attention (default: on; --no-causal for full attention)",
    )
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    parser.add_argument(
        "--repeats", type=int, default=3, help="timed calls; the median is reported"
    )
    parser.add_argument("--warmup", type=int, default=1, help="untimed calls before timing")
    parser.add_argument(
        "--explicit-max",
        type=int,
        default=8192,
        help="longest length for the explicit path (default: %(default)s)",
    )
    parser.add_argument(
        "--mem-limit-gb",
        type=float,
        default=6.0,
        help="skip the explicit path when its estimated n^2 memory exceeds this many GB "
        "(default: %(default)s)",
    )
    # Internal: run one case in this (fresh) process and print its result as JSON.
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.warmup < 0:
        parser.error("--repeats must be >= 1 and --warmup >= 0")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be >= 1")
    return args


# --------------------------------------------------------------------------- memory probes


def current_rss_bytes() -> int:
    """Current resident set size of this process (from ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def reset_peak_rss() -> bool:
    """Reset the kernel's peak-RSS mark to the current RSS; False where unsupported."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def peak_rss_bytes() -> int:
    """Peak RSS since start or since the last :func:`reset_peak_rss`."""
    try:
        with open("/proc/self/status") as f:
            match = re.search(r"^VmHWM:\s+(\d+)\s+kB", f.read(), re.MULTILINE)
        if match:
            return int(match.group(1)) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # kB on Linux


def release_free_heap() -> None:
    """Return freed heap memory to the OS so the baseline RSS is not inflated by caches."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


# --------------------------------------------------------------------------- one case


def make_inputs(
    args: argparse.Namespace, n: int, requires_grad: bool
) -> tuple[Tensor, Tensor, Tensor]:
    shape = (args.batch, args.heads, n, args.head_dim)
    gen = torch.Generator().manual_seed(0)
    dtype = DTYPES[args.dtype]
    q, k, v = (torch.randn(shape, generator=gen, dtype=dtype) for _ in range(3))
    return (
        q.requires_grad_(requires_grad),
        k.requires_grad_(requires_grad),
        v.requires_grad_(requires_grad),
    )


def call_attention(q: Tensor, k: Tensor, v: Tensor, *, path: str, mode: str, causal: bool) -> None:
    """One benchmarked call: forward, plus backward of ``output.sum()`` for fwd+bwd."""
    explicit = path == "explicit"
    if mode == "fwd":
        with torch.no_grad():
            attention(q, k, v, is_causal=causal, need_weights=explicit)
        return
    for t in (q, k, v):
        t.grad = None
    out = attention(q, k, v, is_causal=causal, need_weights=explicit).output
    out.sum().backward()


def run_case(args: argparse.Namespace, case: Case) -> dict[str, float | int | bool]:
    """Measure one case in this process (meant to be a fresh subprocess)."""
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    backward = case.mode == "fwd+bwd"

    def call(q: Tensor, k: Tensor, v: Tensor) -> None:
        if case.path == "fused":  # guaranteed FlashAttention: raises if it cannot serve it
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                call_attention(q, k, v, path=case.path, mode=case.mode, causal=args.causal)
        else:
            call_attention(q, k, v, path=case.path, mode=case.mode, causal=args.causal)

    # Initialise kernels, thread pools and lazy state at a tiny size, then drop it.
    call(*make_inputs(args, min(WARMUP_LEN, case.n), backward))
    q, k, v = make_inputs(args, case.n, backward)
    release_free_heap()
    peak_was_reset = reset_peak_rss()
    baseline = current_rss_bytes()
    call(q, k, v)  # the memory measurement (it also serves as the first warm-up call)
    extra = peak_rss_bytes() - baseline

    for _ in range(args.warmup):
        call(q, k, v)
    times: list[float] = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        call(q, k, v)
        times.append(time.perf_counter() - start)
    return {
        "ms": statistics.median(times) * 1e3,
        "extra_bytes": max(extra, 0),
        "peak_reset": peak_was_reset,
    }


def _child_argv(args: argparse.Namespace, case: Case) -> list[str]:
    argv = [
        sys.executable,
        os.path.abspath(__file__),
        "--one",
        f"{case.path}:{case.mode}:{case.n}",
        "--batch",
        str(args.batch),
        "--heads",
        str(args.heads),
        "--head-dim",
        str(args.head_dim),
        "--dtype",
        args.dtype,
        "--repeats",
        str(args.repeats),
        "--warmup",
        str(args.warmup),
        "--causal" if args.causal else "--no-causal",
    ]
    if args.threads is not None:
        argv += ["--threads", str(args.threads)]
    return argv


def spawn_case(args: argparse.Namespace, case: Case) -> Result:
    """Run one case in a fresh Python process and parse its JSON result."""
    proc = subprocess.run(_child_argv(args, case), capture_output=True, text=True, check=False)
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            data = json.loads(line[len(RESULT_TAG) :])
            note = "" if data["peak_reset"] else "peak not resettable: upper bound"
            return Result(ms=float(data["ms"]), extra_bytes=int(data["extra_bytes"]), note=note)
    last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
    print(f"  {case}: failed (exit {proc.returncode}): {last}", file=sys.stderr)
    return Result(note=f"failed (exit {proc.returncode})")


# --------------------------------------------------------------------------- report


def explicit_estimate_bytes(args: argparse.Namespace, n: int, mode: str) -> float:
    """Rough peak memory of the explicit path: a few fp32 ``(B, H, n, n)`` score buffers."""
    return args.batch * args.heads * n * n * 4 * EXPLICIT_SCORE_COPIES[mode]


def confirm_flash(args: argparse.Namespace) -> str | None:
    """Run one small fused fwd+bwd call restricted to FlashAttention; the error if it fails."""
    q, k, v = make_inputs(args, 128, requires_grad=True)
    try:
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            out = attention(q, k, v, is_causal=args.causal).output
            out.sum().backward()
    except RuntimeError as err:
        return str(err).strip().splitlines()[0]
    return None


def _ms(r: Result) -> str:
    return f"{r.ms:.2f}" if r.ms is not None else r.note


def _mb(r: Result) -> str:
    if r.extra_bytes is None:
        return "—"
    star = "*" if r.note else ""
    return f"{r.extra_bytes / MIB:.1f}{star}"


def _mib(r: Result) -> float | None:
    return None if r.extra_bytes is None else r.extra_bytes / MIB


def _speedup(fused: Result, explicit: Result) -> float | None:
    if fused.ms is None or explicit.ms is None or fused.ms <= 0:
        return None
    return explicit.ms / fused.ms


def growth_line(
    label: str, results: dict[tuple[str, str, int], Result], path: str, mode: str
) -> tuple[str, float | None]:
    """Memory growth from the smallest to the largest measured length, and its exponent."""
    measured = [
        (n, r.extra_bytes)
        for (p, m, n), r in sorted(results.items(), key=lambda item: item[0][2])
        if p == path and m == mode and r.extra_bytes is not None
    ]
    if len(measured) < 2:
        return f"{label} {mode}: fewer than two lengths measured", None
    (n0, m0), (n1, m1) = measured[0], measured[-1]
    length_ratio = n1 / n0
    if m0 <= 0:
        return f"{label} {mode}: zero extra memory at n={n0}, ratio undefined", None
    mem_ratio = m1 / m0
    exponent = math.log(mem_ratio) / math.log(length_ratio)
    line = (
        f"{label} {mode} memory grew {mem_ratio:.1f}x for {length_ratio:g}x length "
        f"(n={n0}..{n1}; linear would be {length_ratio:g}x, quadratic "
        f"{length_ratio**2:g}x; growth exponent {exponent:.2f})"
    )
    return line, exponent


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.one is not None:
        path, mode, n = args.one.split(":")
        if path not in PATHS or mode not in MODES:
            raise SystemExit(f"--one expects PATH:MODE:N with PATH in {PATHS}, MODE in {MODES}")
        data = run_case(args, Case(path=path, mode=mode, n=int(n)))
        print(RESULT_TAG + json.dumps(data), flush=True)
        return 0

    run = _harness.start("attention", args)  # --threads applied here
    flash_error = confirm_flash(args)
    print("# Attention benchmark: fused (FlashAttention) vs explicit, CPU\n")
    print(
        f"- torch {torch.__version__}, threads {torch.get_num_threads()}, "
        f"CPU: {_harness.cpu_model()}"
    )
    print(
        f"- B={args.batch}, H={args.heads}, Dh={args.head_dim}, dtype {args.dtype}, "
        f"causal {args.causal}, median of {args.repeats} after {args.warmup} warm-up"
    )
    print(
        "- flash kernel: "
        + ("confirmed (sdpa_kernel(FLASH_ATTENTION) fwd+bwd ran)" if flash_error is None else "")
        + (f"NOT available: {flash_error}" if flash_error is not None else "")
    )
    print(
        "- memory: each case in a fresh subprocess; extra peak = peak RSS (VmHWM, reset via "
        "/proc/self/clear_refs) during the first full-size call minus RSS just before it "
        "(inputs allocated, kernels warmed up, malloc_trim). Includes the outputs (and "
        "weights), and for fwd+bwd the q/k/v gradients. MB = 2^20 bytes, GB = 2^30 bytes."
    )
    print(
        f"- explicit path skipped for n > {args.explicit_max} or estimated memory > "
        f"{args.mem_limit_gb:g} GB (estimate: B*H*n^2*4 bytes x "
        f"{EXPLICIT_SCORE_COPIES['fwd']:g} fwd / {EXPLICIT_SCORE_COPIES['fwd+bwd']:g} fwd+bwd)\n"
    )
    if flash_error is not None:
        print("FlashAttention cannot serve this configuration; fused numbers would be invalid.")
        return 1
    sys.stdout.flush()  # header before the progress lines on stderr

    results: dict[tuple[str, str, int], Result] = {}
    for n in args.lengths:
        for mode in MODES:
            for path in PATHS:
                estimate_gb = explicit_estimate_bytes(args, n, mode) / GIB
                too_long = n > args.explicit_max
                if path == "explicit" and (too_long or estimate_gb > args.mem_limit_gb):
                    why = f"n > {args.explicit_max}" if too_long else f"> {args.mem_limit_gb:g} GB"
                    results[path, mode, n] = Result(
                        note=f"skipped (n^2 memory: {estimate_gb:.3g} GB; {why})"
                    )
                    continue
                print(f"running {path} {mode} n={n} ...", file=sys.stderr, flush=True)
                results[path, mode, n] = spawn_case(args, Case(path=path, mode=mode, n=n))

    header = (
        "n",
        "mode",
        "fused time ms",
        "explicit time ms",
        "speedup (explicit/fused)",
        "fused extra peak MB",
        "explicit extra peak MB",
    )
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" if i != 1 else "---" for i in range(len(header))) + "|")
    for n in args.lengths:
        for mode in MODES:
            fused, explicit = results["fused", mode, n], results["explicit", mode, n]
            speedup = _speedup(fused, explicit)
            cells = (
                str(n),
                mode,
                _ms(fused),
                _ms(explicit),
                f"{speedup:.2f}x" if speedup is not None else "—",
                _mb(fused),
                _mb(explicit),
            )
            print("| " + " | ".join(cells) + " |")
            run.row(
                "time and extra peak memory",
                {
                    "n": n,
                    "mode": mode,
                    "fused time": fused.ms,
                    "explicit time": explicit.ms,
                    "speedup (explicit/fused)": speedup,
                    "fused extra peak": _mib(fused),
                    "explicit extra peak": _mib(explicit),
                    "note": "; ".join(r.note for r in (fused, explicit) if r.note),
                },
                units={"fused time": "ms", "explicit time": "ms"}
                | {"fused extra peak": "MiB", "explicit extra peak": "MiB"},
            )
    if any(r.note.startswith("peak not") for r in results.values()):
        print("\n\\* peak RSS could not be reset before the call; the value is an upper bound.")

    print("\n## Summary\n")
    for mode in MODES:
        speedup = _speedup(
            results.get(("fused", mode, SPEEDUP_TARGET_LEN), Result()),
            results.get(("explicit", mode, SPEEDUP_TARGET_LEN), Result()),
        )
        verdict = (
            f"{speedup:.2f}x -> {'PASS' if speedup >= SPEEDUP_TARGET else 'FAIL'}"
            if speedup is not None
            else "not measured"
        )
        summary = (
            f"speedup at n={SPEEDUP_TARGET_LEN} {mode}: {verdict} "
            f"(target: fused >= {SPEEDUP_TARGET:g}x faster than explicit at "
            f"n={SPEEDUP_TARGET_LEN})"
        )
        print(f"- {summary}")
        run.note(summary)
    for mode in MODES:
        line, exponent = growth_line("fused", results, "fused", mode)
        verdict = (
            f" -> {'PASS' if exponent <= LINEAR_EXPONENT_MAX else 'FAIL'} (target: fused "
            f"memory linear in n, growth exponent <= {LINEAR_EXPONENT_MAX:g})"
            if exponent is not None
            else ""
        )
        print(f"- {line}{verdict}")
        run.note(line + verdict)
    for mode in MODES:
        line, _ = growth_line("explicit", results, "explicit", mode)
        print(f"- {line}")
        run.note(line)
    run.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
