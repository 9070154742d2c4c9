"""The demo's defect model: a small :class:`~mfgtx.models.DefectViT` on the sample patches.

Trains on ``sample_data/defects`` (manifest with lots and times, so the split is by lot and
time through :mod:`mfgtx.split`), calibrates on the validation images (temperature, then the
flag threshold on P(defect) = 1 - P(none) for a missed defect costing ``cost_ratio`` false
alarms), scores the test images next to a majority-class baseline, and saves the bundle the
dashboard's Defect inspection page uses. (``mfgtx train vit`` from a job file is not wired.)
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

__all__ = ["IMAGE_SIZE", "train_sample_defect_vit"]

log = logging.getLogger(__name__)

IMAGE_SIZE = 64


def train_sample_defect_vit(
    data_dir: str | Path, bundle: str | Path, *, quick: bool = False, cost_ratio: float = 5.0
) -> dict[str, Any]:
    """Train, calibrate, score and save the demo defect model; a summary for the CLI."""
    from mfgtx.artifacts import save_bundle, verify_bundle
    from mfgtx.calibration import Calibration, TemperatureScaler, choose_threshold
    from mfgtx.images import (
        ImageDataset,
        ImageRecords,
        SurfaceAugment,
        class_weights,
        load_images,
        split_images,
    )
    from mfgtx.metrics import accuracy
    from mfgtx.models import DefectViT, ViTConfig
    from mfgtx.train import TrainConfig, fit, predict

    t0 = time.perf_counter()
    records = ImageRecords.from_manifest(Path(data_dir) / "defects" / "manifest.csv")
    names = list(records.class_names)
    split = split_images(records, test_size=0.25, val_size=0.2)
    paths = [records.root / p for p in records.frame["path"]]
    images, kept, errors = load_images(paths, IMAGE_SIZE)
    if errors or len(kept) != len(paths):
        raise ValueError(f"sample defect images failed to read: {errors[:3]}")
    labels = records.frame["label"].to_numpy(np.int64)
    size = (
        {"d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64}
        if quick
        else {"d_model": 64, "n_heads": 4, "n_layers": 4, "d_ff": 128}
    )
    config = ViTConfig(
        image_size=IMAGE_SIZE,
        patch_size=8,
        in_chans=1,
        num_classes=len(names),
        stem="conv",
        dropout=0.1,
        class_weights=class_weights(labels[split.train], len(names)),
        **size,
    )
    torch.manual_seed(0)
    model = DefectViT(config)
    train_config = TrainConfig(
        epochs=3 if quick else 40, batch_size=32, lr=1e-3, patience=None if quick else 8
    )

    def data(idx: np.ndarray, augment: bool = False) -> ImageDataset:
        return ImageDataset(images[idx], labels[idx], augment=SurfaceAugment() if augment else None)

    fitted = fit(model, data(split.train, True), data(split.val), train_config)
    val_logits = predict(model, data(split.val)).numpy()
    test_logits = predict(model, data(split.test)).numpy()
    temperature = TemperatureScaler.fit(val_logits, labels[split.val])
    good = names.index("none") if "none" in names else None
    calibration = Calibration(temperature, good_class=good)
    if good is not None:
        choice = choose_threshold(
            calibration.defect_probability(val_logits),
            (labels[split.val] != good).astype(int),
            cost_missed_defect=cost_ratio,
        )
        calibration = Calibration(temperature, choice, good_class=good)
    prob = calibration.probabilities(test_logits)
    y_test = labels[split.test]
    majority = np.bincount(labels[split.train], minlength=len(names)).argmax()
    metrics = {
        "test_images": len(y_test),
        "accuracy": accuracy(y_test, prob),
        "baseline_majority_accuracy": float(np.mean(y_test == majority)),
    }
    if good is not None:
        flagged = calibration.decide(test_logits).astype(bool)
        metrics["flag_recall"] = float(np.mean(flagged[y_test != good]))
        metrics["false_alarm_rate"] = float(np.mean(flagged[y_test == good]))
    path = save_bundle(
        bundle,
        model,
        split={"method": split.method, "test_size": 0.25, "val_size": 0.2},
        metrics=metrics,
        train_config=train_config,
        calibration=calibration,
        precision=fitted.precision,
        extra={
            "job": {
                "kind": "vit",
                "class_names": names,
                "image_size": IMAGE_SIZE,
                "mean": 0.5,
                "std": 0.5,
            }
        },
        overwrite=True,
    )
    return {
        "command": "train",
        "kind": "vit",
        "bundle": str(path),
        "bundle_id": verify_bundle(path)["bundle_id"],
        "epochs_run": len(fitted.history),
        "images": {"train": len(split.train), "val": len(split.val), "test": len(split.test)},
        "verdict": (
            f"accuracy {metrics['accuracy']:.3f} on {len(y_test)} test images vs "
            f"{metrics['baseline_majority_accuracy']:.3f} for the majority class"
        ),
        "seconds": round(time.perf_counter() - t0, 3),
    }
