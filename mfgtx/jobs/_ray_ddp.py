"""One model trained data-parallel over Ray Train workers (``--engine ray --ddp N``).

Ray Train's :class:`~ray.train.torch.TorchTrainer` starts ``N`` workers, each declaring
``threads`` CPUs, and joins them in one gloo process group. Each worker then runs the job
exactly as a ``torchrun`` process of the same rank would (:func:`mfgtx.jobs.train._train`):
every worker reads the data and trains its shard of each epoch
(:class:`~mfgtx.train.ShardSampler`, gradients averaged by DDP), and worker 0 alone
calibrates, judges and writes the bundle through the job's atomic path. So the weights are
those ``torchrun --nproc_per_node N`` writes.

This process (the job's) holds the bundle's lock and the checkpoint folder while the
workers run (:func:`mfgtx.jobs.train.train`), and gets worker 0's
:class:`~mfgtx.jobs.train.TrainOutcome` back. A worker that fails fails the job with its
error, naming its rank; Ray does not retry it (``max_failures=0``), and no bundle is
written: worker 0 writes only once every worker has trained. Ray Train's own run folder
(``storage_path``) is a temporary folder of this process, deleted when the run ends.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import platform
import tempfile
from contextlib import ExitStack, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mfgtx._signals import restore_handlers, stop_handlers
from mfgtx.engine import EngineError, EngineSpec, open_engine
from mfgtx.jobfile.config import ConfigError, JobConfig

if TYPE_CHECKING:
    from mfgtx.jobs.train import TrainOutcome

__all__ = ["train_ddp"]

log = logging.getLogger(__name__)


def train_ddp(
    kind: str,
    config: JobConfig,
    bundle: Path,
    resume: bool,
    on_step: Any,
    spec: EngineSpec,
) -> TrainOutcome:
    """Train ``config``'s one model over ``spec.ddp`` Ray Train workers; worker 0 writes
    ``bundle``. Returns worker 0's :class:`~mfgtx.jobs.train.TrainOutcome`.

    Ray is joined or started as for any Ray engine (:func:`~mfgtx.engine.open_engine`: no
    address, a Ray of this command with ``ddp x threads`` CPUs).

    Raises:
        ConfigError: Ray is not installed or cannot be reached, or has fewer CPUs than
            ``ddp x threads`` (in words).
        EngineError: a worker failed: ``data-parallel worker 1 of 2 failed: <its error>``,
            also of its error's class where it has one (:meth:`EngineError.of`).
    """
    from mfgtx.jobs.train import TrainOutcome

    n = spec.ddp or 1
    threads = spec.task_threads or 1
    with ExitStack() as stack:
        try:
            stack.enter_context(open_engine(dataclasses.replace(spec, workers=n)))
        except EngineError as e:
            raise ConfigError(f"{config.source_file}: {e}") from e
        _check_cpus(config, n, threads)
        storage = stack.enter_context(
            tempfile.TemporaryDirectory(prefix="mfgtx-ddp-", ignore_cleanup_errors=True)
        )
        found = _fit(kind, config, bundle, resume, on_step, n, threads, storage)
    return TrainOutcome(**found)


def _check_cpus(config: JobConfig, n: int, threads: int) -> None:
    """Refuse a run the Ray cluster has too few CPUs for (Ray Train would wait for them
    without end): ``n`` workers of ``threads`` CPUs each.

    Raises:
        ConfigError: how many CPUs are needed and how many the cluster has.
    """
    import ray

    has = ray.cluster_resources().get("CPU", 0)
    if has < n * threads:
        raise ConfigError(
            f"{config.source_file}: engine: ddp {n} needs {n * threads} CPUs ({n} workers of "
            f"{threads} thread(s), train.threads), and the Ray cluster has {has:g}; lower --ddp "
            "or train.threads, or add nodes to the cluster"
        )


def _fit(
    kind: str,
    config: JobConfig,
    bundle: Path,
    resume: bool,
    on_step: Any,
    n: int,
    threads: int,
    storage: str,
) -> dict[str, Any]:
    """The Ray Train run: ``n`` workers of ``threads`` CPUs each, no retry; worker 0's
    outcome as a plain dict. The job's stop signals stay its own while it runs (Ray Train
    would take SIGINT and end the process with exit code 0); a job stopped meanwhile aborts
    the run (its workers end) before it unwinds."""
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig, TrainingFailedError
    from ray.train.torch import TorchTrainer

    class Trainer(TorchTrainer):
        controller: Any = None

        def _register_sigint_handler(self, controller: Any) -> None:
            self.controller = controller  # to abort with, instead of Ray's SIGINT handler

    trainer = Trainer(
        cast(Any, _worker),  # typed by Ray as returning None: worker 0 returns its outcome
        train_loop_config={
            "kind": kind,
            "config": config,
            "bundle": str(bundle),
            "resume": resume,
            "on_step": on_step,
            "threads": threads,
            "cwd": os.getcwd(),
        },
        scaling_config=ScalingConfig(
            num_workers=n, use_gpu=False, resources_per_worker={"CPU": threads}
        ),
        run_config=RunConfig(
            name="mfgtx-ddp",
            storage_path=storage,
            failure_config=FailureConfig(max_failures=0),
        ),
    )
    log.info("training one model over %d Ray Train workers, %d thread(s) each", n, threads)
    handlers = stop_handlers()
    try:
        result = trainer.fit()
    except TrainingFailedError as e:
        err = _failed(e, n)
        raise err from err.__cause__  # the worker's own error, not Ray's wrapping of it
    except BaseException:  # stopped (or Ray lost): end the run's workers, then unwind
        if trainer.controller is not None:
            with suppress(Exception):
                ray.get(trainer.controller.abort.remote(), timeout=60)
        raise
    finally:
        restore_handlers(handlers)
    found = getattr(result, "return_value", None)  # Ray Train v2: worker 0's return
    if not isinstance(found, dict):  # pragma: no cover - worker 0 always returns its outcome
        raise EngineError(f"data-parallel worker 0 of {n} returned no outcome ({found!r})")
    return found


def _worker(setup: dict[str, Any]) -> dict[str, Any] | None:
    """One Ray Train worker: the job as a ``torchrun`` process of its rank runs it (Ray Train
    set ``RANK``, ``WORLD_SIZE`` and the process group), in the job's working directory:
    Ray Train moves each worker into a folder of its own, and a job file's relative paths
    (the bundle, the data) are relative to the working directory. Worker 0 returns its
    outcome."""
    import torch.distributed as dist

    from mfgtx.jobs.train import _train
    from mfgtx.kinds import kind_named

    ray_folder = os.getcwd()
    try:
        os.chdir(setup["cwd"])
    except OSError as e:
        raise FileNotFoundError(
            f"the job's working directory {setup['cwd']} cannot be entered on node "
            f"{platform.node()} ({e.strerror}); run mfgtx from a folder every node sees at "
            "the same path (docs/ray.md: Paths must be the same on every node)"
        ) from e
    try:
        outcome = _train(
            kind_named(setup["kind"]),
            setup["config"],
            Path(setup["bundle"]),
            setup["resume"],
            setup["on_step"],
            EngineSpec(threads=setup["threads"]),  # the one model, here, these threads
        )
    finally:
        os.chdir(ray_folder)
    if dist.is_initialized() and dist.get_rank() != 0:
        return None
    return dataclasses.asdict(outcome)


def _failed(error: BaseException, n: int) -> EngineError:
    """The job's error for a failed Ray Train run: the first worker's own error (a worker
    that only lost its peers, a broken gloo connection, is named only when no other failed),
    naming its rank."""
    failures: dict[int, BaseException] = dict(getattr(error, "worker_failures", None) or {})
    if not failures:
        return EngineError.of(f"data-parallel training over {n} workers", error)
    own = {r: e for r, e in failures.items() if not _lost_peer(e)}
    rank = min(own or failures)
    return EngineError.of(f"data-parallel worker {rank} of {n}", _own_error(failures[rank]))


def _lost_peer(error: BaseException) -> bool:
    """Whether ``error`` is a collective broken because another worker stopped."""
    import torch.distributed as dist

    cause = _own_error(error)
    if isinstance(cause, getattr(dist, "DistError", ())):
        return True
    text = str(cause).lower()
    return any(words in text for words in ("connection closed by peer", "connection reset", "gloo"))


def _own_error(error: BaseException) -> BaseException:
    """The worker's own error out of Ray's wrapping of it (``RayTaskError`` and the like
    carry it as ``cause``)."""
    cause = getattr(error, "cause", None)
    return cause if isinstance(cause, BaseException) else error
