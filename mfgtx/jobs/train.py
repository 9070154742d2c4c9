"""``train``: data -> split and audit -> fit -> calibrate -> compare with baselines -> bundle.

One job for every model kind (:mod:`mfgtx.kinds`): this module reads the job's data (sensor
rows through :mod:`mfgtx.jobfile.prepare`, or labelled images), hands it to the kind, and
writes the kind's bundle atomically (the old one stays until the new one is complete). The
bundle directory is checked against the job's inputs first and locked while it is written.
Training checkpoints go to ``train.checkpoint_dir`` (default ``<bundle>.ckpt``) after every
epoch; ``resume=True`` continues from the last one (refusing one of another run), and a
successful run removes them (only what mfgtx wrote there, :func:`mfgtx._files.remove_written`).
Under ``torchrun`` every process trains its shard and only rank 0 calibrates, judges and
writes; ``--engine ray --ddp N`` runs the same N processes as Ray Train workers.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mfgtx.data import DataError
from mfgtx.engine import Engine, EngineError, EngineSpec, open_engine
from mfgtx.jobfile.config import (
    ConfigError,
    JobConfig,
    engine_spec,
    train_config,
    with_absolute_paths,
)
from mfgtx.jobfile.prepare import read_windows
from mfgtx.kinds import FitSetup, Fitted, Kind, job_kind, kind_named

__all__ = ["TrainOutcome", "check_train_outputs", "run_key", "train"]

log = logging.getLogger(__name__)

OnStep = Callable[[int, float], None]


@dataclass(frozen=True)
class TrainOutcome:
    """What a training job made (the CLI prints it as the summary line)."""

    kind: str
    task: str
    bundle: str | None
    bundle_id: str | None
    epochs_run: int
    best_epoch: int
    resumed_from_epoch: int
    stopped_early: bool
    seconds: float
    windows: dict[str, int]
    audit_passed: bool
    metrics: dict[str, float] = field(default_factory=dict)
    verdict: str = ""
    standing: str = ""
    world_size: int = 1
    report_markdown: str = ""
    sweep: dict[str, Any] | None = None

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "report_markdown"}
        if out["sweep"] is None:  # only a sweep's run has one
            out.pop("sweep")
        return {"command": "train", **out}


def rank() -> int:
    """This process's rank under ``torchrun`` (0 alone)."""
    return int(os.environ.get("RANK", "0"))


#: Job-file settings that change how a trained model is judged and scored, never its weights
#: (the scoring views, the cost of a missed defect): they are not part of :func:`run_key`, so
#: they may change on ``--resume`` (a job killed while it judged resumes there, with them).
JUDGING_ONLY = ("calibration", "images.views")


#: Source settings that say how an input is read (in what pieces, within what limits), never
#: what it holds: not part of :func:`run_key` either.
READ_ONLY = ("chunk_rows", "chunk_mb", "max_inflated_mb", "max_lot_rows")

#: Column settings that only label what is shown (the units on the dashboard's axes; nothing
#: is converted): not part of :func:`run_key`, so naming units never stops a ``--resume``.
LABEL_ONLY = ("units",)


def run_key(config: JobConfig, kind: Kind, *fingerprint: Any) -> dict[str, Any]:
    """What a training run's weights depend on besides the training loop's settings: the
    job's data, windows, split and model sections (without :data:`JUDGING_ONLY`), and a
    digest of the training and validation data (``fingerprint``: arrays or text). Saved in
    every checkpoint; ``--resume`` refuses a checkpoint whose key differs
    (:func:`mfgtx.train.fit`)."""
    job = config.to_dict()
    key: dict[str, Any] = {"kind": kind.name}
    for name in ("data", "windows", "split", *kind.sections):
        key[name] = job.get(name)
    for dotted in JUDGING_ONLY:
        section, _, name = dotted.partition(".")
        if name and isinstance(key.get(section), dict):
            key[section].pop(name, None)
    key["ensemble"] = (job.get("train") or {}).get("ensemble")
    if isinstance(key.get("data"), dict) and isinstance(key["data"].get("columns"), dict):
        for name in LABEL_ONLY:
            key["data"]["columns"].pop(name, None)
    if isinstance(key.get("data"), dict):  # how the input is read does not change it
        for source in (key["data"].get("source"), (key["data"].get("labels") or {}).get("source")):
            if isinstance(source, dict):
                for name in READ_ONLY:
                    source.pop(name, None)
    digest = hashlib.sha256()
    for part in fingerprint:
        data = part.tobytes() if isinstance(part, np.ndarray) else str(part).encode()
        digest.update(hashlib.sha256(data).digest())
    key["training_data_sha256"] = digest.hexdigest()
    return key


