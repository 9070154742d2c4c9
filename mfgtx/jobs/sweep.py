"""``train.sweep``: a small grid of model and training settings, chosen on the validation lots.

::

    train: {epochs: 30, lr: 0.001, sweep: {lr: [0.0003, 0.001], d_model: [32, 64]}}

Every combination of the values (the grid, in the order the keys are written) is one
*trial*: the job's model trained with those values on the job's own split (the same windows,
lots, scaler and seeds as without a sweep). A trial is judged by its best validation loss on
the validation lots (an ensemble: its members' mean, each on its own validation lots) and by
nothing else: trials are trained without judging (``FitSetup.judge`` off), so no trial
predicts a test window. The trial with the lowest validation loss (the first of equals) is
the bundle's model; only it is calibrated and judged on the test lots, once, by resuming its
finished checkpoints (no step runs again). The report's ``Sweep`` table
(:class:`~mfgtx.baselines.SweepTable`) lists every trial's values and figures.

Keys are those of the ``train`` section that shape the weights (:data:`TRAIN_KEYS`) and
those of the job's model section (``model``, ``forecast``, ``vit``...), plain (``lr``,
``d_model``) or with their section (``train.lr``, ``model.d_model``), but the ones that change
what the validation loss measures (:data:`NOT_COMPARABLE`): trials must be compared on one
loss. Every trial's settings are checked before any data is read (:func:`plan`).

Trials run through the job's :class:`~mfgtx.engine.Engine` (``engine.map``): one after
another in the process, or side by side as Ray tasks. Each trial keeps its checkpoints in
``<checkpoint_dir>/trial-<n>`` (``--resume`` resumes each trial where it stopped); on Ray a
trial whose worker died is run again and resumes from its last checkpoint, as an ensemble's
member does (:func:`~mfgtx.kinds._members.resume_on_retry`).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import math
import time
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mfgtx.baselines import SweepTable, SweepTrial
from mfgtx.engine import Engine, LocalEngine
from mfgtx.jobfile._schema import build
from mfgtx.jobfile.config import ConfigError, JobConfig, train_config
from mfgtx.kinds import FitSetup, Fitted, Kind, kind_named
from mfgtx.kinds._members import resume_on_retry, run_name
from mfgtx.train import NonFiniteLossError
from mfgtx.train.config import WEIGHT_FIELDS

__all__ = ["NOT_COMPARABLE", "TRAIN_KEYS", "Trial", "plan", "sweep"]

log = logging.getLogger(__name__)

#: ``train`` keys a sweep may try: those that change the weights a run ends with.
TRAIN_KEYS = WEIGHT_FIELDS

#: Model keys a sweep refuses: they change what the validation loss measures (its task,
#: its quantile heads, the scale of its targets, how far it forecasts), so trials with
#: other values could not be compared on it.
NOT_COMPARABLE = ("task", "quantiles", "target_scale", "horizon", "n_classes")


@dataclass(frozen=True)
class Trial:
    """One combination of the sweep's values.

    Attributes:
        number: 1-based, in the grid's order (the last key changes fastest).
        values: the values, by key as the job file writes it.
        job: the job with these values in place (and no sweep).
    """

    number: int
    values: dict[str, Any]
    job: JobConfig


def _where(config: JobConfig, key: str) -> str:
    return f"{config.source_file}: train.sweep.{key}"


def _section_of(config: JobConfig, kind: Kind[Any, Any, Any], key: str) -> tuple[str, str]:
    """``(section, name)`` of a sweep key: ``train`` or the kind's model section.

    Raises:
        ConfigError: a key of neither, one named in both without its section, or one a
            sweep cannot compare.
    """
    model = {f.name for f in dataclasses.fields(kind.Section) if f.init}
    train = {f.name for f in dataclasses.fields(type(config.train)) if f.init}
    section, _, name = key.rpartition(".")
    if not section:
        if name in train and name in model:
            raise ConfigError(
                f"{_where(config, key)}: both train and {kind.section_key} have {name}; "
                f"write train.{name} or {kind.section_key}.{name}"
            )
        if name not in train and name not in model:
            known = sorted((model - set(NOT_COMPARABLE)) | set(TRAIN_KEYS))
            raise ConfigError(
                f"{_where(config, key)}: unknown key: neither a train key nor a key of this "
                f"{kind.name} job's {kind.section_key} section; a sweep tries one of {known}"
            )
        section = "train" if name in train else kind.section_key
    if section == "train":
        if name not in TRAIN_KEYS:
            raise ConfigError(
                f"{_where(config, key)}: not a train key a sweep can try (it changes how the "
                f"job runs, not the model); a sweep tries {', '.join(TRAIN_KEYS)}"
            )
        return "train", name
    if section != kind.section_key:
        raise ConfigError(
            f"{_where(config, key)}: a sweep tries keys of the train section or of this "
            f"{kind.name} job's {kind.section_key} section, not of {section}"
        )
    if name not in model:
        raise ConfigError(
            f"{_where(config, key)}: unknown key of the {kind.section_key} section; it has "
            f"{sorted(model)}"
        )
    if name in NOT_COMPARABLE:
        raise ConfigError(
            f"{_where(config, key)}: {name} changes what the validation loss measures, so "
            "trials could not be compared on it; train one job per value instead"
        )
    return kind.section_key, name


def _said(values: Mapping[str, Any]) -> str:
    """A trial's values in words: ``lr=0.001, d_model=32``."""
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _typed(config: JobConfig, cls: type, key: str, name: str, value: Any) -> Any:
    """``value`` of sweep key ``key`` converted as the job file reads key ``name`` of
    section ``cls`` (a number for ``lr``, a whole number for ``d_model`` ...), refused in the
    same words."""
    probe = dataclasses.make_dataclass("probe", [(name, typing.get_type_hints(cls)[name])])
    prefix = f"train.sweep.{key}".rpartition(".")[0]
    return getattr(build(probe, {name: value}, file=config.source_file, prefix=prefix), name)


