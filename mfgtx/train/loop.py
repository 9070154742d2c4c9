"""``fit``, ``evaluate`` and ``predict``: one training engine for every mfgtx model.

A trainable model is an ``nn.Module`` with ``loss(batch) -> Tensor`` (a scalar, the mean
over the batch) and ``predict(batch) -> Tensor``; a batch is whatever the dataset's items
collate to (usually a dict of tensors). Attention runs on the fused scaled-dot-product kernel
(FlashAttention on CPU and CUDA) because mfgtx models keep attention-weight dropout at 0 by
default: any attention dropout sends the CPU kernel to the unfused path.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, cast

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

from mfgtx.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mfgtx.train.compiling import CompileSwitch
from mfgtx.train.config import WEIGHT_FIELDS, TrainConfig
from mfgtx.train.distributed import DistEnv, ShardSampler, setup_distributed
from mfgtx.train.ema import WeightAverage
from mfgtx.train.heap import keep_freed_memory
from mfgtx.train.optimizer import build_optimizer
from mfgtx.train.precision import PRECISIONS, choose_precision, fastest, resolve_precision
from mfgtx.train.progress import Progress
from mfgtx.train.schedule import warmup_cosine

__all__ = ["FitResult", "NonFiniteLossError", "Trainable", "evaluate", "fit", "predict"]

log = logging.getLogger("mfgtx.train")

CHECKPOINT_NAME = "last.ckpt"

#: A checkpoint's ``phase``: written after every epoch while training runs, and once more
#: as ``trained`` when the loop has ended, before any evaluation: a job killed (or out of
#: memory) while it judges the model resumes with these weights instead of training again.
TRAINING, TRAINED = "training", "trained"


class Trainable(Protocol):
    """What :func:`fit` needs from a model."""

    def loss(self, batch: Any) -> Tensor: ...

    def predict(self, batch: Any) -> Tensor: ...


class NonFiniteLossError(RuntimeError):
    """The loss became NaN or infinite; the last good checkpoint was left untouched."""


@dataclass(frozen=True)
class FitResult:
    """What :func:`fit` did.

    Attributes:
        history: one dict per completed epoch: ``epoch``, ``train_loss``, ``val_loss``,
            ``lr``, ``seconds``, ``samples_per_s``.
        best_epoch: the epoch whose weights were restored (1-based).
        best_val_loss: its validation loss.
        stopped_early: ``True`` when patience or ``max_minutes`` ran out before ``epochs``.
        precision: ``"fp32"`` or ``"bf16"``, what actually ran (for ``precision="auto"``:
            what the timing at the start chose, or what the resumed checkpoint ran).
        compiled: whether full training batches ran through ``torch.compile`` (for
            ``compile="auto"``: what the run's first steps chose, or the checkpoint's).
        device: the device trained on.
        world_size: number of processes.
        resumed_from_epoch: the completed epochs found in the checkpoint (0 if none).
        checkpoint: path of ``last.ckpt`` or ``None``.
        resumed_trained: the checkpoint held a finished training (its phase ``trained``):
            no step ran, the weights are the checkpoint's best.
        paused: the turn ended (``turn_seconds``) with training still to go: the model holds
            the last epoch's weights, not the best, and ``resume=True`` goes on from the
            checkpoint.
    """

    history: tuple[dict[str, float], ...]
    best_epoch: int
    best_val_loss: float
    stopped_early: bool
    precision: str
    device: str
    world_size: int
    compiled: bool = False
    resumed_from_epoch: int = 0
    checkpoint: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    resumed_trained: bool = False
    paused: bool = False


class _LossModule(nn.Module):
    """Routes ``loss`` through ``forward`` so that DistributedDataParallel syncs gradients."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: Any) -> Tensor:
        return cast(Trainable, self.model).loss(batch)


def _device(config: TrainConfig, env_local_rank: int = 0) -> torch.device:
    if config.device == "cuda" or (config.device == "auto" and torch.cuda.is_available()):
        if not torch.cuda.is_available():
            raise ValueError("device='cuda' was asked for but CUDA is not available")
        return torch.device("cuda", env_local_rank)
    return torch.device("cpu")