def _checkpoint_dir(config: JobConfig) -> str:
    return config.train.checkpoint_dir or f"{config.bundle}.ckpt"


def check_train_outputs(config: JobConfig, kind: str | None = None) -> None:
    """The path rules (:mod:`mfgtx.jobs._paths`) for everything training will write: the
    bundle, its checkpoints and (tiled photos) ``<bundle>.errors.csv``; checked before any
    data is read, so that a refusal costs nothing."""
    from mfgtx.jobs._paths import PathRules

    rules = PathRules.of(config)
    rules.bundle_dir("bundle", str(config.bundle))
    rules.checkpoint_dir("train.checkpoint_dir", _checkpoint_dir(config))
    the_kind = job_kind(config) if kind is None else kind_named(kind)
    if the_kind.writes_left_out(config):
        rules.errors_file("bundle", left_out_path(config))


def train(
    kind: str,
    config: JobConfig,
    *,
    resume: bool = False,
    on_step: OnStep | None = None,
    engine: EngineSpec | None = None,
) -> TrainOutcome:
    """Train the model of ``kind`` (``sensor``, ``forecast``, ``vit``) as ``config`` says.

    An ensemble's members train on ``engine`` (default: the job's ``engine`` section,
    :func:`~mfgtx.jobfile.config.engine_spec`): one after another in this process, or at
    once as Ray tasks, each from its own seed, so that the bundle is the same (bit for bit
    with ``train.deterministic``). One model trains in this process with ``train.threads``,
    or data-parallel over ``engine.ddp`` Ray Train workers (:mod:`mfgtx.jobs._ray_ddp`; the
    weights ``torchrun`` with as many processes writes), this process holding the lock.
    A member that fails fails the job (naming the member and its lots), before any bundle is
    written.

    Raises:
        ConfigError: unknown kind, a missing section, settings that do not fit the data.
        DataError: unreadable data or a bad value.
        LeakageError: the split fails its audit.
        CheckpointError: ``resume`` met a checkpoint of another run.
        EngineError: a member (or a data-parallel worker, by rank) failed on Ray for a
            reason that is not a setting (also of its own error's class,
            :meth:`~mfgtx.engine.EngineError.of`).
    """
    the_kind = kind_named(kind)
    spec = engine if engine is not None else engine_spec(config)
    if spec.ddp is not None:
        _check_ddp(config, spec)
    if spec.name != "local" and os.environ.get("WORLD_SIZE", "1") not in ("", "0", "1"):
        raise ConfigError(
            f"{config.source_file}: engine: {spec.name} runs an ensemble's members as tasks; "
            "under torchrun every process trains one model together, so use --engine local"
        )
    config.require("bundle")
    bundle = Path(str(config.bundle))
    check_train_outputs(config, kind)
    if config.train.sweep:  # every trial's settings, before any data is read
        from mfgtx.jobs.sweep import plan

        plan(config, the_kind)
    from mfgtx.artifacts import signing_key

    signing_key()  # a bad key stops the job now, not when the first checkpoint is signed
    if rank() != 0:  # torchrun: rank 0 holds the lock and writes
        return _train(the_kind, config, bundle, resume, on_step, spec)
    from mfgtx._files import claimed_folder, remove_leftovers
    from mfgtx.jobs._lock import output_lock

    with output_lock(bundle), claimed_folder(_checkpoint_dir(config)):
        remove_leftovers(bundle)  # staging left by a killed run of this bundle
        remove_leftovers(left_out_path(config))
        if spec.ddp is not None:  # the workers run _train; worker 0 writes, this job holds
            from mfgtx.jobs._ray_ddp import train_ddp

            return train_ddp(the_kind.name, config, bundle, resume, on_step, spec)
        return _train(the_kind, config, bundle, resume, on_step, spec)


def _check_ddp(config: JobConfig, spec: EngineSpec) -> None:
    """Refuse, in words, a data-parallel run (``--ddp N``) of what is not one model in one
    command: an ensemble, a sweep, a process of ``torchrun``.

    Raises:
        ConfigError: what to do instead.
    """
    where, n = config.source_file, spec.ddp
    if os.environ.get("WORLD_SIZE", "1") not in ("", "0", "1"):
        raise ConfigError(
            f"{where}: engine: ddp {n} starts its own {n} processes through Ray Train, and "
            "this command already runs under torchrun, which does the same; drop --ddp and "
            "--engine ray under torchrun, or run the command once, without torchrun"
        )
    ensemble = config.train.ensemble
    if ensemble is not None:
        raise ConfigError(
            f"{where}: engine: ddp {n} trains one model over {n} workers, and train.ensemble "
            f"asks for {ensemble.members} models; drop --ddp to train the members side by side "
            "as Ray tasks (--workers), or drop train.ensemble to train one model data-parallel"
        )
    if config.train.sweep:
        raise ConfigError(
            f"{where}: engine: ddp {n} trains one model over {n} workers, and train.sweep "
            "asks for one model per trial; drop --ddp to run the trials side by side as Ray "
            "tasks (--workers), then train the chosen settings without train.sweep with --ddp"
        )