def _with(config: JobConfig, section: str, values: Mapping[str, Any]) -> JobConfig:
    """``config`` with ``values`` in ``section`` (its ``__post_init__`` checks them again)."""
    if section == "train":
        return replace(config, train=replace(config.train, **values))
    current = config.section(section)
    updated = replace(current, **values)
    if section in {f.name for f in dataclasses.fields(JobConfig)}:
        return replace(config, **{section: updated})
    others = tuple((k, updated if k == section else v) for k, v in config.kind_sections)
    return replace(config, kind_sections=others)


def plan(config: JobConfig, kind: Kind[Any, Any, Any]) -> tuple[Trial, ...]:
    """Every trial of ``config``'s ``train.sweep`` (empty without one), each checked the way
    the job file's own values are: the key, the type of each value, and each combination
    against the rest of its section (``d_model`` divisible by ``n_heads`` ...).

    Raises:
        ConfigError: naming the job file, the key and the trial that does not fit.
    """
    grid = config.train.sweep
    if not grid:
        return ()
    sections = {key: _section_of(config, kind, key) for key in grid}
    values: dict[str, list[Any]] = {}
    for key, options in grid.items():
        section, name = sections[key]
        cls = type(config.train) if section == "train" else kind.Section
        values[key] = [_typed(config, cls, key, name, v) for v in options]
        repeated = [v for i, v in enumerate(values[key]) if v in values[key][:i]]
        if repeated:
            raise ConfigError(f"{_where(config, key)}: {repeated[0]!r} is listed twice")
    trials = []
    base = replace(config, train=replace(config.train, sweep=None))
    for number, combo in enumerate(itertools.product(*values.values()), start=1):
        chosen = dict(zip(values, combo, strict=True))
        job = base
        try:
            for section in dict.fromkeys(s for s, _ in sections.values()):
                job = _with(job, section, {sections[k][1]: v for k, v in chosen.items()
                                           if sections[k][0] == section})  # fmt: skip
        except (ValueError, TypeError) as e:
            raise ConfigError(
                f"{config.source_file}: train.sweep: trial {number} ({_said(chosen)}) does "
                f"not fit the rest of the job: {e}"
            ) from e
        trials.append(Trial(number, chosen, job))
    return tuple(trials)


@dataclass(frozen=True)
class _Task:
    """What one trial's task needs besides the data (sent once to every task)."""

    trial: Trial
    setup: FitSetup
    attempt: str | None = None  # the sweep's run name on another engine: a retry resumes


@dataclass(frozen=True)
class _Done:
    """What one trial's task gives back: small, so that it travels cheaply from a worker.
    ``fit`` is ``None`` for a trial whose training diverged (``diverged`` says how)."""

    number: int
    fit: Any
    seconds: float
    diverged: str = ""

    @property
    def loss(self) -> float:
        return math.nan if self.fit is None else float(self.fit.best_val_loss)


