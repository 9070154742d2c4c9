"""Calibrated probabilities and a cost-based operating threshold for defect classifiers.

Shape legend: ``N`` samples (parts, windows, images), ``K`` classes.

A classifier's probabilities are often over-confident (a "95 %" defect call that is right
70 % of the time). Three tools, all fitted or checked on a *validation* set that the model
did not train on:

* :class:`TemperatureScaler` (Guo et al., 2017) divides the logits by one number, the
  temperature ``T``, chosen to minimise the log loss. ``T > 1`` softens an over-confident
  model, ``T < 1`` sharpens an under-confident one; the ranking of parts, and so ROC AUC,
  does not change.
* :func:`choose_threshold` picks the probability above which a part is flagged, from what a
  missed defect costs compared with a false alarm. :func:`bayes_threshold` is the same rule
  for a perfectly calibrated model; :func:`apply_threshold` flags parts.
* :func:`reliability_curve` bins the probabilities for a calibration plot.

Interval models (remaining life, forecasts) get :mod:`mfgtx.calibration.conformal`: split
conformal or CQR margins fitted on the validation lots, exchangeable by lot
(:class:`IntervalCalibration`, :func:`fit_split`, :func:`fit_cqr`, :func:`lot_quantile`).

Conventions are those of :mod:`mfgtx.metrics`: labels are integers ``0..K-1`` and, for a
binary problem, class ``1`` is the defect. A binary model gives one logit per sample,
shape ``(N,)``, read as ``sigmoid(logit) = P(defect)``; a multi-class model gives ``(N, K)``.
A part is flagged when ``P(defect) > threshold`` (strictly), as in :mod:`mfgtx.metrics`,
where class 1 is predicted when ``P(class 1) > 0.5``.
"""

from mfgtx.calibration._common import CalibrationWarning
from mfgtx.calibration.conformal import (
    IntervalCalibration,
    conformal_level,
    fit_cqr,
    fit_split,
    lot_quantile,
)
from mfgtx.calibration.coverage import Coverage, clopper_pearson, describe_band, lot_coverage
from mfgtx.calibration.fit import fit_calibration
from mfgtx.calibration.record import Calibration, class_probabilities
from mfgtx.calibration.reliability import reliability_curve
from mfgtx.calibration.temperature import TEMPERATURE_RANGE, TemperatureScaler
from mfgtx.calibration.threshold import (
    ThresholdChoice,
    apply_threshold,
    bayes_threshold,
    choose_threshold,
)

__all__ = [
    "TEMPERATURE_RANGE",
    "Calibration",
    "CalibrationWarning",
    "Coverage",
    "IntervalCalibration",
    "TemperatureScaler",
    "ThresholdChoice",
    "apply_threshold",
    "bayes_threshold",
    "choose_threshold",
    "class_probabilities",
    "clopper_pearson",
    "conformal_level",
    "describe_band",
    "fit_calibration",
    "fit_cqr",
    "fit_split",
    "lot_coverage",
    "lot_quantile",
    "reliability_curve",
]
