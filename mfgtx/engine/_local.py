"""The local engine: every task in this process, one after another, in item order."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from mfgtx.engine._spec import EngineError, EngineSpec
from mfgtx.engine._task import Again, run_task

__all__ = ["LocalEngine", "task_names"]

R = TypeVar("R")
T = TypeVar("T")


def task_names(items: Sequence[Any], names: Sequence[str] | None) -> list[str]:
    """One name per item for messages: ``names`` as given, else ``task 0``, ``task 1`` ...

    Raises:
        ValueError: ``names`` does not give one name per item.
    """
    if names is None:
        return [f"task {i}" for i in range(len(items))]
    if len(names) != len(items):
        raise ValueError(f"names: {len(names)} names for {len(items)} tasks; give one per task")
    return list(names)


class LocalEngine:
    """Runs ``fn(item, **shared)`` for each item in this process, in order: exactly what a
    ``for`` loop over the items does, with each task's torch threads set while it runs (a
    task that returns :class:`~mfgtx.engine.Again` runs its next turn at once).

    Example:
        >>> from mfgtx.engine import EngineSpec
        >>> LocalEngine(EngineSpec()).map(pow, [1, 2, 3], shared={"exp": 2})
        [1, 4, 9]
    """

    def __init__(self, spec: EngineSpec | None = None) -> None:
        self.spec = spec if spec is not None else EngineSpec()
        if self.spec.name != "local":
            raise ValueError(f"LocalEngine runs the local engine, not {self.spec.name}")

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[T],
        *,
        shared: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
    ) -> list[R]:
        """``[fn(item, **shared) for item in items]``.

        Raises:
            EngineError: a task failed; the message names it (``names``) and gives its error,
                which is chained as the cause and whose class it also is
                (:meth:`EngineError.of`). The tasks after it do not run.
        """
        labels = task_names(items, names)
        kwargs = dict(shared or {})
        out: list[R] = []
        for label, item in zip(labels, items, strict=True):
            try:
                result = run_task(fn, item, self.spec.task_threads, kwargs)
                while isinstance(result, Again):
                    result = run_task(fn, result.item, self.spec.task_threads, kwargs)
                out.append(result)
            except Exception as exc:
                raise EngineError.of(label, exc) from exc
        return out
