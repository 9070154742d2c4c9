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
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import Tensor, nn
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import DataLoader, Dataset

from mfgtx.train.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mfgtx.train.config import TrainConfig
from mfgtx.train.distributed import DistEnv, ShardSampler, setup_distributed
from mfgtx.train.precision import resolve_precision
from mfgtx.train.progress import Progress
from mfgtx.train.schedule import warmup_cosine

__all__ = ["FitResult", "NonFiniteLossError", "Trainable", "evaluate", "fit", "predict"]

log = logging.getLogger("mfgtx.train")

CHECKPOINT_NAME = "last.ckpt"


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
        stopped_early: ``True`` when patience ran out before ``epochs``.
        precision: ``"fp32"`` or ``"bf16"``, what actually ran.
        device: the device trained on.
        world_size: number of processes.
        resumed_from_epoch: the completed epochs found in the checkpoint (0 if none).
        checkpoint: path of ``last.ckpt`` or ``None``.
    """

    history: tuple[dict[str, float], ...]
    best_epoch: int
    best_val_loss: float
    stopped_early: bool
    precision: str
    device: str
    world_size: int
    resumed_from_epoch: int = 0
    checkpoint: str | None = None
    config: dict[str, Any] = field(default_factory=dict)


class _LossModule(nn.Module):
    """Routes ``loss`` through ``forward`` so that DistributedDataParallel syncs gradients."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, batch: Any) -> Tensor:
        return self.model.loss(batch)  # type: ignore[operator]


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


def _param_groups(model: nn.Module, weight_decay: float) -> list[dict[str, Any]]:
    decay, no_decay = [], []
    for p in model.parameters():
        if p.requires_grad:
            (decay if p.dim() >= 2 else no_decay).append(p)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]