def _to(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: _to(v, device) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return type(batch)(_to(v, device) for v in batch)
    return batch


def _batch_len(batch: Any) -> int:
    if isinstance(batch, Tensor):
        return int(batch.shape[0])
    if isinstance(batch, dict):
        return _batch_len(next(iter(batch.values())))
    if isinstance(batch, (list, tuple)):
        return _batch_len(batch[0])
    raise TypeError(f"cannot tell the batch size of a {type(batch).__name__}")


def _autocast(precision: str, device: torch.device) -> contextlib.AbstractContextManager:
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _seed_everything(seed: int, deterministic: bool) -> None:
    """All randomness of training (shuffling, dropout, augmentation) comes from torch."""
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=False)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _rank_rng_states(env: DistEnv, device: torch.device) -> list[dict[str, Tensor]] | None:
    """Every process's generator states (its CPU one, and its GPU's on CUDA), in rank order;
    ``None`` in one process. Their draws differ where their batches do (dropout over a last
    batch of another size), so a resumed process takes its own, not rank 0's."""
    if not env.is_distributed:
        return None
    cpu = torch.get_rng_state()
    mine = cpu if device.type != "cuda" else torch.cat([cpu, torch.cuda.get_rng_state(device)])
    states = env.all_gather(mine.to(device))
    n = cpu.numel()
    return [
        {"torch": s[:n].cpu(), **({"cuda": s[n:].cpu()} if device.type == "cuda" else {})}
        for s in states
    ]


def _set_rank_rng_state(
    states: list[dict[str, Tensor]], env: DistEnv, device: torch.device
) -> None:
    own = states[env.rank]
    torch.set_rng_state(own["torch"])
    if "cuda" in own and device.type == "cuda":
        torch.cuda.set_rng_state(own["cuda"], device)


def _loader(data: Dataset, batch_size: int, sampler: ShardSampler, workers: int) -> DataLoader:
    return DataLoader(
        data,
        batch_size=batch_size,
        sampler=sampler,
        drop_last=False,
        num_workers=workers,
        persistent_workers=False,
    )


def _check_data(name: str, data: Dataset) -> int:
    try:
        n = len(cast(Sized, data))  # a Dataset need not have one: TypeError
    except TypeError as err:
        raise ValueError(f"{name} must be a map-style Dataset with a length") from err
    if n == 0:
        raise ValueError(f"{name} is empty")
    return n


def _mean_loss(
    net: nn.Module, loader: DataLoader, device: torch.device, precision: str, env: DistEnv
) -> float:
    """Sample-weighted mean loss over ``loader``, summed exactly across processes."""
    total, count = 0.0, 0
    with torch.no_grad():
        for batch in loader:
            batch = _to(batch, device)
            with _autocast(precision, device):
                loss = net(batch)
            n = _batch_len(batch)
            total += float(loss) * n
            count += n
    total, count_f = env.all_sum([total, float(count)])
    return total / max(count_f, 1.0)


@dataclass
class _RunState:
    """Everything that a checkpoint must carry besides weights, optimizer and scheduler."""

    epoch: int = 0  # completed epochs
    global_step: int = 0
    best_loss: float = math.inf
    best_epoch: int = 0
    bad_epochs: int = 0
    best_state: dict[str, Tensor] | None = None
    history: list[dict[str, float]] = field(default_factory=list)
    precision: str | None = None  # what the run trained in (None: a checkpoint without it)
    compiled: bool | None = None  # whether it trained compiled (None: a checkpoint without it)
    phase: str = TRAINING  # TRAINED once the loop has ended: a resume goes straight on


