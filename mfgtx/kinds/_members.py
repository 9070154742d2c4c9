"""An ensemble's members as tasks of an engine (:mod:`mfgtx.engine`): what each member is
(:class:`Member`: its lots, seed, checkpoint folder), how it is named in an error, and how
the members run (:func:`run_members`): one after another in this process (the local
engine, exactly the loop it replaces), or at once as Ray tasks with the same seeds, so the
same weights. On Ray a member trains in turns (:attr:`~mfgtx.engine.EngineSpec.turn_seconds`,
:func:`end_turn`): each turn resumes from the member's checkpoint where the last one ended,
so the members share the workers to the end instead of the last one training alone.

A member's task is a module-level function of its kind (``fn(member, **shared)``): the
windows and the rest of what every member shares travel once (``shared``), the member
itself (indices, config) once per task.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from mfgtx.engine import Again, Engine, LocalEngine
from mfgtx.engine._task import run_task
from mfgtx.kinds._fitting import member_config
from mfgtx.kinds._job import FitRequest

__all__ = ["Member", "end_turn", "member_names", "members_of", "run_members", "start_member"]

log = logging.getLogger(__name__)

R = TypeVar("R")

#: The file in a member's checkpoint folder naming the run that started it (Ray engine
#: only): a task that finds its own run's name there is a retry after its worker died and
#: resumes from the member's checkpoint.
ATTEMPT = "attempt"


@dataclass(frozen=True)
class Member:
    """One model to train: ensemble member ``k`` (``None``: the job's one model).

    Attributes:
        k: the member's number (its seed is the job's ``seed + k``), or ``None``.
        fit_on, val: ``(n,)`` indices of its training and validation windows.
        train: its :class:`~mfgtx.train.TrainConfig` (own seed and checkpoint folder).
        run_key: what its weights depend on (the job's, with ``member: k``).
        attempt: the run's name, written beside its checkpoints so that a task run again
            after its worker died resumes (``None``: in this process, never run again).
        turn_seconds: train in turns of about this many seconds (``fit(turn_seconds=)``);
            ``None``: in one task.
        resumed_from: the epochs its first turn resumed from (what the job reports).
        epochs: the epochs its earlier turns trained (``0``: its first turn; a later turn
            resumes).
    """

    k: int | None
    fit_on: np.ndarray
    val: np.ndarray
    train: Any
    run_key: dict[str, Any] | None
    attempt: str | None = None
    turn_seconds: float | None = None
    resumed_from: int = 0
    epochs: int = 0


def run_name(engine: Any) -> str | None:
    """A new name for this run's tasks on an engine that runs a task again after its worker
    died (not the local one, ``None``), for :func:`resume_on_retry`; ``None`` otherwise."""
    remote = engine is not None and engine.spec.name != "local"
    return uuid.uuid4().hex if remote else None


def members_of(
    request: FitRequest[Any], splits: Sequence[tuple[np.ndarray, np.ndarray]]
) -> list[Member]:
    """One :class:`Member` per ``(fit_on, val)`` split: each member's seed and checkpoint
    folder (:func:`~mfgtx.kinds._fitting.member_config`) and run key, as the loop over the
    splits had them; on another engine than the local one, the run's name for a retry and
    the engine's turns (an ensemble's members with a checkpoint folder only)."""
    members = request.members
    attempt = run_name(request.engine)
    turns = None
    engine = request.engine
    if engine is not None and attempt is not None and members and request.train.checkpoint_dir:
        turns = engine.spec.turn_seconds
    out = []
    for k, (fit_on, val) in enumerate(splits):
        train = member_config(request.train, k) if members else request.train
        key = {**(request.run_key or {}), "member": k} if members else request.run_key
        out.append(Member(k if members else None, fit_on, val, train, key, attempt, turns))
    return out


def member_names(lots: np.ndarray, members: Sequence[Member], shown: int = 5) -> list[str]:
    """How an error names each member: ``ensemble member 2 (validation lots L07, L12, ...)``
    (``lots``: ``(N,)`` the lot of each window)."""
    out = []
    for m in members:
        val = [str(x) for x in dict.fromkeys(lots[m.val].tolist())]
        more = f", ... {len(val) - shown} more" if len(val) > shown else ""
        which = f"ensemble member {m.k}" if m.k is not None else "the model"
        out.append(f"{which} (validation lots {', '.join(val[:shown])}{more})")
    return out


def start_member(member: Member) -> Any:
    """The member's training config as its task starts: a later turn resumes from its
    checkpoint; a first one as :func:`resume_on_retry` says."""
    if member.epochs > 0:
        return replace(member.train, resume=True)
    who = "the model" if member.k is None else f"ensemble member {member.k}"
    return resume_on_retry(member.train, member.attempt, who)


def end_turn(member: Member, model: Any, result: Any) -> Any:
    """What a member's task returns after ``fit`` (``result``, a
    :class:`~mfgtx.train.FitResult`): :class:`~mfgtx.engine.Again` with its next turn when
    the turn ended with training still to go (``result.paused``), else ``(model, result)``
    with the epochs its first turn resumed from.

    Raises:
        RuntimeError: a turn ended without training past where the last one ended (its
            checkpoint was not resumed): its turns would never end.
    """
    if result.paused:
        done = len(result.history)
        if done <= member.epochs:
            raise RuntimeError(
                f"a turn ended after epoch {done}, where the member's last turn ended "
                f"({member.epochs}): its checkpoint was not resumed"
            )
        first = result.resumed_from_epoch if member.epochs == 0 else member.resumed_from
        return Again(replace(member, resumed_from=first, epochs=done))
    if member.epochs > 0:
        result = replace(result, resumed_from_epoch=member.resumed_from)
    return model, result


def resume_on_retry(train: Any, attempt: str | None, who: str) -> Any:
    """``train`` (a :class:`~mfgtx.train.TrainConfig`) as a task of run ``attempt`` starts:
    on a retry of the same run (its checkpoint folder names this run, :data:`ATTEMPT`) it
    resumes from the last checkpoint there; a first attempt writes the run's name there
    first. ``attempt`` ``None`` (in this process, never run again), no checkpoint folder or
    a resume asked already: ``train`` as it is. ``who`` names the task in the log."""
    if attempt is None or train.checkpoint_dir is None or train.resume:
        return train
    from mfgtx._files import atomic_write_bytes

    folder = Path(train.checkpoint_dir)
    marker = folder / ATTEMPT
    if marker.is_file() and marker.read_text() == attempt:
        log.warning("%s: run again after its worker was lost; resuming from its checkpoint", who)
        return replace(train, resume=True)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(marker, attempt.encode())
    return train


def run_members(
    request: FitRequest[Any],
    fn: Callable[..., R],
    members: Sequence[Member],
    names: Sequence[str],
    shared: Mapping[str, Any],
) -> list[R]:
    """``[fn(member, **shared) for member in members]`` on the request's engine (``None``:
    the local one). One model (no ensemble) always trains in this process.

    Raises:
        EngineError: a member failed: the message names it and its lots, and the error is
            also of its own error's class (:meth:`~mfgtx.engine.EngineError.of`). On the
            local engine the members after it do not run; on Ray the others are cancelled.
    """
    engine: Engine = request.engine or LocalEngine()
    if request.members is None:  # one model: nothing to spread, its errors as they are
        return [run_task(fn, m, engine.spec.threads, shared) for m in members]
    return engine.map(fn, members, shared=shared, names=names)
