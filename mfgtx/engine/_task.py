"""One task as every engine runs it: ``fn(item, **shared)`` with the task's torch threads set
for its duration and restored afterwards (a worker process, or this one, is left as found)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import torch

__all__ = ["run_task"]

R = TypeVar("R")


def run_task(fn: Callable[..., R], item: Any, threads: int | None, shared: Mapping[str, Any]) -> R:
    """``fn(item, **shared)`` with ``torch.set_num_threads(threads)`` while it runs
    (``None``: the threads as they are)."""
    if threads is None:
        return fn(item, **shared)
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return fn(item, **shared)
    finally:
        torch.set_num_threads(before)