@dataclass
class _Run:
    """The pieces of one training run, built once by :func:`fit`."""

    model: nn.Module
    net: nn.Module  # the loss module, DDP-wrapped under torchrun
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LambdaLR
    train_sampler: ShardSampler
    train_loader: DataLoader
    val_loader: DataLoader
    device: torch.device
    precision: str
    env: DistEnv
    config: TrainConfig
    ckpt_path: Path | None
    run_key: dict[str, Any] = field(default_factory=dict)
    switch: CompileSwitch | None = None  # eager or compiled, per batch
    average: WeightAverage | None = None  # ema_decay: the weights validated and kept
    steps_per_epoch: int = 0  # optimizer steps of every process: its largest shard's batches


def fit(
    model: nn.Module,
    train_data: Dataset,
    val_data: Dataset,
    config: TrainConfig,
    *,
    on_step: Callable[[int, float], None] | None = None,
    run_key: Mapping[str, Any] | None = None,
    sample_weights: Sequence[float] | Tensor | None = None,
    turn_seconds: float | None = None,
) -> FitResult:
    """Train ``model`` on ``train_data``, early-stopping on the loss over ``val_data``.

    AdamW with linear warmup and cosine decay, gradient clipping, early stopping with the
    best weights restored at the end, seeding, bf16 autocast where it pays. With a
    ``checkpoint_dir`` a checkpoint (weights, optimizer, scheduler, RNG states, counters,
    best weights) is written atomically after every epoch, and ``resume=True`` continues
    from it: a run killed at any point and resumed ends with the same weights as a run that
    was never interrupted. Under ``torchrun`` the same call trains with
    DistributedDataParallel, each process seeing its own shard of every epoch; only rank 0
    writes checkpoints.

    Args:
        model: a module with ``loss(batch)`` and ``predict(batch)`` (see :class:`Trainable`).
        train_data: map-style dataset of training samples (shuffled each epoch).
        val_data: map-style dataset for the early-stopping loss.
        config: a :class:`~mfgtx.train.TrainConfig`.
        on_step: called after each optimizer step with ``(global_step, loss)``.
        run_key: what else the run depends on, as plain JSON-like data (a job passes its
            data, windows, split and model settings and a fingerprint of the training
            set). It is saved in every checkpoint, and ``resume=True`` refuses a checkpoint
            whose ``run_key`` differs, naming each changed key.
        sample_weights: ``(len(train_data),)`` draw weights: each epoch is then
            ``len(train_data)`` draws with replacement, each sample drawn in proportion to
            its weight (e.g. ``1 / count`` of its class, so that every batch holds the rare
            defects; :meth:`mfgtx.images.Balancing.sample_weights`), instead of one shuffled
            pass. The draws depend only on ``seed`` and the epoch, so a resumed run replays
            them (put what the weights come from in ``run_key``). ``None``: a shuffled pass.
        turn_seconds: train in turns (needs ``checkpoint_dir``, one process): return after
            the first epoch that ends this many seconds after the call began, its checkpoint
            written, with ``paused=True`` when training would go on; call again with
            ``resume=True`` for the next turn. The turns end with the weights of one
            uninterrupted call. ``None``: train to the end.

    Returns:
        :class:`FitResult`. The model ends with the best validation weights, in eval mode
        (``paused``: the last epoch's weights).

    Raises:
        NonFiniteLossError: the training loss became NaN or infinite (the message names
            the epoch and step; the last checkpoint is left as it was).
        CheckpointError: ``resume=True`` met a corrupted checkpoint or one written with
            another training configuration.
    """
    started = time.perf_counter()
    run = _build_run(model, train_data, val_data, config, dict(run_key or {}), sample_weights)
    if turn_seconds is not None and (run.ckpt_path is None or run.env.world_size > 1):
        raise ValueError(
            "turn_seconds: training in turns resumes from the checkpoint in one process; give "
            f"a checkpoint_dir and train in one process (found {run.env.world_size} processes)"
        )
    turn_ends = None if turn_seconds is None else started + turn_seconds
    with keep_freed_memory(run.device.type == "cpu"):  # a step reuses the last one's pages
        return _fit(run, train_data, on_step, turn_ends)


