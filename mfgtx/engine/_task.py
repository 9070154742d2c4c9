"""One task as every engine runs it: ``fn(item, **shared)`` with the task's torch threads set
for its duration and restored afterwards (a worker process, or this one, is left as found);
and :class:`Again`, the result of a task that has more turns to run."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import torch

__all__ = ["Again", "run_task"]

R = TypeVar("R")


@dataclass(frozen=True)
class Again:
    """What a task returns to be run once more, as ``fn(item, **shared)``: its next turn.
    An engine puts ``item`` at the back of its queue, so that the tasks take turns on the
    workers; the task's result is that of its last turn.

    Example:
        >>> from mfgtx.engine import LocalEngine
        >>> def count_to_three(n):
        ...     return Again(n + 1) if n < 3 else n
        >>> LocalEngine().map(count_to_three, [0, 5])
        [3, 5]
    """

    item: Any


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
