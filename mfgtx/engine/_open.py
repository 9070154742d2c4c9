"""Opening an engine: the local one, or Ray started on this machine or joined at an address,
shut down afterwards only if it was started here."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol, TypeVar

from mfgtx._signals import restore_handlers, stop_handlers
from mfgtx.engine._local import LocalEngine
from mfgtx.engine._spec import EngineError, EngineSpec

__all__ = ["Engine", "open_engine"]

log = logging.getLogger(__name__)

R = TypeVar("R")
T = TypeVar("T")


class Engine(Protocol):
    """What runs a job's independent tasks (:class:`LocalEngine`, the Ray engine)."""

    spec: EngineSpec

    def map(
        self,
        fn: Callable[..., R],
        items: Sequence[T],
        *,
        shared: Mapping[str, Any] | None = None,
        names: Sequence[str] | None = None,
    ) -> list[R]:
        """``fn(item, **shared)`` for each item, results in item order; ``shared`` is sent
        once, not once per item; ``fn`` a module-level function. The first failure raises
        :class:`EngineError` naming the item (``names``, one per item)."""
        ...


@contextmanager
def open_engine(spec: EngineSpec | None = None) -> Iterator[Engine]:
    """The engine ``spec`` names, open for the ``with`` block.

    ``ray``: joins the running Ray if this process has one, else ``ray.init(address)``
    (no address: a Ray of its own starts on this machine, ``address="local"``, with
    ``workers x threads`` CPUs or all of them; never one another user started) and shuts it
    down on leaving the block; a Ray it did not start is left running. Either way the
    process's stop-signal handlers are left as they were (Ray's start takes SIGTERM).

    Raises:
        EngineError: Ray is not installed (``pip install mfgtx[ray]``) or cannot be reached.

    Example:
        >>> with open_engine(EngineSpec()) as engine:
        ...     engine.map(abs, [-1, 2])
        [1, 2]
    """
    spec = spec if spec is not None else EngineSpec()
    if spec.name == "local":
        yield LocalEngine(spec)
        return
    try:
        import ray
    except ImportError as exc:
        raise EngineError(
            "engine ray: Ray is not installed in this Python; install it with "
            "pip install 'mfgtx[ray]' (or run with --engine local)"
        ) from exc
    from mfgtx.engine._ray import RayEngine

    started = False
    if not ray.is_initialized():
        cpus = None
        if spec.address is None and spec.workers is not None:
            cpus = spec.workers * (spec.task_threads or 1)
        handlers = stop_handlers()
        try:
            ray.init(
                # no address: a Ray of its own, never one another user started on this machine
                address=spec.address or "local",
                num_cpus=cpus,
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            where = spec.address or "this machine"
            raise EngineError(
                f"engine ray: could not start or reach Ray at {where}: {exc}"
            ) from exc
        finally:
            restore_handlers(handlers)  # ray.init takes SIGTERM for itself: the job's stop stays
        started = True
        log.info("started Ray (%s)", spec.address or "on this machine")
    try:
        yield RayEngine(spec)
    finally:
        if started:
            handlers = stop_handlers()
            ray.shutdown()
            restore_handlers(handlers)