def _fit(
    run: _Run,
    train_data: Dataset,
    on_step: Callable[[int, float], None] | None,
    turn_ends: float | None,
) -> FitResult:
    model, config = run.model, run.config
    state = _RunState()
    if config.resume and run.ckpt_path is not None and run.ckpt_path.exists():
        state = _restore(run, run.ckpt_path)
    run.precision = _pick_precision(run, train_data, state.precision)
    run.switch = _compile_switch(run, state)
    resumed_from = state.epoch
    progress = Progress(
        config.progress if run.env.is_main else "off",
        epochs=config.epochs,
        steps_per_epoch=len(run.train_loader),
        log_every=config.log_every,
    )
    log.info(
        "training on %s, precision %s, %d process(es), %d steps per epoch",
        run.device,
        run.precision,
        run.env.world_size,
        len(run.train_loader),
    )
    patience = config.patience or math.inf
    out_of_time = False
    trained = state.phase == TRAINED
    if trained:
        log.info(
            "the checkpoint holds a finished training (%d epochs, best %d): no step is run, "
            "evaluation starts from its weights",
            state.epoch,
            state.best_epoch,
        )
    while not trained and state.epoch < config.epochs and state.bad_epochs < patience:
        if out_of_time := _out_of_time(run, state):
            break
        t0 = time.perf_counter()
        train_loss, samples_per_s = _train_epoch(run, state, progress, on_step)
        run.net.eval()
        judged = _LossModule(run.average.model) if run.average else _unwrapped(run.net)
        val_loss = _mean_loss(judged, run.val_loader, run.device, run.precision, run.env)
        state.epoch += 1
        if val_loss < state.best_loss - config.min_delta:
            state.best_loss, state.best_epoch, state.bad_epochs = val_loss, state.epoch, 0
            kept = run.average.model if run.average else model
            state.best_state = {
                k: v.detach().to("cpu", copy=True) for k, v in kept.state_dict().items()
            }
        else:
            state.bad_epochs += 1
        state.history.append(
            {
                "epoch": state.epoch,
                "train_loss": train_loss,
                "val_loss": val_loss,
                "lr": float(run.scheduler.get_last_lr()[0]),
                "seconds": time.perf_counter() - t0,
                "samples_per_s": samples_per_s,
            }
        )
        progress.end_epoch(
            f"epoch {state.epoch}: train {train_loss:.4g} val {val_loss:.4g} "
            f"({samples_per_s:.0f} samples/s)"
        )
        _save(run, state)
        if turn_ends is not None and time.perf_counter() >= turn_ends:
            if state.epoch < config.epochs and state.bad_epochs < patience:
                log.info("turn ended after epoch %d; the next turn resumes", state.epoch)
                return _result(run, state, resumed_from, stopped_early=False, paused=True)
    stopped_early = state.epoch < config.epochs
    if out_of_time:
        log.info(
            "stopped after epoch %d: the next would end past max_minutes=%g; best epoch %d",
            state.epoch,
            config.max_minutes,
            state.best_epoch,
        )
    elif stopped_early and not trained:
        log.info("early stop after epoch %d: best epoch %d", state.epoch, state.best_epoch)
    if not trained:  # the weights to evaluate are kept before any evaluation starts
        state.phase = TRAINED
        _save(run, state)
    if state.best_state is not None:
        model.load_state_dict(state.best_state)
    model.eval()
    return _result(run, state, resumed_from, stopped_early=stopped_early, trained=trained)


def _result(
    run: _Run,
    state: _RunState,
    resumed_from: int,
    *,
    stopped_early: bool,
    trained: bool = False,
    paused: bool = False,
) -> FitResult:
    assert run.switch is not None  # set before the first epoch
    return FitResult(
        history=tuple(state.history),
        best_epoch=state.best_epoch,
        best_val_loss=state.best_loss,
        stopped_early=stopped_early,
        precision=run.precision,
        compiled=bool(run.switch.compiled),
        device=str(run.device),
        world_size=run.env.world_size,
        resumed_from_epoch=resumed_from,
        checkpoint=str(run.ckpt_path) if run.ckpt_path else None,
        config=run.config.to_dict(),
        resumed_trained=trained,
        paused=paused,
    )


