"""Training configuration: frozen and validated."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

__all__ = ["WEIGHT_FIELDS", "Precision", "TrainConfig"]

Precision = Literal["auto", "fp32", "bf16"]

#: The :class:`TrainConfig` fields that change the weights a run ends with: a checkpoint
#: resumes only under the same values (``mfgtx.train.loop``), and a sweep may try them
#: (``mfgtx.jobs.sweep``).
WEIGHT_FIELDS = (
    "ema_decay",
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


@dataclass(frozen=True)
class TrainConfig:
    """How :func:`mfgtx.train.fit` trains.

    Args:
        epochs: maximum number of passes over the training data.
        batch_size: samples per optimizer step (per process under ``torchrun``).
        lr: peak learning rate of AdamW.
        weight_decay: AdamW weight decay (not applied to biases, norms and embeddings of
            positions: parameters with fewer than two dimensions).
        betas: AdamW betas.
        warmup_fraction: share of all steps spent warming the learning rate up linearly
            from 0; then it decays along a cosine to ``min_lr_ratio * lr``.
        min_lr_ratio: final learning rate as a fraction of ``lr``.
        grad_clip: clip the global gradient norm to this value (``None``: no clipping).
        ema_decay: keep an exponential moving average of the weights with this decay (for
            example 0.999, about the last thousand steps), validate it instead of the raw
            weights and restore the best epoch's average (:mod:`mfgtx.train.ema`); ``None``
            (the default): the raw weights.
        patience: stop after this many epochs without improvement of the validation loss
            and restore the best weights (``None``: train all epochs, still restore the best).
        max_minutes: a training-time budget: no epoch starts that would end after this many
            minutes of epochs (training and validation, counted across a resume; the next
            epoch is expected to take as long as the last), and the best weights are
            restored as after early stopping. The learning-rate schedule still spans
            ``epochs``: set ``epochs`` to what the budget should hold so that the schedule
            ends, and this as the hard limit. ``None`` (the default): no limit.
        min_delta: the smallest decrease of the validation loss that counts as improvement.
        seed: seeds torch, numpy and random; also fixes the per-epoch shuffling order.
        deterministic: ask torch for deterministic kernels (slower; bitwise repeatable on
            one machine).
        precision: ``"auto"``, ``"fp32"`` or ``"bf16"`` (autocast; bf16 has fp32's exponent
            range, so no loss scaling is needed). ``"auto"`` is fp32 where bf16 cannot be fast
            (CPUs without AMX or AVX512-BF16); where it could be (CUDA with bf16, AMX or
            AVX512-BF16 CPUs), ``fit`` times a few steps of each on a copy of the model and
            trains in bf16 only if it is more than 10 % faster (logged on ``mfgtx.train``;
            closer timings would flip with the machine's load; a resumed run keeps the
            precision of its checkpoint). The timing leaves the model, optimizer, RNG and
            data order untouched, but which precision wins can differ from machine to
            machine: name one for results that must repeat bit for bit elsewhere.
        compile: ``"off"``, ``"auto"`` or ``"on"``: run the training forward and backward of
            full batches through ``torch.compile`` (the last, smaller batch of an epoch and
            validation stay eager). Off by default: on the CPUs measured it did not make
            mfgtx's steps faster (:mod:`mfgtx.train.compiling`). ``"auto"`` compiles only
            where it pays: a run that would train for five minutes or more eagerly, where
            the compiled steps are more than 10 % faster and save more than twice their
            compile time (timed on the run's first steps, logged on ``mfgtx.train``; a
            resumed run keeps its checkpoint's choice). Eager under ``torchrun`` and with
            ``deterministic=True``. Compiling needs a C++ compiler on a CPU; where it
            fails, training runs eagerly.
        device: ``"auto"`` (CUDA if available, else CPU), ``"cpu"`` or ``"cuda"``.
        checkpoint_dir: where ``last.ckpt`` is written atomically at the end of every epoch
            (``None``: no checkpoints).
        resume: continue from ``checkpoint_dir/last.ckpt`` if it exists.
        num_workers: DataLoader worker processes.
        progress: ``"auto"`` (a progress bar when a person watches a terminal, log lines
            otherwise), ``"bar"``, ``"log"`` or ``"off"``.
        log_every: steps between progress log lines.

    Example:
        >>> TrainConfig(epochs=3, lr=3e-4).precision
        'auto'
        >>> TrainConfig(batch_size=0)
        Traceback (most recent call last):
        ...
        ValueError: batch_size must be a positive integer, found 0
    """

    epochs: int = 20
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    warmup_fraction: float = 0.05
    min_lr_ratio: float = 0.0
    grad_clip: float | None = 1.0
    ema_decay: float | None = None
    patience: int | None = 5
    max_minutes: float | None = None
    min_delta: float = 0.0
    seed: int = 0
    deterministic: bool = False
    precision: Precision = "auto"
    compile: Literal["off", "auto", "on"] = "off"
    device: Literal["auto", "cpu", "cuda"] = "auto"
    checkpoint_dir: str | None = None
    resume: bool = False
    num_workers: int = 0
    progress: Literal["auto", "bar", "log", "off"] = "auto"
    log_every: int = 50

    def __post_init__(self) -> None:
        for name in ("epochs", "batch_size", "log_every"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        if not isinstance(self.num_workers, int) or self.num_workers < 0:
            raise ValueError(f"num_workers must be an integer >= 0, found {self.num_workers!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be positive, found {self.lr!r}")
        if self.weight_decay < 0:
            raise ValueError(f"weight_decay must be >= 0, found {self.weight_decay!r}")
        object.__setattr__(self, "betas", tuple(self.betas))
        if len(self.betas) != 2 or not all(0 <= b < 1 for b in self.betas):
            raise ValueError(f"betas must be two numbers in [0, 1), found {self.betas!r}")
        if not 0 <= self.warmup_fraction < 1:
            raise ValueError(f"warmup_fraction must be in [0, 1), found {self.warmup_fraction!r}")
        if not 0 <= self.min_lr_ratio <= 1:
            raise ValueError(f"min_lr_ratio must be in [0, 1], found {self.min_lr_ratio!r}")
        if self.grad_clip is not None and not self.grad_clip > 0:
            raise ValueError(f"grad_clip must be positive or None, found {self.grad_clip!r}")
        if self.ema_decay is not None and not 0.0 < self.ema_decay < 1.0:
            raise ValueError(f"ema_decay must be in (0, 1) or None, found {self.ema_decay!r}")
        if self.patience is not None and (not isinstance(self.patience, int) or self.patience < 1):
            raise ValueError(
                f"patience must be a positive integer or None, found {self.patience!r}"
            )
        if self.max_minutes is not None and not (
            isinstance(self.max_minutes, int | float)
            and not isinstance(self.max_minutes, bool)
            and math.isfinite(self.max_minutes)
            and self.max_minutes > 0
        ):
            raise ValueError(
                f"max_minutes must be a positive number of minutes or None, found "
                f"{self.max_minutes!r}"
            )
        if self.min_delta < 0:
            raise ValueError(f"min_delta must be >= 0, found {self.min_delta!r}")
        choices: dict[str, tuple[str, ...]] = {
            "precision": ("auto", "fp32", "bf16"),
            "compile": ("off", "auto", "on"),
            "device": ("auto", "cpu", "cuda"),
            "progress": ("auto", "bar", "log", "off"),
        }
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, found {getattr(self, name)!r}")
        if self.resume and self.checkpoint_dir is None:
            raise ValueError("resume=True needs a checkpoint_dir to resume from")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
