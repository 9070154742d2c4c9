"""The report of a ViT on inspection images beside the image baselines."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from mfgtx.kinds.vit.images import PreparedImages

__all__ = ["compare_images"]

log = logging.getLogger("mfgtx.kinds")


def compare_images(
    prep: PreparedImages,
    prob: np.ndarray,
    model_name: str = "DefectViT",
    n_resamples: int | None = 1000,
) -> Any:
    """The :class:`~mfgtx.baselines.EvaluationReport` of test probabilities ``prob`` next to
    the majority class and HOG + logistic regression, both fitted on the training and
    validation images (everything the model learned from or chose its checkpoint on); how
    sure the model's lead is, by a paired bootstrap over the test lots, or over the distinct
    test images when there are no lots."""
    from mfgtx.baselines import (
        EvaluationReport,
        HogLogistic,
        MajorityImageClass,
        ReportRow,
        bootstrap_differences,
    )
    from mfgtx.metrics import classification_metrics

    size, k = int(prep.images.shape[-1]), len(prep.names)
    fit_idx = np.concatenate([prep.train, prep.val])
    pixels = prep.images  # in a scratch file: the baselines read a batch at a time
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