def _unwrapped(net: nn.Module) -> nn.Module:
    """``net`` without DistributedDataParallel: the same loss, no collective per batch.

    Validation shards may differ by a batch, and DDP broadcasts the model's buffers before
    every forward: a process with one batch more would wait on a broadcast the others never
    send. The weights and buffers are the same on every process, so nothing is lost."""
    return net.module if isinstance(net, DistributedDataParallel) else net


def _out_of_time(run: _Run, state: _RunState) -> bool:
    """Whether another epoch, as long as the last, would end past ``max_minutes``.

    Training time is the epochs' own seconds in the history, so a resumed run counts what
    it trained before. Every process agrees: one out of time stops them all.
    """
    limit = run.config.max_minutes
    if limit is None or not state.history:
        return False
    spent = sum(h["seconds"] for h in state.history)
    late = spent + state.history[-1]["seconds"] > limit * 60
    return run.env.all_sum([float(late)])[0] > 0


def _build_run(
    model: nn.Module,
    train_data: Dataset,
    val_data: Dataset,
    config: TrainConfig,
    run_key: dict[str, Any],
    sample_weights: Sequence[float] | Tensor | None = None,
) -> _Run:
    if not callable(getattr(model, "loss", None)):
        raise TypeError(f"{type(model).__name__} has no loss(batch) method; see Trainable")
    n_train = _check_data("train_data", train_data)
    n_val = _check_data("val_data", val_data)
    device = _device(config)
    env = setup_distributed(device.type)
    if env.is_distributed and device.type == "cuda":
        device = torch.device("cuda", env.local_rank)
    _seed_everything(config.seed, config.deterministic)
    model.to(device)
    net: nn.Module = _LossModule(model)
    if env.is_distributed:
        ids = [device.index] if device.type == "cuda" else None
        net = DistributedDataParallel(net, device_ids=ids)
    optimizer = build_optimizer(model, config)
    average = WeightAverage(model, config.ema_decay) if config.ema_decay is not None else None
    rank, world_size = env.rank, env.world_size
    if n_train < world_size:
        raise ValueError(
            f"train_data has {n_train} sample(s) for {world_size} processes: each process "
            "needs at least one; train with fewer processes"
        )
    train_sampler = ShardSampler(
        n_train, rank=rank, world_size=world_size, seed=config.seed, weights=sample_weights
    )
    val_sampler = ShardSampler(n_val, rank=rank, world_size=world_size, shuffle=False)
    train_loader = _loader(train_data, config.batch_size, train_sampler, config.num_workers)
    # every process takes as many steps as the largest shard has batches (rank 0's), so
    # that their optimizers, schedules and weights stay the same (_train_epoch)
    steps_per_epoch = math.ceil(len(range(0, n_train, world_size)) / config.batch_size)
    total_steps = steps_per_epoch * config.epochs
    warmup = int(config.warmup_fraction * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: warmup_cosine(s, total_steps, warmup, config.min_lr_ratio)
    )
    return _Run(
        model=model,
        net=net,
        optimizer=optimizer,
        scheduler=scheduler,
        train_sampler=train_sampler,
        train_loader=train_loader,
        val_loader=_loader(val_data, config.batch_size, val_sampler, config.num_workers),
        device=device,
        precision=resolve_precision(config.precision, device),
        env=env,
        config=config,
        ckpt_path=Path(config.checkpoint_dir) / CHECKPOINT_NAME if config.checkpoint_dir else None,
        run_key=run_key,
        average=average,
        steps_per_epoch=steps_per_epoch,
    )


