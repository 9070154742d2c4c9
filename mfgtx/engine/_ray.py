"""The Ray engine: each item one Ray task, ``workers`` at most at once, each declaring the
CPUs (torch threads) it uses; large shared objects put in Ray's object store once.

Ray is imported only when a Ray engine is opened (:func:`mfgtx.engine.open_engine`): the
rest of mfgtx runs without it. Every node must import the same mfgtx (and read the same data
paths); tasks travel by reference to their module-level functions.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from mfgtx.engine._local import task_names
from mfgtx.engine._spec import EngineError, EngineSpec
from mfgtx.engine._task import Again, run_task

__all__ = ["RayEngine"]

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")

#: How often Ray runs a task again after its worker process died (not after an error the
#: task raised itself: that fails the job at once).
RETRIES = 3


class RayEngine:
    """Runs ``fn(item, **shared)`` for each item as a Ray task on a running Ray (open it with
    :func:`mfgtx.engine.open_engine`, which starts or joins Ray and leaves it as found).

    Each task declares ``num_cpus=threads`` (1 by default) and runs with that many torch
    threads; at most ``workers`` run at once (``None``: as many as the cluster fits). A task
    whose worker dies (killed, out of memory, node lost) is run again up to :data:`RETRIES`
    times; a task that raises fails the map: the others are cancelled, their worker
    processes ended (never reused half-way through an import), and :class:`EngineError`
    names the task. A task that returns :class:`~mfgtx.engine.Again` goes to the back of the
    queue with its next turn's item.
    """

    def __init__(self, spec: EngineSpec) -> None:
        if spec.name != "ray":
            raise ValueError(f"RayEngine runs the ray engine, not {spec.name}")
        self.spec = spec

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[T],
        *,
        shared: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
    ) -> list[R]:
        """``[fn(item, **shared) for item in items]``, as Ray tasks, results in item order.

        Raises:
            EngineError: a task failed (the message names it and gives its error) or its
                worker died more than :data:`RETRIES` times.
        """
        import ray

        labels = task_names(items, names)
        if not items:
            return []
        threads = self.spec.task_threads or 1
        task: Any = ray.remote(run_task).options(
            num_cpus=threads, max_retries=RETRIES, retry_exceptions=False, name="mfgtx-task"
        )
        # Put once, pass the reference to every task: a top-level ObjectRef argument reaches
        # the task as its value, fetched once per node rather than sent once per item.
        shared_ref = ray.put(dict(shared or {}))
        limit = self.spec.workers or len(items)
        pending: dict[Any, int] = {}
        results: dict[int, R] = {}
        now = list(items)  # each task's item for its next turn
        queue = list(range(len(items)))
        try:
            while queue or pending:
                while queue and len(pending) < limit:
                    i = queue.pop(0)
                    pending[task.remote(fn, now[i], threads, shared_ref)] = i
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.cause if exc.cause is not None else exc
                        raise EngineError.of(labels[i], cause) from cause
                    except ray.exceptions.RayError as exc:
                        raise EngineError(
                            f"{labels[i]} failed: its Ray worker was lost ({exc}) after "
                            f"{RETRIES} retries"
                        ) from exc
                    if isinstance(result, Again):
                        log.info("%s: turn ended; back in the queue", labels[i])
                        now[i] = result.item
                        queue.append(i)
                    else:
                        results[i] = result
        finally:
            # force=True ends the worker process, not only the task: a task interrupted while
            # it imports (torch imports torch._dynamo lazily, for seconds) leaves half-loaded
            # modules behind, and the next task Ray gave that worker failed on them.
            for ref in pending:
                ray.cancel(ref, force=True)
        return [results[i] for i in range(len(items))]
