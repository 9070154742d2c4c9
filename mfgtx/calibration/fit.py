"""Calibrating a classifier on its validation set: temperature, then the flag threshold."""

from __future__ import annotations

import logging

import numpy as np

from mfgtx.calibration.record import Calibration
from mfgtx.calibration.temperature import TemperatureScaler
from mfgtx.calibration.threshold import choose_threshold

__all__ = ["fit_calibration"]

log = logging.getLogger(__name__)


def fit_calibration(
    logits: np.ndarray,
    y: np.ndarray,
    *,
    cost_ratio: float | None,
    good_class: int | None = None,
) -> Calibration | None:
    """A :class:`Calibration` fitted on validation ``logits`` and labels ``y``.

    The temperature first; then, with a ``cost_ratio`` (a missed defect costs this many
    false alarms), the threshold on P(defect): class 1 of a binary model, or
    ``1 - P(good_class)`` of a multi-class one (without a ``good_class`` a multi-class model
    gets no threshold). ``None`` (with a warning on the ``mfgtx.calibration`` logger) when the
    validation set holds one class only; no threshold (and a warning) when it holds no defect.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = rng.integers(0, 2, 200)
        >>> logits = 3.0 * (y - 0.5) + rng.normal(0, 1, 200)
        >>> cal = fit_calibration(logits, y, cost_ratio=5.0)
        >>> cal.threshold.threshold < 0.5  # a missed defect costs more: flag earlier
        True
    """
    y = np.asarray(y).astype(int)
    if len(np.unique(y)) < 2:
        log.warning(
            "no calibration: the validation set holds only class %d; the bundle keeps "
            "uncalibrated probabilities (use more lots or a larger split.val_size)",
            int(y[0]) if len(y) else -1,
        )
        return None
    temperature = TemperatureScaler.fit(logits, y)
    calibration = Calibration(temperature, good_class=good_class)
    two_classes = np.ndim(logits) == 1 or np.shape(logits)[-1] == 2
    if cost_ratio is None or (good_class is None and not two_classes):
        return calibration
    if good_class is not None:  # any class but the good one is a defect
        p_defect, defect = calibration.defect_probability(logits), (y != good_class).astype(int)
    else:  # class 1 is the defect
        probs = temperature.transform(logits)
        p_defect, defect = (probs if probs.ndim == 1 else probs[:, 1]), y
    try:
        choice = choose_threshold(p_defect, defect, cost_missed_defect=cost_ratio)
    except ValueError as e:  # e.g. no defect among the validation parts
        log.warning("no operating threshold chosen: %s", e)
        return calibration
    return Calibration(temperature, choice, good_class=good_class)
