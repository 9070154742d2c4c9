"""``train vit``: a :class:`~mfgtx.models.DefectViT` on labelled images from a job file.

Images (a folder per class, a ``.zip`` of one, or a CSV manifest with lots and times) ->
split (by lot and time through :mod:`mfgtx.split` when the manifest has lots, stratified
otherwise; byte-identical files always in one set) -> fit on the training images, checkpoint
chosen on the validation images -> temperature scaling on the validation images, and the flag
threshold on P(defect) = 1 - P(good class) for a missed defect costing
``calibration.cost_ratio`` false alarms -> compared on the test images with the majority class
and HOG + logistic regression fitted on the same training images -> bundle.

A file that is not a usable image is left out with a warning naming it and the reason (the
summary counts them); training stops only when no image is usable.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import torch

from mfgtx.data import DataError
from mfgtx.jobs.config import ConfigError, ImagesSection, JobConfig

if TYPE_CHECKING:
    from mfgtx.jobs.train import OnStep, TrainOutcome

__all__ = ["image_records", "train_vit"]

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


def train_vit(
    config: JobConfig, resume: bool = False, on_step: OnStep | None = None
) -> TrainOutcome:
    """Train, calibrate, compare and save a defect ViT (the ``train vit`` command)."""
    from mfgtx.artifacts import save_bundle, verify_bundle
    from mfgtx.baselines import EvaluationReport, HogLogistic, MajorityImageClass, ReportRow
    from mfgtx.images import ImageDataset, SurfaceAugment, class_weights, load_images, split_images
    from mfgtx.jobs.train import TrainOutcome, rank
    from mfgtx.metrics import classification_metrics
    from mfgtx.models import DefectViT, ViTConfig
    from mfgtx.train import fit, predict

    t0 = time.perf_counter()
    config.require("bundle", "images")
    im, v = config.images, config.vit
    assert im is not None  # require() raised otherwise
    bundle = Path(str(config.bundle))
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
    labels = records.labels[np.asarray(kept)]
    for set_name, idx in (("training", train), ("validation", val), ("test", test)):
        if len(idx) == 0:
            raise ConfigError(f"{config.source_file}: split: the {set_name} set has no image")
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
    fitted = fit(model, data(train, augment), data(val), train_config, on_step=on_step)
    counts = {"train": len(train), "val": len(val), "test": len(test), "unreadable": len(errors)}
    if rank() != 0:
        return TrainOutcome(
            "vit", "classification", None, None, len(fitted.history), fitted.best_epoch,
            fitted.resumed_from_epoch, fitted.stopped_early, time.perf_counter() - t0, counts,
            True, world_size=fitted.world_size,
        )  # fmt: skip
    calibration = _calibrate(
        config, predict(model, data(val)).numpy(), labels[val], names, im.good_class
    )
    test_logits = predict(model, data(test)).numpy()
    if calibration is not None:
        prob = calibration.probabilities(test_logits)
    else:
        prob = torch.softmax(torch.from_numpy(test_logits), -1).numpy()
    # the baselines learn from every image the model learned from or chose its checkpoint on
    fit_idx = np.concatenate([train, val])
    pixels = images.numpy()
    reasons: list[str] = []
    rows = [
        ReportRow("DefectViT", "model", classification_metrics(labels[test], prob, reasons=reasons))
    ]
    for baseline in (
        MajorityImageClass(),
        HogLogistic(cell=16 if im.image_size >= 64 else max(4, im.image_size // 4)),
    ):
        p = baseline.fit(pixels[fit_idx], labels[fit_idx], k).predict_proba(pixels[test])
        rows.append(
            ReportRow(
                baseline.name, "baseline", classification_metrics(labels[test], p, reasons=reasons)
            )
        )
    report = EvaluationReport(
        "classification",
        n_test=len(test),
        rows=tuple(rows),
        primary="f1",
        n_train=len(fit_idx),
        unit="images",
    )
    metrics = {key: round(float(x), 6) for key, x in rows[0].metrics.items()}
    if calibration is not None and calibration.threshold is not None:
        good = names.index(str(im.good_class))
        flagged = calibration.decide(test_logits).astype(bool)
        y = labels[test]
        if (y != good).any():
            metrics["flag_recall"] = round(float(flagged[y != good].mean()), 6)
        if (y == good).any():
            metrics["false_alarm_rate"] = round(float(flagged[y == good].mean()), 6)
    duplicates_across = _duplicates_across(split, hashes)
    audit_report = None
    if split.lot_sets is not None:  # lots and times: the same leakage audit as sensor windows
        from mfgtx.split import audit

        t = records.frame["timestamp"]
        frame = pd.DataFrame({"lot": records.frame["lot"].astype(str), "start": t, "end": t})
        audit_report = audit(frame, split.lot_sets)
    split_info = {
        "method": split.method,
        "test_size": test_size,
        "val_size": val_size,
        "gap": config.split.gap,
        "seed": config.train.seed,
        "duplicate_files_across_sets": duplicates_across,
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
    bundle_id = verify_bundle(path)["bundle_id"]
    shutil.rmtree(ckpt, ignore_errors=True)  # finished: a rerun starts fresh
    log.info("%s: %s", path, report.verdict)
    return TrainOutcome(
        kind="vit",
        task="classification",
        bundle=str(path),
        bundle_id=bundle_id,
        epochs_run=len(fitted.history),
        best_epoch=fitted.best_epoch,
        resumed_from_epoch=fitted.resumed_from_epoch,
        stopped_early=fitted.stopped_early,
        seconds=round(time.perf_counter() - t0, 3),
        windows=counts,
        audit_passed=duplicates_across == 0 and (audit_report is None or audit_report.passed),
        metrics=metrics,
        verdict=report.verdict,
        world_size=fitted.world_size,
        report_markdown=report.to_markdown(),
    )


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