def _diverged(error: BaseException) -> bool:
    """Whether ``error`` is (or was caused by) a training whose loss became NaN or infinite
    (an ensemble's member raises it through its engine)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, NonFiniteLossError):
            return True
        seen = seen.__cause__
    return False


def _train_trial(task: _Task, *, kind: str, data: Any) -> _Done:
    """Train one trial without judging it (module level: a Ray task imports it by name). A
    trial whose loss became NaN or infinite (a learning rate too high) is a result of the
    sweep, not a failure of the job: it is listed without a validation loss."""
    t0 = time.perf_counter()
    who = f"sweep trial {task.trial.number}"
    setup = replace(task.setup, train=resume_on_retry(task.setup.train, task.attempt, who))
    try:
        fitted = kind_named(kind).train(data, task.trial.job, setup)
    except Exception as e:
        if not _diverged(e):
            raise
        log.warning("sweep trial %d (%s) diverged: %s", task.trial.number,
                    _said(task.trial.values), e)  # fmt: skip
        return _Done(task.trial.number, None, round(time.perf_counter() - t0, 3), str(e))
    return _Done(task.trial.number, fitted.fit, round(time.perf_counter() - t0, 3))


def _checkpoints(setup: FitSetup, number: int) -> str | None:
    folder = setup.train.checkpoint_dir
    return None if folder is None else str(Path(folder) / f"trial-{number}")


def _lots(fitted: Fitted) -> tuple[int, int]:
    """``(validation lots, test lots)`` of the split, from its audit: the choice's lots and
    the report's. An ensemble's members each validate on their own block of the lots that
    are not test lots, so every one of those is a validation lot of one member."""
    sets = fitted.audit.summary.get("sets") or {}
    test = int((sets.get("test") or {}).get("n_lots", 0))
    if "val" in sets and fitted.audit.summary.get("ensemble_members") is None:
        return int(sets["val"].get("n_lots", 0)), test
    learn = sum(int((sets.get(s) or {}).get("n_lots", 0)) for s in ("train", "val"))
    return learn, test


def _map(engine: Engine | None, tasks: Sequence[_Task], kind: str, data: Any) -> list[_Done]:
    """Every trial through ``engine`` (``None``: here, one after another); the data is sent
    once to every task, not once per trial."""
    names = [f"sweep trial {t.trial.number} ({_said(t.trial.values)})" for t in tasks]
    engine = engine if engine is not None else LocalEngine()
    return engine.map(_train_trial, tasks, shared={"kind": kind, "data": data}, names=names)


def sweep(
    kind: Kind[Any, Any, Any],
    data: Any,
    config: JobConfig,
    setup: FitSetup,
    *,
    key_of: Callable[[JobConfig], dict[str, Any]],
    engine: Engine | None = None,
) -> tuple[Fitted, JobConfig]:
    """Train every trial of ``config``'s sweep, keep the one with the lowest validation
    loss, and judge it alone on the test lots.

    Args:
        kind, data: the job's kind and its training data (read once, sent once to every
            task).
        config: the job (with ``train.sweep``).
        setup: how the job trains (checkpoints, ``--resume``, judging); each trial keeps
            its checkpoints in ``trial-<n>`` of ``setup.train.checkpoint_dir``.
        key_of: ``key_of(job)``: what the weights of a trial's job depend on (its run key,
            :func:`mfgtx.jobs.train.run_key`), checked when a trial resumes.
        engine: an :class:`~mfgtx.engine.Engine` (its ``map`` runs the trials), or ``None``:
            one after another here.

    Returns:
        ``(fitted, job)``: the chosen trial's model, judged, with the ``Sweep`` table in its
        report, and that trial's job (what the bundle records).

    Raises:
        ConfigError: a trial that does not fit the job (:func:`plan`), or every trial's
            training diverged.
        EngineError: a trial failed (the message names it and its values).
    """
    if setup.train.checkpoint_dir is None:
        raise ValueError("a sweep needs a checkpoint_dir: the chosen trial is judged from it")
    trials = plan(config, kind)
    attempt = run_name(engine)  # on Ray a trial run again after its worker died resumes
    tasks = []
    for trial in trials:
        ckpt = _checkpoints(setup, trial.number)
        train = train_config(trial.job.train, ckpt, resume=setup.train.resume)
        trial_setup = FitSetup(train, key_of(trial.job), None, judge=False)
        tasks.append(_Task(trial, trial_setup, attempt))
    done = _map(engine, tasks, kind.name, data)
    losses = [d.loss for d in done]
    finite = [k for k, v in enumerate(losses) if math.isfinite(v)]
    if not finite:
        raise ConfigError(
            f"{config.source_file}: train.sweep: every trial's training diverged (its loss "
            f"became NaN or infinite), e.g. trial 1: {done[0].diverged}; try smaller "
            "learning rates"
        )
    best = min(finite, key=lambda k: losses[k])  # the first of equals
    chosen = tasks[best]
    # the chosen trial's finished checkpoints, resumed: no step runs, its weights are judged
    final = FitSetup(
        replace(chosen.setup.train, resume=True), chosen.setup.run_key, setup.on_step, setup.judge
    )
    fitted = kind.train(data, chosen.trial.job, final)
    fitted = replace(fitted, fit=done[best].fit)  # the trial's own training, not the resume
    validation_lots, test_lots = _lots(fitted)
    table = SweepTable(
        tuple(
            SweepTrial(
                number=t.trial.number,
                values=dict(t.trial.values),
                val_loss=d.loss,
                best_epoch=0 if d.fit is None else int(d.fit.best_epoch),
                epochs=0 if d.fit is None else len(d.fit.history),
                seconds=d.seconds,
            )
            for t, d in zip(tasks, done, strict=True)
        ),
        chosen=chosen.trial.number,
        validation_lots=validation_lots,
        test_lots=test_lots,
        keys=tuple(config.train.sweep or ()),
    )
    if fitted.report is not None:
        fitted = replace(fitted, report=replace(fitted.report, sweep=table))
    return fitted, chosen.trial.job