@contextmanager
def _members_engine(config: JobConfig, spec: EngineSpec) -> Iterator[Engine]:
    """The engine the members (or a sweep's trials) train on, open: ``spec``'s for an
    ensemble or a sweep; one model trains in this process (with ``spec``'s threads), so Ray
    is not started for it.

    Raises:
        ConfigError: the engine cannot be opened (Ray not installed, no cluster at the
            address), in words.
    """
    if config.train.ensemble is None and not config.train.sweep and spec.name != "local":
        log.info("one model (no train.ensemble): it trains in this process, not on %s", spec.name)
        spec = EngineSpec(threads=spec.threads)
    with ExitStack() as stack:
        try:
            engine = stack.enter_context(open_engine(spec))
        except EngineError as e:
            raise ConfigError(f"{config.source_file}: {e}") from e
        yield engine


def _train(
    kind: Kind,
    config: JobConfig,
    bundle: Path,
    resume: bool,
    on_step: OnStep | None,
    spec: EngineSpec,
) -> TrainOutcome:
    t0 = time.perf_counter()
    ckpt = config.train.checkpoint_dir or f"{bundle}.ckpt"
    train_cfg = train_config(config.train, ckpt, resume=resume)
    judge = rank() == 0
    try:
        kind.check_train(config)
        bad_lots: list[dict[str, Any]] = []  # sensor rows: the lots left out for bad values
        lot_keys: dict[str, tuple[str, ...] | None] = {}  # each lot's line, for the watch
        data = kind.read(
            config, lambda k: read_windows(config, k, left_out=bad_lots, lot_keys=lot_keys)
        )
        try:
            left_out = kind.left_out(config, data)
            if left_out is not None:
                _write_left_out(config, left_out)
            elif bad_lots or _written_before(config):
                _write_left_out(config, bad_lots, what="lot")
            found = kind.fingerprint(config, data)
            key = run_key(config, kind, *found)
            with _members_engine(config, spec) as engine:
                setup = FitSetup(train_cfg, key, on_step, judge, engine)
                if config.train.sweep:  # the chosen trial's model, and its job for the record
                    from mfgtx.jobs.sweep import sweep

                    def key_of(job: JobConfig) -> dict[str, Any]:
                        return run_key(job, kind, *found)

                    fitted, config = sweep(kind, data, config, setup, key_of=key_of, engine=engine)
                else:
                    fitted = kind.train(data, config, setup)
            if judge:
                fitted = _with_profile(config, data, fitted, lot_keys)
        finally:
            kind.release(data)
    except (DataError, ConfigError):
        raise
    except ValueError as e:
        from mfgtx.split import LeakageError

        if isinstance(e, LeakageError):
            raise
        raise ConfigError(f"{config.source_file}: {e}") from e
    if not judge:
        return _outcome(kind, fitted, t0)
    path = kind.save(bundle, fitted, job=with_absolute_paths(config))
    return _outcome(kind, fitted, t0, path=path, checkpoint_dir=ckpt)


def _with_profile(
    config: JobConfig,
    data: Any,
    fitted: Fitted,
    lot_keys: dict[str, tuple[str, ...] | None] | None = None,
) -> Fitted:
    """``fitted`` with the training profile of its sensor rows (:mod:`mfgtx.watch.profile`)
    in its bundle's ``extra``: the readings of every row the job trained and was judged on
    (its training data, all sets: the lot-to-lot spread a new lot is compared with), per
    sensor, and per regime where the model has them, each also lot by lot (the rows its
    windows cover), each lot with its values of the job's key columns (``lot_keys``, by lot
    id: the line, so that the watch judges a line's lots against that line's). Category
    columns (names, not numbers) are left out; a model that reads no sensor rows (images)
    gets none."""
    from dataclasses import replace

    from mfgtx.data import Windows
    from mfgtx.watch.profile import PROFILE_KEY, TrainingProfile
    from mfgtx.watch.regimes import regime_names

    windows = getattr(data, "windows", None)
    if not isinstance(windows, Windows):
        return fitted
    values = windows.values  # (R, C) raw readings, NaN where missing
    categories = set(windows.categories or {})
    keep = [c for c, s in enumerate(windows.sensors) if s not in categories]
    regime = names = None
    regimes = getattr(fitted.spec, "regimes", None)
    if regimes is not None and tuple(windows.sensors) == tuple(regimes.inputs):
        regime, names = regimes.assign(values), regime_names(regimes)
    keys = tuple(config.data.columns.keys) if config.data is not None else ()
    told = None
    if keys and lot_keys:
        told = [lot_keys.get(str(name)) for name in np.unique(windows.lot)]  # by lot index
    profile = TrainingProfile.from_values(
        values[:, keep],
        [windows.sensors[c] for c in keep],
        regime=regime,
        regime_names=names or (),
        lot=_row_lots(windows),
        keys=keys if told is not None else (),
        lot_keys=told,
    )
    return replace(fitted, extra={**fitted.extra, PROFILE_KEY: profile.to_dict()})


