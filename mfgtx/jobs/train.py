"""``train``: data -> split and audit -> fit -> calibrate -> compare with baselines -> bundle.

Trainers are registered by kind in :data:`TRAINERS`: ``sensor`` (here), ``forecast``
(:mod:`mfgtx.jobs.forecast`) and ``vit`` (:mod:`mfgtx.jobs.vit`). A kind whose model is not
in a version maps to ``None`` and :func:`train` raises :class:`NotAvailableError`; wiring a
new model in is one function and one line in the registry.

The bundle is written atomically by :func:`mfgtx.artifacts.save_bundle` (the old one stays
until the new one is complete). Training checkpoints go to ``train.checkpoint_dir``
(default ``<bundle>.ckpt``) after every epoch; ``resume=True`` continues from the last one,
and a successful run removes them. Under ``torchrun`` every process trains its shard and
only rank 0 calibrates, evaluates and writes.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mfgtx.calibration import class_probabilities
from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.forecast import train_forecast
from mfgtx.jobs.prepare import load_windows, split_windows
from mfgtx.jobs.vit import train_vit

__all__ = ["TRAINERS", "NotAvailableError", "TrainOutcome", "train", "train_sensor", "trainer_for"]

log = logging.getLogger(__name__)


class NotAvailableError(RuntimeError):
    """The requested model kind is not part of this version of mfgtx."""


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
    world_size: int = 1
    report_markdown: str = ""

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "report_markdown"}
        return {"command": "train", **out}


def outcome(
    kind: str,
    task: str,
    fitted: Any,
    t0: float,
    counts: dict[str, int],
    audit_passed: bool,
    *,
    path: Path | None = None,
    checkpoint_dir: str | None = None,
    report: Any = None,
    metrics: dict[str, float] | None = None,
) -> TrainOutcome:
    """The :class:`TrainOutcome` of a finished fit. With ``path`` (rank 0 wrote the bundle)
    the bundle is verified, its id taken and the checkpoints removed (a rerun starts fresh)."""
    bundle_id = None
    if path is not None:
        from mfgtx.artifacts import verify_bundle

        bundle_id = verify_bundle(path)["bundle_id"]
        if checkpoint_dir is not None:
            shutil.rmtree(checkpoint_dir, ignore_errors=True)
        if report is not None:
            log.info("%s: %s %s", path, report.verdict, report.how_sure)
    return TrainOutcome(
        kind=kind,
        task=task,
        bundle=None if path is None else str(path),
        bundle_id=bundle_id,
        epochs_run=len(fitted.history),
        best_epoch=fitted.best_epoch,
        resumed_from_epoch=fitted.resumed_from_epoch,
        stopped_early=fitted.stopped_early,
        seconds=round(time.perf_counter() - t0, 3),
        windows=counts,
        audit_passed=audit_passed,
        metrics=metrics or {},
        verdict="" if report is None else report.verdict,
        world_size=fitted.world_size,
        report_markdown="" if report is None else report.to_markdown(),
    )


OnStep = Callable[[int, float], None]
Trainer = Callable[[JobConfig, bool, "OnStep | None"], TrainOutcome]


def run_key(config: JobConfig, kind: str, *fingerprint: Any) -> dict[str, Any]:
    """What a training run depends on besides the training loop's settings: the job's
    data, windows, split and model sections and a digest of the training and validation
    data (``fingerprint``: arrays or text). Saved in every checkpoint; ``--resume``
    refuses a checkpoint whose key differs (:func:`mfgtx.train.fit`)."""
    import hashlib

    job = config.to_dict()
    sections = {"sensor": ("model",), "forecast": ("forecast",), "vit": ("images", "vit")}
    key: dict[str, Any] = {"kind": kind}
    for name in ("data", "windows", "split", "calibration", *sections[kind]):
        key[name] = job.get(name)
    if isinstance(key.get("data"), dict):  # how the input is read does not change it
        for source in (key["data"].get("source"), (key["data"].get("labels") or {}).get("source")):
            if isinstance(source, dict):
                source.pop("chunk_rows", None)
    digest = hashlib.sha256()
    for part in fingerprint:
        data = part.tobytes() if isinstance(part, np.ndarray) else str(part).encode()
        digest.update(hashlib.sha256(data).digest())
    key["training_data_sha256"] = digest.hexdigest()
    return key


def rank() -> int:
    """This process's rank under ``torchrun`` (0 alone)."""
    return int(os.environ.get("RANK", "0"))