def _rng_state() -> dict[str, Any]:
    state: dict[str, Any] = {"torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


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
        n = len(data)  # type: ignore[arg-type]
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


def fit(
    model: nn.Module,
    train_data: Dataset,
    val_data: Dataset,
    config: TrainConfig,
    *,
    on_step: Callable[[int, float], None] | None = None,
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

    Returns:
        :class:`FitResult`. The model ends with the best validation weights, in eval mode.

    Raises:
        NonFiniteLossError: the training loss became NaN or infinite (the message names
            the epoch and step; the last checkpoint is left as it was).
    """
    if not callable(getattr(model, "loss", None)):
        raise TypeError(f"{type(model).__name__} has no loss(batch) method; see Trainable")
    n_train = _check_data("train_data", train_data)
    _check_data("val_data", val_data)
    device = _device(config)
    env = setup_distributed(device.type)
    if env.is_distributed and device.type == "cuda":
        device = torch.device("cuda", env.local_rank)
    precision = resolve_precision(config.precision, device)
    _seed_everything(config.seed, config.deterministic)

    model.to(device)
    net: nn.Module = _LossModule(model)
    if env.is_distributed:
        net = DistributedDataParallel(
            net, device_ids=[device.index] if device.type == "cuda" else None
        )
    optimizer = torch.optim.AdamW(
        _param_groups(model, config.weight_decay), lr=config.lr, betas=config.betas
    )
    train_sampler = ShardSampler(
        n_train, rank=env.rank, world_size=env.world_size, seed=config.seed
    )
    val_sampler = ShardSampler(
        len(val_data), rank=env.rank, world_size=env.world_size, shuffle=False
    )  # type: ignore[arg-type]
    train_loader = _loader(train_data, config.batch_size, train_sampler, config.num_workers)
    val_loader = _loader(val_data, config.batch_size, val_sampler, config.num_workers)
    steps_per_epoch = len(train_loader)
    total_steps = steps_per_epoch * config.epochs
    warmup = int(config.warmup_fraction * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: warmup_cosine(s, total_steps, warmup, config.min_lr_ratio)
    )

    ckpt_path = Path(config.checkpoint_dir) / CHECKPOINT_NAME if config.checkpoint_dir else None
    start_epoch, global_step, bad_epochs = 0, 0, 0
    best_loss, best_epoch = math.inf, 0
    best_state: dict[str, Tensor] | None = None
    history: list[dict[str, float]] = []
    if config.resume and ckpt_path is not None and ckpt_path.exists():
        state = load_checkpoint(ckpt_path)
        _check_resumable(state, config, ckpt_path)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        _set_rng_state(state["rng"])
        start_epoch, global_step = int(state["epoch"]), int(state["global_step"])
        best_loss, best_epoch = float(state["best_loss"]), int(state["best_epoch"])
        bad_epochs, best_state = int(state["bad_epochs"]), state["best_state"]
        history = [dict(h) for h in state["history"]]
        log.info("resumed from %s after epoch %d", ckpt_path, start_epoch)
    resumed_from = start_epoch

    progress = Progress(
        config.progress if env.is_main else "off",
        epochs=config.epochs,
        steps_per_epoch=steps_per_epoch,
        log_every=config.log_every,
    )
    log.info(
        "training on %s, precision %s, %d process(es), %d samples, %d steps per epoch",
        device,
        precision,
        env.world_size,
        n_train,
        steps_per_epoch,
    )
    stopped_early = start_epoch < config.epochs and bad_epochs >= (config.patience or math.inf)
    for epoch in range(start_epoch, config.epochs):
        if stopped_early:
            break
        t0 = time.perf_counter()
        train_sampler.set_epoch(epoch)
        net.train()
        progress.start_epoch(epoch)
        total, count = 0.0, 0
        join = net.join() if isinstance(net, DistributedDataParallel) else contextlib.nullcontext()
        with join:
            for i, batch in enumerate(train_loader):
                batch = _to(batch, device)
                with _autocast(precision, device):
                    loss = net(batch)
                value = float(loss.detach())
                if not math.isfinite(value):
                    where = (
                        f"epoch {epoch + 1}, step {i + 1} of {steps_per_epoch} "
                        f"(global step {global_step + 1})"
                    )
                    kept = (
                        f"; last good checkpoint: {ckpt_path}"
                        if ckpt_path and ckpt_path.exists()
                        else ""
                    )
                    raise NonFiniteLossError(f"loss became {value} at {where}{kept}")
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                if config.grad_clip is not None:
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.grad_clip)
                optimizer.step()
                scheduler.step()
                global_step += 1
                n = _batch_len(batch)
                total += value * n
                count += n
                progress.step(i, value, n, scheduler.get_last_lr()[0])
                if on_step is not None:
                    on_step(global_step, value)
        samples_per_s = progress.samples_per_s() * env.world_size
        total, count_f = env.all_sum([total, float(count)])
        train_loss = total / max(count_f, 1.0)
        net.eval()
        val_loss = _mean_loss(net, val_loader, device, precision, env)
        if val_loss < best_loss - config.min_delta:
            best_loss, best_epoch, bad_epochs = val_loss, epoch + 1, 0
            best_state = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
        else:
            bad_epochs += 1
        record = {
            "epoch": epoch + 1,
            "train_loss": train_loss,
            "val_loss": val_loss,
            "lr": scheduler.get_last_lr()[0],
            "seconds": time.perf_counter() - t0,
            "samples_per_s": samples_per_s,
        }
        history.append(record)
        progress.end_epoch(
            f"epoch {epoch + 1}: train {train_loss:.4g} val {val_loss:.4g} "
            f"({samples_per_s:.0f} samples/s)"
        )
        stopped_early = config.patience is not None and bad_epochs >= config.patience
        if ckpt_path is not None:
            if env.is_main:
                save_checkpoint(
                    ckpt_path,
                    {
                        "model": model.state_dict(),
                        "optimizer": optimizer.state_dict(),
                        "scheduler": scheduler.state_dict(),
                        "rng": _rng_state(),
                        "epoch": epoch + 1,
                        "global_step": global_step,
                        "best_loss": best_loss,
                        "best_epoch": best_epoch,
                        "bad_epochs": bad_epochs,
                        "best_state": best_state,
                        "history": history,
                        "config": _resume_key(config),
                    },
                )
            env.barrier()
        if stopped_early:
            log.info("early stop after epoch %d: best epoch %d", epoch + 1, best_epoch)

    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return FitResult(
        history=tuple(history),
        best_epoch=best_epoch,
        best_val_loss=best_loss,
        stopped_early=stopped_early and len(history) < config.epochs,
        precision=precision,
        device=str(device),
        world_size=env.world_size,
        resumed_from_epoch=resumed_from,
        checkpoint=str(ckpt_path) if ckpt_path else None,
        config=config.to_dict(),
    )


_RESUME_FIELDS = (
    "epochs",
    "batch_size",
    "lr",
    "weight_decay",
    "betas",
    "warmup_fraction",
    "min_lr_ratio",
    "grad_clip",
    "patience",
    "min_delta",
    "seed",
)


def _resume_key(config: TrainConfig) -> dict[str, Any]:
    return {
        k: (list(v) if isinstance(v, tuple) else v)
        for k, v in config.to_dict().items()
        if k in _RESUME_FIELDS
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
                outs.append(model.predict(batch).float().cpu())  # type: ignore[operator]
    finally:
        model.train(was_training)
    return torch.cat(outs)


def copy_model(model: nn.Module) -> nn.Module:
    """A deep copy (used by tests and benchmarks to compare runs)."""
    return copy.deepcopy(model)