def _pick_precision(run: _Run, train_data: Dataset, resumed: str | None) -> str:
    """The precision to train in; for ``"auto"`` on bf16-capable hardware, the faster one.

    A resumed run keeps the precision its checkpoint trained in, so that timing noise cannot
    make it continue differently from the run it resumes.
    """
    if run.config.precision != "auto" or run.precision == "fp32":
        return run.precision  # asked for explicitly, or hardware without fast bf16: no timing
    if resumed is not None:
        log.info("precision auto: %s, as the resumed checkpoint trained", resumed)
        return resumed
    seconds = _time_precisions(run, train_data)
    if run.env.is_distributed:  # every process must train in the same precision
        seconds = dict(zip(seconds, run.env.all_sum(list(seconds.values())), strict=True))
    picked = fastest(seconds)
    log.info(
        "precision auto on %s: %s per step -> %s",
        run.device,
        ", ".join(f"{p} {seconds[p]:.3f} s" for p in PRECISIONS),
        picked,
    )
    return picked


def _time_precisions(run: _Run, train_data: Dataset) -> dict[str, float]:
    """Median seconds per training step in each precision, timed on a copy of the model.

    The copy has its own optimizer and the batch is the first ``batch_size`` samples,
    collated directly (no loader iterator is made); the RNG states are restored afterwards.
    The model, its optimizer, the scheduler, the RNG and the data order are left as they were.
    """
    rng = _rng_state()
    try:
        model = copy.deepcopy(run.model).train()
        optimizer = build_optimizer(model, run.config)
        n = min(run.config.batch_size, len(cast(Sized, train_data)))  # checked in fit
        batch = _to(run.train_loader.collate_fn([train_data[i] for i in range(n)]), run.device)

        def step(precision: str) -> None:
            with _autocast(precision, run.device):
                loss = cast(Trainable, model).loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            if run.config.grad_clip is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), run.config.grad_clip)
            optimizer.step()
            if run.device.type == "cuda":
                torch.cuda.synchronize(run.device)

        return choose_precision(step).seconds
    finally:
        _set_rng_state(rng)


def _compile_switch(run: _Run, state: _RunState) -> CompileSwitch:
    """The run's :class:`~mfgtx.train.compiling.CompileSwitch` (eager under ``torchrun`` and
    with ``deterministic=True``)."""
    mode = run.config.compile
    if mode != "off" and (run.env.is_distributed or run.config.deterministic):
        why = "torchrun" if run.env.is_distributed else "deterministic=True"
        if mode == "on":
            warnings.warn(f"compile='on' is not used with {why}: training eagerly", stacklevel=3)
        log.info("compile %s: eager under %s", mode, why)
        mode = "off"
    remaining = len(run.train_loader) * (run.config.epochs - state.epoch)
    return CompileSwitch(
        mode,
        run.net,
        lambda: torch.compile(run.net, dynamic=False),  # one graph: full batches
        total_steps=remaining,
        resumed=state.compiled,
    )


def _forward_backward(run: _Run, batch: Any, full: bool) -> float:
    """Loss and gradients of one batch with the switch's function; the loss as a float.

    A compiled function that raises (compiling it failed) is dropped and the batch is run
    eagerly, which raises again if the error was the batch's own. The gradients are left
    unset for a loss that is not finite: the caller raises.
    """
    assert run.switch is not None  # set before the first epoch
    step_fn = run.switch.step_fn(full)
    for attempt in (step_fn, run.net):
        try:
            with _autocast(run.precision, run.device):
                loss = attempt(batch)
            value = float(loss.detach())
            if not math.isfinite(value):
                return value
            run.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            return value
        except Exception as err:
            if attempt is run.net:
                raise
            run.switch.failed(err)
    raise AssertionError("unreachable")  # pragma: no cover


