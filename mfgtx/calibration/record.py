"""What a classifier's calibration decided, in one record that travels with the model bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mfgtx.calibration.temperature import TemperatureScaler
from mfgtx.calibration.threshold import ThresholdChoice

__all__ = ["Calibration", "class_probabilities"]


@dataclass(frozen=True)
class Calibration:
    """A fitted temperature and (binary classifiers) the operating threshold chosen with it.

    Saved with the model (``save_bundle(..., calibration=...)``) so that whoever scores with
    the bundle uses the same probabilities and the same decision rule that were validated.

    Args:
        temperature: the :class:`TemperatureScaler` fitted on validation logits.
        threshold: the :class:`ThresholdChoice` made on the calibrated validation
            probabilities of a defect, or ``None`` (no cost ratio given).
        good_class: multi-class models with a threshold: the class of good parts; the
            defect probability is then ``1 - P(good_class)`` (any defect type).

    Example:
        >>> import numpy as np
        >>> from mfgtx.calibration import TemperatureScaler, ThresholdChoice
        >>> cal = Calibration(
        ...     TemperatureScaler(2.0),
        ...     ThresholdChoice(0.3, cost_missed_defect=5.0, cost_false_alarm=1.0,
        ...                     tp=8, fp=3, tn=40, fn=1),
        ... )
        >>> cal.probabilities(np.array([2.0, -2.0])).round(3)
        array([0.731, 0.269])
        >>> cal.decide(np.array([2.0, -2.0])).tolist()
        [1, 0]
        >>> Calibration.from_dict(cal.to_dict()) == cal
        True
    """

    temperature: TemperatureScaler
    threshold: ThresholdChoice | None = None
    good_class: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.temperature, TemperatureScaler):
            raise TypeError(
                f"temperature must be a TemperatureScaler, found {type(self.temperature).__name__}"
            )
        if self.threshold is not None and not isinstance(self.threshold, ThresholdChoice):
            raise TypeError(
                f"threshold must be a ThresholdChoice or None, found "
                f"{type(self.threshold).__name__}"
            )
        g = self.good_class
        if g is not None and (isinstance(g, bool) or not isinstance(g, int) or g < 0):
            raise ValueError(f"good_class must be a class index >= 0 or None, found {g!r}")

    def probabilities(self, logits: object) -> np.ndarray:
        """Calibrated probabilities: ``(N,)`` P(defect) for ``(N,)`` logits, else ``(N, K)``."""
        return self.temperature.transform(logits)

    def defect_probability(self, logits: object) -> np.ndarray:
        """``(N,)`` calibrated probability of a defect: P(class 1) for binary models,
        ``1 - P(good_class)`` for multi-class ones."""
        return self.defect_of(self.probabilities(logits))

    def defect_of(self, p: np.ndarray) -> np.ndarray:
        """``(N,)`` P(defect) of calibrated probabilities ``p`` (:meth:`probabilities`, or
        their mean over several views of each image), as :meth:`defect_probability`."""
        p = np.asarray(p)
        if p.ndim == 1:
            return p
        if self.good_class is not None:
            return 1.0 - p[:, self.good_class]
        if p.shape[1] == 2:
            return p[:, 1]
        raise ValueError(
            f"{p.shape[1]} classes: say which is the good one (good_class) to get P(defect)"
        )

    def decide(self, logits: object) -> np.ndarray:
        """Decisions ``(N,)``: with a threshold, 1 = flagged as defective (P(defect) above
        it); without, the most probable class (binary: P(class 1) > 0.5)."""
        return self.decide_of(self.probabilities(logits))

    def decide_of(self, p: np.ndarray) -> np.ndarray:
        """:meth:`decide` on calibrated probabilities ``p`` (see :meth:`defect_of`)."""
        p = np.asarray(p)
        if self.threshold is None:
            return (p > 0.5).astype(np.int64) if p.ndim == 1 else p.argmax(-1)
        return (self.defect_of(p) > self.threshold.threshold).astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (the bundle's ``calibration`` section)."""
        return {
            "temperature": self.temperature.to_dict(),
            "threshold": None if self.threshold is None else self.threshold.to_dict(),
            "good_class": self.good_class,
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Calibration:
        """Rebuild from :meth:`to_dict`; ``ValueError`` naming what is missing or wrong."""
        keys = set(state) if isinstance(state, dict) else set()
        if not {"temperature", "threshold"} <= keys <= {"temperature", "threshold", "good_class"}:
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"calibration state must have keys temperature, threshold (and good_class): {found}"
            )
        threshold = state["threshold"]
        return cls(
            TemperatureScaler.from_dict(state["temperature"]),
            None if threshold is None else ThresholdChoice.from_dict(threshold),
            state.get("good_class"),
        )


def class_probabilities(logits: object, calibration: Calibration | None = None) -> np.ndarray:
    """``(N, K)`` class probabilities of ``(N, K)`` logits: calibrated with ``calibration``
    when a model has one, else the plain softmax.

    Example:
        >>> class_probabilities(np.array([[0.0, 0.0]])).tolist()
        [[0.5, 0.5]]
    """
    if calibration is not None:
        return calibration.probabilities(logits)
    import torch

    return torch.softmax(torch.as_tensor(np.asarray(logits)), -1).numpy()
