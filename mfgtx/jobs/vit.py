"""``train vit``: a :class:`~mfgtx.models.DefectViT` on labelled images from a job file.

Images (a folder per class, a ``.zip`` of one, or a CSV manifest with lots and times) ->
split (by lot and time through :mod:`mfgtx.split` when the manifest has lots, stratified
otherwise; byte-identical files always in one set) -> fit on the training images, checkpoint
chosen on the validation images -> temperature scaling on the validation images, and the flag
threshold on P(defect) = 1 - P(good class) for a missed defect costing
``calibration.cost_ratio`` false alarms -> compared on the test images with the majority class
and HOG + logistic regression fitted on the training and validation images -> bundle.

A file that is not a usable image is left out with a warning naming it and the reason (the
summary counts them); training stops only when no image is usable.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from mfgtx.calibration import class_probabilities
from mfgtx.data import DataError
from mfgtx.jobs.config import ConfigError, ImagesSection, JobConfig

if TYPE_CHECKING:
    from mfgtx.jobs.train import OnStep, TrainOutcome

__all__ = [
    "PreparedImages",
    "compare_images",
    "image_records",
    "prepare_images",
    "train_vit",
    "vit_logits",
]

log = logging.getLogger(__name__)

#: Normalisation of the model input: ``(x - MEAN) / STD`` for pixels in [0, 1].
MEAN, STD = 0.5, 0.5


def image_records(images: ImagesSection, file: str = "config") -> Any:
    """The :class:`~mfgtx.images.ImageRecords` of an ``images`` section (errors name the key)."""
    from mfgtx.images import ImageRecords

    try:
        if images.is_manifest:
            return ImageRecords.from_manifest(images.path)
        return ImageRecords.from_folder(images.path, subdir=images.subdir)
    except (ValueError, OSError) as e:
        raise DataError(f"{file}: images.path: {e}") from e


def _sizes(config: JobConfig) -> tuple[float, float]:
    test, val = config.split.test_size, config.split.val_size
    if not (0 < test < 1 and 0 < val < 1):
        raise ConfigError(
            f"{config.source_file}: split: train vit takes test_size and val_size as shares "
            f"of the images in (0, 1), found {test} and {val}"
        )
    return test, val


@dataclass(frozen=True)
class PreparedImages:
    """A ViT job's images, read, split and audited.

    Attributes:
        names: class names (index = label).
        images: the readable images ``(N', C, S, S)`` in [0, 1].
        labels: ``(N',)`` their classes.
        train, val, test: positions into ``images``.
        groups: ``(N',)`` the split group of each image: its lot (a manifest with lots),
            else one per distinct file (byte-identical files share one).
        errors: one :class:`~mfgtx.images.ImageError` per unreadable file (left out).
        split: the :class:`~mfgtx.images.ImageSplit` over every listed file.
        audit: the lot-and-time audit (a manifest with lots), else ``None``.
        duplicates_across: byte-identical files in two sets (0 unless a bug).
    """

    names: list[str]
    images: torch.Tensor
    labels: np.ndarray
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    groups: np.ndarray
    errors: list[Any]
    split: Any
    audit: Any
    duplicates_across: int

    def audit_report(self) -> Any:
        """The split's :class:`~mfgtx.split.AuditReport`: byte-identical files kept in one set,
        plus the lot-and-time checks when the manifest has lots."""
        from mfgtx.split import AuditReport, Check

        n = self.duplicates_across
        dup = Check(
            "duplicates_together",
            n == 0,
            "byte-identical files share one set"
            if n == 0
            else f"{n} byte-identical file(s) appear in two sets: the test set is not unseen",
        )
        checks = (dup, *(self.audit.checks if self.audit is not None else ()))
        summary = dict(self.audit.summary) if self.audit is not None else {}
        summary.update(method=self.split.method, images=self.counts)
        return AuditReport(checks, summary)

    @property
    def counts(self) -> dict[str, int]:
        return {
            "train": len(self.train),
            "val": len(self.val),
            "test": len(self.test),
            "unreadable": len(self.errors),
        }


def prepare_images(config: JobConfig) -> PreparedImages:
    """Read the ``images`` of ``config`` and split them as ``train vit`` does (the same
    seed gives the same split, so ``evaluate`` judges a bundle on its own test images)."""
    from mfgtx.images import load_images, split_images

    config.require("images")
    im = config.images
    assert im is not None  # require() raised otherwise
    test_size, val_size = _sizes(config)
    records = image_records(im, config.source_file)
    names = list(records.class_names)
    if im.good_class is not None and im.good_class not in names:
        raise ConfigError(
            f"{config.source_file}: images.good_class: {im.good_class!r} is not a class of "
            f"{im.path} (classes: {names})"
        )
    sources = records.read_bytes()
    hashes = [hashlib.sha256(data).hexdigest() for _, data in sources]
    try:
        split = split_images(
            records,
            test_size=test_size,
            val_size=val_size,
            seed=config.train.seed,
            gap=config.split.gap,
            hashes=hashes,
        )
    except ValueError as e:
        raise ConfigError(f"{config.source_file}: split: {e}") from e
    images, kept, errors = load_images(sources, im.image_size, mode=im.mode, min_size=im.min_size)
    for err in errors:
        log.warning("image left out: %s", err)
    if not kept:
        raise DataError(f"{im.path}: none of the {len(records)} images could be read")
    position = np.full(len(records), -1, dtype=np.int64)
    position[np.asarray(kept)] = np.arange(len(kept))
    train, val, test = (position[s][position[s] >= 0] for s in (split.train, split.val, split.test))
    for set_name, idx in (("training", train), ("validation", val), ("test", test)):
        if len(idx) == 0:
            raise ConfigError(f"{config.source_file}: split: the {set_name} set has no image")
    audit_report = None
    if split.lot_sets is not None:  # lots and times: the same leakage audit as sensor windows
        from mfgtx.split import audit

        t = records.frame["timestamp"]
        frame = pd.DataFrame({"lot": records.frame["lot"].astype(str), "start": t, "end": t})
        audit_report = audit(frame, split.lot_sets, strict=False)
    return PreparedImages(
        names=names,
        images=images,
        labels=records.labels[np.asarray(kept)],
        train=train,
        val=val,
        test=test,
        groups=split.groups[np.asarray(kept)],
        errors=list(errors),
        split=split,
        audit=audit_report,
        duplicates_across=_duplicates_across(split, hashes),
    )


def compare_images(
    config: JobConfig,
    prep: PreparedImages,
    prob: np.ndarray,
    model_name: str = "DefectViT",
    n_resamples: int | None = 1000,
) -> Any:
    """The :class:`~mfgtx.baselines.EvaluationReport` of test probabilities ``prob`` next to
    the majority class and HOG + logistic regression, both fitted on the training and
    validation images (everything the model learned from or chose its checkpoint on).

    As :func:`~mfgtx.baselines.compare` does, the report says how sure the model's lead
    over the best baseline is: a paired bootstrap over the test lots, or over the distinct
    test images when there are no lots (``n_resamples=None``: no interval).
    """
    from mfgtx.baselines import (
        EvaluationReport,
        HogLogistic,
        MajorityImageClass,
        ReportRow,
        bootstrap_differences,
    )
    from mfgtx.metrics import classification_metrics

    assert config.images is not None
    size, k = config.images.image_size, len(prep.names)
    fit_idx = np.concatenate([prep.train, prep.val])
    pixels = prep.images.numpy()
    y = prep.labels[prep.test]
    reasons: list[str] = []
    rows = [ReportRow(model_name, "model", classification_metrics(y, prob, reasons=reasons))]
    predictions = {model_name: prob}
    for baseline in (
        MajorityImageClass(),
        HogLogistic(cell=16 if size >= 64 else max(4, size // 4)),
    ):
        p = baseline.fit(pixels[fit_idx], prep.labels[fit_idx], k).predict_proba(pixels[prep.test])
        predictions[baseline.name] = p
        rows.append(
            ReportRow(baseline.name, "baseline", classification_metrics(y, p, reasons=reasons))
        )
    unit = "test lots" if prep.split.method == "lot_time" else "distinct test images"
    differences, notes = bootstrap_differences(
        rows, y, predictions, prep.groups[prep.test], "f1", n_resamples, unit=unit
    )
    return EvaluationReport(
        "classification",
        n_test=len(prep.test),
        rows=tuple(rows),
        primary="f1",
        n_train=len(fit_idx),
        unit="images",
        notes=tuple(notes),
        differences=differences,
    )


def vit_logits(bundle: Any, images: torch.Tensor, batch_size: int = 64) -> np.ndarray:
    """Logits of a ViT ``bundle`` for images ``(N, C, S, S)`` in [0, 1], normalised as in
    training."""
    job = bundle.manifest["extra"]["job"]
    mean, std = float(job.get("mean", MEAN)), float(job.get("std", STD))
    out = []
    bundle.model.eval()
    with torch.no_grad():
        for a in range(0, len(images), batch_size):
            out.append(bundle.model((images[a : a + batch_size] - mean) / std).float().numpy())
    k = bundle.config.num_classes
    return np.concatenate(out) if out else np.zeros((0, k), np.float32)


def train_vit(
    config: JobConfig, resume: bool = False, on_step: OnStep | None = None
) -> TrainOutcome:
    """Train, calibrate, compare and save a defect ViT (the ``train vit`` command)."""
    from mfgtx.artifacts import save_bundle
    from mfgtx.images import ImageDataset, SurfaceAugment, class_weights
    from mfgtx.jobs.train import outcome, rank, run_key
    from mfgtx.models import DefectViT, ViTConfig
    from mfgtx.train import fit, predict

    t0 = time.perf_counter()
    config.require("bundle", "images")
    im, v = config.images, config.vit
    assert im is not None  # require() raised otherwise
    bundle = Path(str(config.bundle))
    prep = prepare_images(config)
    audit_report = prep.audit_report()
    if not audit_report.passed:
        from mfgtx.split import LeakageError

        raise LeakageError(audit_report)
    names, images, labels = prep.names, prep.images, prep.labels
    train, val, test = prep.train, prep.val, prep.test
    k = len(names)
    try:
        model_config = ViTConfig(
            image_size=im.image_size,
            patch_size=v.patch_size,
            in_chans=1 if im.mode == "L" else 3,
            num_classes=k,
            d_model=v.d_model,
            n_heads=v.n_heads,
            n_layers=v.n_layers,
            d_ff=v.d_ff,
            dropout=v.dropout,
            drop_path=v.drop_path,
            stem=v.stem,
            pooling=v.pooling,
            positional=v.positional,
            class_weights=class_weights(labels[train], k),
            label_smoothing=v.label_smoothing,
            min_defect_px=v.min_defect_px,
            source_size=v.source_size,
            strict_defect_size=v.strict_defect_size,
        )
    except ValueError as e:  # includes the strict small-defect guard
        raise ConfigError(f"{config.source_file}: vit: {e}") from e
    augment = SurfaceAugment(rot90=im.rot90) if im.augment else None

    def data(idx: np.ndarray, aug: SurfaceAugment | None = None) -> ImageDataset:
        return ImageDataset(images[idx], labels[idx], augment=aug, mean=MEAN, std=STD)

    ckpt = config.train.checkpoint_dir or f"{bundle}.ckpt"
    train_config = config.train.train_config(ckpt, resume=resume)
    torch.manual_seed(config.train.seed)
    model = DefectViT(model_config)
    seen = np.concatenate([train, val])
    fitted = fit(
        model,
        data(train, augment),
        data(val),
        train_config,
        on_step=on_step,
        run_key=run_key(config, "vit", images[seen].numpy(), labels[seen], train),
    )
    counts = prep.counts
    if rank() != 0:
        return outcome("vit", "classification", fitted, t0, counts, audit_report.passed)
    calibration = _calibrate(
        config, predict(model, data(val)).numpy(), labels[val], names, im.good_class
    )
    test_logits = predict(model, data(test)).numpy()
    prob = class_probabilities(test_logits, calibration)
    report = compare_images(config, prep, prob)
    metrics = {key: round(float(x), 6) for key, x in report.rows[0].metrics.items()}
    if calibration is not None and calibration.threshold is not None:
        good = names.index(str(im.good_class))
        flagged = calibration.decide(test_logits).astype(bool)
        y = labels[test]
        if (y != good).any():
            metrics["flag_recall"] = round(float(flagged[y != good].mean()), 6)
        if (y == good).any():
            metrics["false_alarm_rate"] = round(float(flagged[y == good].mean()), 6)
    split_info = {
        "method": prep.split.method,
        "test_size": config.split.test_size,
        "val_size": config.split.val_size,
        "gap": config.split.gap,
        "seed": config.train.seed,
        "duplicate_files_across_sets": prep.duplicates_across,
    }
    job = {
        "kind": "vit",
        "task": "classification",
        "class_names": names,
        "image_size": im.image_size,
        "mode": im.mode,
        "min_size": im.min_size,
        "mean": MEAN,
        "std": STD,
        "good_class": im.good_class,
        "images": counts,
        "config": config.to_dict(),
    }
    path = save_bundle(
        bundle,
        model,
        split=split_info,
        audit=audit_report,
        metrics={**report.to_dict(), "test": metrics},
        train_config=train_config,
        calibration=calibration,
        precision=fitted.precision,
        extra={"job": job},
        overwrite=True,
    )
    return outcome(
        "vit", "classification", fitted, t0, counts, audit_report.passed,
        path=path, checkpoint_dir=ckpt, report=report, metrics=metrics,
    )  # fmt: skip


def _duplicates_across(split: Any, hashes: list[str]) -> int:
    """Byte-identical files that ended up in two different sets (0 unless a bug)."""
    where: dict[str, set[str]] = {}
    for name, idx in (("train", split.train), ("val", split.val), ("test", split.test)):
        for i in idx:
            where.setdefault(hashes[int(i)], set()).add(name)
    return sum(1 for sets in where.values() if len(sets) > 1)


def _calibrate(
    config: JobConfig, logits: np.ndarray, y: np.ndarray, names: list[str], good: str | None
) -> Any:
    """Temperature on the validation images, then the flag threshold (with a good class)."""
    from mfgtx.calibration import Calibration, TemperatureScaler, choose_threshold

    if len(np.unique(y)) < 2:
        log.warning("no calibration: the validation images hold only one class")
        return None
    temperature = TemperatureScaler.fit(logits, y)
    if good is None:
        return Calibration(temperature)
    g = names.index(good)
    calibration = Calibration(temperature, good_class=g)
    try:
        choice = choose_threshold(
            calibration.defect_probability(logits),
            (y != g).astype(int),
            cost_missed_defect=config.calibration.cost_ratio,
        )
    except ValueError as e:  # e.g. no defect among the validation images
        log.warning("no flag threshold chosen: %s", e)
        return calibration
    return Calibration(temperature, choice, good_class=g)
