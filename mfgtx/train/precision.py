"""Choosing the training precision: what the hardware could run fast, then what runs fastest.

``precision="auto"`` is decided in two stages. Where bf16 cannot be fast (a CPU without AMX
or AVX512-BF16: bf16 autocast is several times slower than fp32 there), it is fp32 with no
timing. Where it could be (CUDA with bf16, AMX or AVX512-BF16 CPUs), :func:`mfgtx.train.fit`
times a few training steps of each precision on a copy of the model and picks the faster
(:func:`choose_precision`): a model of many small operations can still lose more to
autocast's casts than it gains from bf16 matrix products. bf16 must win by more than
:data:`MARGIN` of fp32's step time, so that close timings do not make the choice flip from
one run to the next.
"""

from __future__ import annotations

import logging
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import torch

from mfgtx.train.config import Precision

__all__ = [
    "PrecisionChoice",
    "bf16_could_be_fast",
    "choose_precision",
    "cpu_has_fast_bf16",
    "resolve_precision",
]

log = logging.getLogger(__name__)

PRECISIONS: tuple[str, ...] = ("fp32", "bf16")
_clock: Callable[[], float] = time.perf_counter  # the default clock of choose_precision


def cpu_has_fast_bf16(cpuinfo: str | None = None) -> bool:
    """True when the CPU advertises AMX or AVX512-BF16 (Linux ``/proc/cpuinfo`` flags).

    >>> cpu_has_fast_bf16("flags : fpu avx2 amx_bf16 amx_tile")
    True
    >>> cpu_has_fast_bf16("flags : fpu avx avx2")
    False
    """
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return False
    flags = set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            flags.update(line.split(":", 1)[1].split())
    return bool(flags & {"amx_bf16", "avx512_bf16"})


def bf16_could_be_fast(device: torch.device) -> bool:
    """Whether ``device`` has bf16 hardware worth timing: CUDA with bf16, AMX/AVX512-BF16."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type == "cpu":
        return cpu_has_fast_bf16()
    return False


def resolve_precision(precision: Precision, device: torch.device) -> str:
    """``"fp32"`` or ``"bf16"`` from the hardware alone (no timing).

    ``"auto"`` gives ``"bf16"`` where :func:`bf16_could_be_fast`, which :func:`mfgtx.train.fit`
    then checks by timing (:func:`choose_precision`); ``"bf16"`` on hardware without fast
    bf16 logs a warning and is kept.
    """
    if precision == "fp32":
        return "fp32"
    fast = bf16_could_be_fast(device)
    if precision == "bf16":
        if not fast:
            log.warning("bf16 requested on %s without fast bf16 support; it may be slow", device)
        return "bf16"
    return "bf16" if fast else "fp32"


class PrecisionChoice(NamedTuple):
    """The faster precision and the median seconds per step of each one timed."""

    precision: str
    seconds: dict[str, float]


#: bf16 must beat fp32 by this share of fp32's step time to be chosen: with closer timings
#: the choice would flip from run to run with the machine's load, for a gain of a few percent.
MARGIN = 0.1


def fastest(seconds: dict[str, float], margin: float = MARGIN) -> str:
    """The precision with the fewest seconds per step; fp32 unless another one is faster
    by more than ``margin`` of fp32's time (fp32 has no casts and is exact).

    >>> fastest({"fp32": 0.5, "bf16": 0.2})
    'bf16'
    >>> fastest({"fp32": 0.5, "bf16": 0.47})  # 6 % faster: within the margin
    'fp32'
    """
    if "fp32" not in seconds:
        return min(seconds, key=lambda p: (seconds[p], PRECISIONS.index(p)))
    bar = seconds["fp32"] * (1.0 - margin)
    faster = {p: t for p, t in seconds.items() if p != "fp32" and t < bar}
    return min(faster, key=faster.__getitem__) if faster else "fp32"


def choose_precision(
    step: Callable[[str], None],
    *,
    candidates: Sequence[str] = PRECISIONS,
    warmup: int = 1,
    repeats: int = 3,
    clock: Callable[[], float] | None = None,
) -> PrecisionChoice:
    """Time ``step(precision)`` for each candidate and return the fastest.

    Each round runs one step of every candidate in turn, so that load from other processes
    hits all of them alike; the first ``warmup`` rounds are not timed (first-call costs:
    kernel selection, autocast's weight casts, allocator growth). The caller makes ``step``
    harmless (a copy of the model, its own optimizer) and synchronises the device inside it.

    Args:
        step: runs one full training step (forward, backward, optimizer) in a precision.
        candidates: precisions to compare.
        warmup: untimed rounds.
        repeats: timed rounds; the median counts.
        clock: seconds as a float (default :func:`time.perf_counter`); injectable for tests.

    Returns:
        :class:`PrecisionChoice` with the fastest precision and every median.

    Example:
        >>> cost = {"fp32": 3, "bf16": 1}
        >>> now = [0.0]
        >>> def step(p):
        ...     now[0] += cost[p]
        >>> choose_precision(step, clock=lambda: now[0])
        PrecisionChoice(precision='bf16', seconds={'fp32': 3.0, 'bf16': 1.0})
    """
    if not candidates:
        raise ValueError("choose_precision needs at least one candidate precision")
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, found {repeats}, {warmup}")
    clock = clock or _clock
    times: dict[str, list[float]] = {p: [] for p in candidates}
    for r in range(warmup + repeats):
        for p in candidates:
            t0 = clock()
            step(p)
            if r >= warmup:
                times[p].append(clock() - t0)
    seconds = {p: float(statistics.median(ts)) for p, ts in times.items()}
    return PrecisionChoice(fastest(seconds), seconds)
