"""Choosing the training precision from what the hardware runs fast."""

from __future__ import annotations

import logging
from pathlib import Path

import torch

from mfgtx.train.config import Precision

__all__ = ["cpu_has_fast_bf16", "resolve_precision"]

log = logging.getLogger(__name__)


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


def resolve_precision(precision: Precision, device: torch.device) -> str:
    """``"fp32"`` or ``"bf16"``: what will actually run for ``precision`` on ``device``."""
    if precision == "fp32":
        return "fp32"
    if device.type == "cuda":
        fast = torch.cuda.is_bf16_supported()
    elif device.type == "cpu":
        fast = cpu_has_fast_bf16()
    else:
        fast = False
    if precision == "bf16":
        if not fast:
            log.warning("bf16 requested on %s without fast bf16 support; it may be slow", device)
        return "bf16"
    return "bf16" if fast else "fp32"