def _row_lots(windows: Any) -> np.ndarray:
    """``(R,)`` the lot index of each table row, lots numbered by id (``-1``: a row no
    window covers): a lot's rows are contiguous in the table (windows are cut lot by
    lot), from its first window's first row to its last window's last."""
    lot = np.full(len(windows.values), -1, dtype=np.int64)
    names, index = np.unique(windows.lot, return_inverse=True)  # index: (N,)
    first = np.full(len(names), np.iinfo(np.int64).max)
    last = np.zeros(len(names), dtype=np.int64)
    np.minimum.at(first, index, windows.row_start)
    np.maximum.at(last, index, windows.row_start + windows.lengths)  # (L,) one past the end
    for k in range(len(names)):
        lot[first[k] : last[k]] = k
    return lot


def left_out_path(config: JobConfig) -> Path:
    """Where training lists what it left out: ``<bundle>.errors.csv`` (the photos and masks
    of a tiled job, the lots with a bad value of a sensor-row job)."""
    return Path(f"{config.bundle}.errors.csv")


def _written_before(config: JobConfig) -> bool:
    """Whether ``<bundle>.errors.csv`` is there from an earlier run, written by mfgtx: a run
    that leaves nothing out rewrites it (a header only), so it never tells of another run."""
    from mfgtx._files import replace_problem

    path = left_out_path(config)
    return path.exists() and replace_problem(path) is None


def _write_left_out(config: JobConfig, errors: list[dict[str, Any]], what: str = "photo") -> None:
    """The errors file of a training job, after the path rules: a tiled job's always (a
    header only when every photo and mask could be used); a sensor-row job's when it left
    lots out (or rewrites one it wrote before)."""
    from mfgtx.jobs._paths import PathRules
    from mfgtx.jobs.sinks import write_errors

    if rank() != 0:
        return
    path = PathRules.of(config).errors_file("bundle", left_out_path(config))
    write_errors(path, errors)
    if errors:
        n = len(errors) if what != "lot" else len({str(e["lot"]) for e in errors})
        log.warning("%d %s(s) left out of training, listed in %s", n, what, path)


def _outcome(
    kind: Kind,
    fitted: Fitted,
    t0: float,
    *,
    path: Path | None = None,
    checkpoint_dir: str | None = None,
) -> TrainOutcome:
    """The :class:`TrainOutcome` of a finished fit. With ``path`` (rank 0 wrote the bundle)
    the bundle is verified, its id taken and the checkpoints removed (a rerun starts fresh):
    only the files mfgtx wrote in the checkpoint folder, and the folder once it is empty and
    mfgtx made it (:func:`mfgtx._files.remove_written`)."""
    bundle_id = None
    report = fitted.report
    if path is not None:
        from mfgtx._files import remove_written
        from mfgtx.artifacts import verify_bundle

        bundle_id = verify_bundle(path)["bundle_id"]
        if checkpoint_dir is not None:
            remove_written(checkpoint_dir)
        if report is not None:
            log.info("%s: %s %s", path, report.verdict, report.how_sure)
    fit = fitted.fit
    return TrainOutcome(
        kind=kind.name,
        task=str(fitted.spec.task),
        bundle=None if path is None else str(path),
        bundle_id=bundle_id,
        epochs_run=len(fit.history),
        best_epoch=fit.best_epoch,
        resumed_from_epoch=fit.resumed_from_epoch,
        stopped_early=fit.stopped_early,
        seconds=round(time.perf_counter() - t0, 3),
        windows=fitted.counts,
        audit_passed=fitted.audit.passed,
        metrics=fitted.metrics,
        verdict="" if report is None else report.verdict,
        standing="" if report is None else report.standing().level,
        world_size=fit.world_size,
        report_markdown="" if report is None else report.to_markdown(),
        sweep=None if report is None or report.sweep is None else report.sweep.to_dict(),
    )