def _predict(model: torch.nn.Module, windows: Any, idx: np.ndarray, scaler: Any) -> np.ndarray:
    from mfgtx.data import WindowDataset
    from mfgtx.train import predict

    return predict(model, WindowDataset(windows, idx, scaler, target="none")).numpy()


def _calibrate(config: JobConfig, logits: np.ndarray, y: np.ndarray) -> Any:
    from mfgtx.calibration import Calibration, TemperatureScaler, choose_threshold

    if len(np.unique(y)) < 2:
        log.warning(
            "no calibration: the validation windows hold only class %d; the bundle keeps "
            "uncalibrated probabilities (use more lots or a larger split.val_size)",
            int(y[0]) if len(y) else -1,
        )
        return None
    temperature = TemperatureScaler.fit(logits, y)
    prob = temperature.transform(logits)[:, 1]
    try:
        choice = choose_threshold(prob, y, cost_missed_defect=config.calibration.cost_ratio)
    except ValueError as e:  # e.g. no bad lot among the validation lots
        log.warning("no operating threshold chosen: %s", e)
        choice = None
    return Calibration(temperature, choice)


def _fingerprint(windows: Any, sets: Any) -> tuple[np.ndarray, ...]:
    """The training and validation windows' inputs and labels, for :func:`run_key`."""
    both = np.concatenate([np.asarray(sets.train), np.asarray(sets.val)])
    parts = [windows.values[windows.rows(both)], windows.lot[both].astype(str)]
    if windows.y is not None:
        parts.append(windows.y[both])
    return tuple(np.ascontiguousarray(p) for p in parts)


def train_sensor(
    config: JobConfig, resume: bool = False, on_step: OnStep | None = None
) -> TrainOutcome:
    """Train a :class:`~mfgtx.models.SensorEncoder` (quality classes or RUL / quality value)."""
    from mfgtx.artifacts import save_bundle
    from mfgtx.baselines import compare, fit_baselines
    from mfgtx.data import WindowDataset
    from mfgtx.models import SensorEncoder, SensorEncoderConfig
    from mfgtx.train import fit

    t0 = time.perf_counter()
    config.require("bundle")
    bundle = Path(str(config.bundle))
    task, m = config.model.task, config.model
    windows, cols = load_windows(config)
    prep = split_windows(config, windows)
    sets, scaler = prep.sets, prep.scaler
    target = "class" if task == "classification" else "float"
    n_targets = len(windows.targets)
    class_weights = None
    if task == "classification":
        if n_targets != 1:
            raise ConfigError(
                f"{config.source_file}: data.columns.targets: classification takes one target "
                f"column, found {list(windows.targets)}"
            )
        y_train = windows.y[sets.train, 0]
        n_classes = max(2, int(np.nanmax(windows.y[:, 0])) + 1)
        counts = np.bincount(y_train.astype(int), minlength=n_classes).astype(float)
        class_weights = tuple(
            float(min(10.0, counts.sum() / (n_classes * max(c, 1.0)))) for c in counts
        )
    model_config = SensorEncoderConfig(
        n_channels=len(windows.sensors),
        max_len=windows.window,
        task=task,
        n_outputs=n_classes if task == "classification" else n_targets,
        quantiles=m.quantiles,
        tokens=m.tokens,
        patch_len=m.patch_len,
        d_model=m.d_model,
        n_heads=m.n_heads,
        n_layers=m.n_layers,
        d_ff=m.d_ff,
        dropout=m.dropout,
        class_weights=class_weights,
        target_scale=m.target_scale,
    )
    ckpt = config.train.checkpoint_dir or f"{bundle}.ckpt"
    train_config = config.train.train_config(ckpt, resume=resume)
    torch.manual_seed(config.train.seed)
    model = SensorEncoder(model_config)
    fitted = fit(
        model,
        WindowDataset(windows, sets.train, scaler, target=target),
        WindowDataset(windows, sets.val, scaler, target=target),
        train_config,
        on_step=on_step,
        run_key=run_key(config, "sensor", *_fingerprint(windows, sets)),
    )
    counts = {"train": len(sets.train), "val": len(sets.val), "test": len(sets.test)}
    counts["purged"] = len(sets.purged)
    if rank() != 0:
        return outcome("sensor", task, fitted, t0, counts, prep.report.passed)

    calibration = None
    if task == "classification":
        y_val = windows.y[prep.val, 0].astype(int)
        calibration = _calibrate(config, _predict(model, windows, prep.val, scaler), y_val)
        test_logits = _predict(model, windows, prep.test, scaler)
        test_pred = class_probabilities(test_logits, calibration)
        if test_pred.shape[1] == 2:
            test_pred = test_pred[:, 1]
    else:
        test_pred = _predict(model, windows, prep.test, scaler)
    baselines = fit_baselines(windows, sets.train, task, scaler=scaler)
    rul = any("rul" in t.lower() for t in windows.targets)
    report = compare(
        task, windows, prep.test, test_pred, baselines, model_name="SensorEncoder", rul=rul
    )
    split = {
        "method": "LotTimeSplit",
        "test_size": config.split.test_size,
        "val_size": config.split.val_size,
        "gap": config.split.gap,
        "evaluate_on": config.split.evaluate_on,
    }
    job = {
        "kind": "sensor",
        "task": task,
        "window": windows.window,
        "stride": windows.stride,
        "time_kind": windows.time_kind,
        "min_rows": config.windows.min_rows,
        "targets": list(windows.targets),
        "config": config.to_dict(),
    }
    path = save_bundle(
        bundle,
        model,
        data_schema=cols,
        scaler=scaler,
        split=split,
        audit=prep.report,
        metrics=report.to_dict(),
        train_config=train_config,
        calibration=calibration,
        precision=fitted.precision,
        extra={"job": job},
        overwrite=True,
    )
    metrics = {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()}
    return outcome(
        "sensor", task, fitted, t0, counts, prep.report.passed,
        path=path, checkpoint_dir=ckpt, report=report, metrics=metrics,
    )  # fmt: skip


