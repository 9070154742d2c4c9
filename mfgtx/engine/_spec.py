"""Where a job's independent tasks run (:class:`EngineSpec`), and the error of one that failed."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["EngineError", "EngineSpec"]

_NAMES = ("local", "ray")


class EngineError(RuntimeError):
    """A task run by an engine failed (the message names the task, e.g. an ensemble member
    and its lots, and gives its error), or the engine could not be started.

    The error of a failed task (:meth:`of`) is also an instance of the task's own error's
    class where Python allows it (as Ray's ``RayTaskError`` is), so that whoever handled
    that error before still does: a member's ``ValueError`` is still a setting to fix, its
    ``KeyboardInterrupt``-free stop still a stop. The task's error is its ``__cause__``.

    Example:
        >>> err = EngineError.of("ensemble member 2", KeyError("lot L7"))
        >>> isinstance(err, EngineError), isinstance(err, KeyError), str(err)
        (True, True, "ensemble member 2 failed: 'lot L7'")
    """

    @classmethod
    def of(cls, task: str, cause: BaseException) -> EngineError:
        """The error of the task named ``task`` that raised ``cause`` (chained as its
        ``__cause__``; attributes of ``cause`` copied)."""
        message = f"{task} failed: {cause}"
        kind = _failed_as(type(cause))
        err = kind(message)
        try:
            err.__dict__.update(vars(cause))
        except TypeError:  # pragma: no cover - an error without a __dict__
            pass
        err.__cause__ = cause
        return err

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""

    def __reduce__(self) -> tuple[Any, ...]:  # crosses processes as a plain EngineError
        return (EngineError, (str(self),))


#: The classes :func:`_failed_as` made, by the error class they also are.
_FAILED_AS: dict[type[BaseException], type[EngineError]] = {}


def _failed_as(base: type[BaseException]) -> type[EngineError]:
    """An :class:`EngineError` class that is also a ``base``, or :class:`EngineError` where
    the two cannot be combined (a base that needs more than a message to be made)."""
    if base not in _FAILED_AS:
        _FAILED_AS[base] = _combined(base)
    return _FAILED_AS[base]


def _combined(base: type[BaseException]) -> type[EngineError]:
    if issubclass(base, EngineError) or not issubclass(base, Exception):
        return EngineError
    try:
        kind = type(f"EngineError[{base.__qualname__}]", (EngineError, base), {})
    except TypeError:
        return EngineError
    kind.__module__ = EngineError.__module__
    try:
        kind("probe")  # a base whose __new__/__init__ needs more than a message
    except Exception:
        return EngineError
    return kind


@dataclass(frozen=True)
class EngineSpec:
    """Where the independent tasks of a job (ensemble members, sweep trials, score
    partitions) run.

    Attributes:
        name: ``local`` (in this process, one after another) or ``ray`` (as Ray tasks).
        address: the Ray cluster to join (``ray://head:10001``, ``auto``, ``head:6379``);
            ``None``: start Ray on this machine (when it is not running already).
        workers: tasks run at once; ``None``: as many as the cluster offers (``ray``) or one
            (``local``).
        threads: torch threads per task; ``None``: torch's default in process, 1 on Ray.
        ddp: train one model (no ensemble, no sweep) data-parallel over this many Ray Train
            workers, each with ``threads`` torch threads; ``None``: no data-parallel run.
        turn_seconds: on Ray, an ensemble member trains in turns of whole epochs, each turn
            ending after the first epoch that ends this many seconds after the turn began
            (its checkpoint written), and then waits at the back of the queue for its next
            turn: the members share the workers, so none trains alone at the end while the
            others wait done (``0``: a turn per epoch). ``None``: each member trains to its
            end in one task. The weights are the same either way (a turn resumes exactly).

    Raises:
        ValueError: a name, address, worker, thread or process count that cannot be used, or
            ``ddp`` without Ray (in words).

    Example:
        >>> EngineSpec("ray", workers=2).workers
        2
        >>> EngineSpec("local", workers=2)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: workers: the local engine runs one task at a time in this process, ...
    """

    name: Literal["local", "ray"] = "local"
    address: str | None = None
    workers: int | None = None
    threads: int | None = None
    ddp: int | None = None
    turn_seconds: float | None = 60.0

    def __post_init__(self) -> None:
        if self.name not in _NAMES:
            raise ValueError(f"engine: {self.name!r} is not an engine; use one of {list(_NAMES)}")
        if self.address is not None:
            if not isinstance(self.address, str) or not self.address.strip():
                raise ValueError(
                    f"address: expected the address of a Ray cluster (e.g. ray://head:10001 or "
                    f"auto), found {self.address!r}"
                )
            if self.name != "ray":
                raise ValueError(
                    f"address: {self.address!r} is the address of a Ray cluster, and the engine "
                    f"is {self.name}; use engine ray (--engine ray) to run on it"
                )
        for key in ("workers", "threads", "ddp"):
            value = getattr(self, key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}: expected a whole number of at least 1, found {value!r}")
        turn = self.turn_seconds
        if turn is not None and (
            isinstance(turn, bool) or not isinstance(turn, int | float) or not turn >= 0
        ):
            raise ValueError(
                f"turn_seconds: expected seconds of at least 0 (or none: no turns), found {turn!r}"
            )
        if self.name == "local" and self.workers is not None and self.workers > 1:
            raise ValueError(
                f"workers: the local engine runs one task at a time in this process, and "
                f"{self.workers} were asked; use engine ray (--engine ray) to run "
                f"{self.workers} at once"
            )
        if self.name == "local" and self.ddp is not None:
            raise ValueError(
                f"ddp: {self.ddp} processes training one model together run as Ray Train "
                f"workers, and the engine is local; use engine ray (--engine ray --ddp "
                f"{self.ddp}), or torchrun with the local engine"
            )

    @property
    def task_threads(self) -> int | None:
        """Torch threads each task sets: ``threads``, else 1 on Ray, else torch's default
        (``None``: left as it is)."""
        if self.threads is not None:
            return self.threads
        return 1 if self.name == "ray" else None