def _train_epoch(
    run: _Run, state: _RunState, progress: Progress, on_step: Callable[[int, float], None] | None
) -> tuple[float, float]:
    """One pass over this process's shard; returns (mean train loss, samples/s).

    Shards may differ by one sample, and so by one batch. A process whose shard has fewer
    batches than ``run.steps_per_epoch`` takes its missing steps on its last batch with the
    loss times zero: it adds nothing to the gradients summed across processes, and every
    process steps its optimizer, schedule and weight average with the same gradients, so
    they stay the same on every process (and a checkpoint of rank 0's resumes them all).
    """
    assert run.switch is not None  # set before the first epoch
    run.train_sampler.set_epoch(state.epoch)
    run.net.train()
    progress.start_epoch(state.epoch)
    total, count = 0.0, 0
    steps = len(run.train_loader)
    batch: Any = None
    for i, batch in enumerate(run.train_loader):
        t0 = time.perf_counter()
        batch = _to(batch, run.device)
        full = _batch_len(batch) == run.config.batch_size
        value = _forward_backward(run, batch, full)
        if not math.isfinite(value):
            kept = run.ckpt_path if run.ckpt_path and run.ckpt_path.exists() else None
            raise NonFiniteLossError(
                f"loss became {value} at epoch {state.epoch + 1}, step {i + 1} of {steps} "
                f"(global step {state.global_step + 1})"
                + (f"; last good checkpoint: {kept}" if kept else "")
            )
        _step(run, state)
        if run.switch.compiled is None and run.device.type == "cuda":
            torch.cuda.synchronize(run.device)  # the switch is timing steps
        run.switch.done(time.perf_counter() - t0, full)
        n = _batch_len(batch)
        total, count = total + value * n, count + n
        progress.step(i, value, n, float(run.scheduler.get_last_lr()[0]))
        if on_step is not None:
            on_step(state.global_step, value)
    for _ in range(run.steps_per_epoch - steps):  # this shard is a batch short
        with _autocast(run.precision, run.device):
            nothing = run.net(batch) * 0.0
        run.optimizer.zero_grad(set_to_none=True)
        nothing.backward()
        _step(run, state)
    samples_per_s = progress.samples_per_s() * run.env.world_size
    total, count_f = run.env.all_sum([total, float(count)])
    return total / max(count_f, 1.0), samples_per_s


def _step(run: _Run, state: _RunState) -> None:
    """The optimizer step on the gradients in place: clipping, weight average, schedule."""
    if run.config.grad_clip is not None:
        torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.config.grad_clip)
    run.optimizer.step()
    if run.average is not None:
        run.average.update(run.model, state.global_step + 1)
    run.scheduler.step()
    state.global_step += 1


def _save(run: _Run, state: _RunState) -> None:
    if run.ckpt_path is None:
        return
    rank_rng = _rank_rng_states(run.env, run.device)  # every process takes part
    if run.env.is_main:
        save_checkpoint(
            run.ckpt_path,
            {
                "model": run.model.state_dict(),
                "optimizer": run.optimizer.state_dict(),
                "scheduler": run.scheduler.state_dict(),
                "rng": _rng_state(),
                "rank_rng": rank_rng,
                "epoch": state.epoch,
                "global_step": state.global_step,
                "best_loss": state.best_loss,
                "best_epoch": state.best_epoch,
                "bad_epochs": state.bad_epochs,
                "best_state": state.best_state,
                "average": run.average.state_dict() if run.average else None,
                "history": state.history,
                "precision": run.precision,
                "compiled": run.switch.compiled if run.switch else None,
                "config": _resume_key(run.config),
                "run_key": run.run_key,
                "phase": state.phase,
            },
        )
    run.env.barrier()


def _current(model: nn.Module, state: dict[str, Tensor]) -> dict[str, Tensor]:
    """``state`` without the tensors ``model`` names in ``RETIRED_TENSORS`` (held by
    checkpoints of earlier versions, no longer part of the model), as bundles are read."""
    retired: frozenset[str] = getattr(model, "RETIRED_TENSORS", frozenset())
    if not retired:
        return state
    return {k: v for k, v in state.items() if k not in retired}