#: Trainers by model kind; ``None``: not available in this version.
TRAINERS: dict[str, Trainer | None] = {
    "sensor": train_sensor,
    "forecast": train_forecast,
    "vit": train_vit,
}


def train(
    kind: str, config: JobConfig, *, resume: bool = False, on_step: OnStep | None = None
) -> TrainOutcome:
    """Run the trainer of ``kind`` on ``config``.

    Raises:
        NotAvailableError: ``kind`` is known but its model is not in this version.
        ConfigError: unknown kind or a bad configuration.
    """
    trainer = trainer_for(kind)
    config.require("bundle")
    bundle = Path(str(config.bundle))
    check_train_outputs(config)
    if rank() != 0:  # torchrun: rank 0 holds the lock and writes
        return trainer(config, resume, on_step)
    from mfgtx._files import remove_leftovers
    from mfgtx.jobs._lock import output_lock

    with output_lock(bundle):
        remove_leftovers(bundle)  # staging left by a killed run of this bundle
        return trainer(config, resume, on_step)


def check_train_outputs(config: JobConfig) -> None:
    """The path rules (:mod:`mfgtx.jobs._paths`) for the bundle and its checkpoints."""
    from mfgtx.jobs._paths import PathRules, job_inputs

    rules = PathRules(config.source_file, job_inputs(config))
    rules.bundle_dir("bundle", str(config.bundle))
    rules.bundle_dir("train.checkpoint_dir", config.train.checkpoint_dir or f"{config.bundle}.ckpt")


def trainer_for(kind: str) -> Trainer:
    """The trainer of ``kind``; :class:`NotAvailableError` if not in this version."""
    if kind not in TRAINERS:
        raise ConfigError(f"unknown model kind {kind!r}; expected one of {sorted(TRAINERS)}")
    trainer = TRAINERS[kind]
    if trainer is None:
        raise NotAvailableError(
            f"train {kind}: not available in this version (the {kind} model is not merged yet)"
        )
    return trainer
