"""Where a job's independent tasks run: in this process, or as Ray tasks on a cluster.

A job (an ensemble's members, a sweep's trials, a score's partitions) opens an engine with
:func:`open_engine` and hands it a module-level function and the items:
``engine.map(fn, items, shared={...})`` runs ``fn(item, **shared)`` for each and gives the
results in item order. A task may return :class:`Again` with its next turn's item, to let
the other tasks run in between (an ensemble member trains in turns). The local engine is a
``for`` loop; the Ray engine gives the same results with the tasks spread over Ray workers.
Ray is imported only when a Ray engine is opened (the ``mfgtx[ray]`` extra).

This package sits below the kinds and the jobs and imports nothing of mfgtx.

Example:
    >>> with open_engine(EngineSpec("local")) as engine:
    ...     engine.map(pow, [7, 9], shared={"exp": 2})
    [49, 81]
"""

from __future__ import annotations

from mfgtx.engine._local import LocalEngine
from mfgtx.engine._open import Engine, open_engine
from mfgtx.engine._spec import EngineError, EngineSpec
from mfgtx.engine._task import Again

__all__ = ["Again", "Engine", "EngineError", "EngineSpec", "LocalEngine", "open_engine"]