def _restore(run: _Run, path: Path) -> _RunState:
    ckpt = load_checkpoint(path)
    _check_resumable(ckpt, run.config, path)
    _check_run_key(ckpt.get("run_key", {}), run.run_key, path)
    run.model.load_state_dict(_current(run.model, ckpt["model"]))
    run.optimizer.load_state_dict(ckpt["optimizer"])
    run.scheduler.load_state_dict(ckpt["scheduler"])
    if run.average is not None:
        run.average.load_state_dict(_current(run.model, ckpt["average"]))
    _set_rng_state(ckpt["rng"])
    rank_rng = ckpt.get("rank_rng")  # None: one process, or a checkpoint without them
    if rank_rng is not None and len(rank_rng) == run.env.world_size:
        _set_rank_rng_state(rank_rng, run.env, run.device)
    log.info("resumed from %s after epoch %d", path, int(ckpt["epoch"]))
    return _RunState(
        epoch=int(ckpt["epoch"]),
        global_step=int(ckpt["global_step"]),
        best_loss=float(ckpt["best_loss"]),
        best_epoch=int(ckpt["best_epoch"]),
        bad_epochs=int(ckpt["bad_epochs"]),
        best_state=None if ckpt["best_state"] is None else _current(run.model, ckpt["best_state"]),
        history=[dict(h) for h in ckpt["history"]],
        precision=ckpt.get("precision"),
        compiled=ckpt.get("compiled"),
        phase=str(ckpt.get("phase", TRAINING)),
    )


def _resume_key(config: TrainConfig) -> dict[str, Any]:
    return {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in config.to_dict().items()
        if k in WEIGHT_FIELDS
    }


def _check_resumable(state: dict[str, Any], config: TrainConfig, path: Path) -> None:
    saved, now = state.get("config", {}), _resume_key(config)
    changed = [f"{k}: {saved.get(k)!r} -> {now[k]!r}" for k in now if saved.get(k) != now[k]]
    if changed:
        raise CheckpointError(
            f"cannot resume from {path}: the training configuration changed "
            f"({'; '.join(changed)}); start a new run in another checkpoint_dir or restore "
            "the settings"
        )


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists stay values)."""
    if not isinstance(data, Mapping):
        return {prefix: data}
    out: dict[str, Any] = {}
    for k, v in data.items():
        out.update(_flat(v, f"{prefix}.{k}" if prefix else str(k)))
    return out


def _check_run_key(saved: Mapping[str, Any], now: Mapping[str, Any], path: Path) -> None:
    old, new = _flat(saved), _flat(now)
    changed = [
        f"{k}: {old.get(k, '(not set)')!r} -> {new.get(k, '(not set)')!r}"
        for k in sorted(set(old) | set(new))
        if old.get(k, "(not set)") != new.get(k, "(not set)")
    ]
    if changed:
        shown = "; ".join(changed[:8]) + (
            f"; and {len(changed) - 8} more" if len(changed) > 8 else ""
        )
        raise CheckpointError(
            f"cannot resume from {path}: the run it belongs to had other settings or data "
            f"({shown}); restore them, or start a new run without --resume"
        )


def _eval_loader(data: Dataset, batch_size: int) -> DataLoader:
    return DataLoader(data, batch_size=batch_size, shuffle=False, drop_last=False)


def evaluate(
    model: nn.Module, data: Dataset, *, batch_size: int = 256, precision: str = "fp32"
) -> dict[str, float]:
    """Mean loss over every sample of ``data`` (the last partial batch included)."""
    n = _check_data("data", data)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    try:
        loss = _mean_loss(
            _LossModule(model), _eval_loader(data, batch_size), device, precision, DistEnv()
        )
    finally:
        model.train(was_training)
    return {"loss": loss, "n_samples": float(n)}


def _batches(data: Dataset, batch_size: int, device: torch.device) -> Iterator[Any]:
    for batch in _eval_loader(data, batch_size):
        yield _to(batch, device)


def predict(model: nn.Module, data: Dataset, *, batch_size: int = 256) -> Tensor:
    """``model.predict`` over every sample of ``data`` in order, concatenated on the CPU."""
    _check_data("data", data)
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    outs = []
    try:
        with torch.no_grad():
            for batch in _batches(data, batch_size, device):
                outs.append(cast(Trainable, model).predict(batch).float().cpu())
    finally:
        model.train(was_training)
    return torch.cat(outs)
