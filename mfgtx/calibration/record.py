"""What a classifier's calibration decided, in one record that travels with the model bundle."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from mfgtx.calibration.temperature import TemperatureScaler
from mfgtx.calibration.threshold import ThresholdChoice, apply_threshold

__all__ = ["Calibration"]


@dataclass(frozen=True)
class Calibration:
    """A fitted temperature and (binary classifiers) the operating threshold chosen with it.

    Saved with the model (``save_bundle(..., calibration=...)``) so that whoever scores with
    the bundle uses the same probabilities and the same decision rule that were validated.

    Args:
        temperature: the :class:`TemperatureScaler` fitted on validation logits.
        threshold: the :class:`ThresholdChoice` made on the calibrated validation
            probabilities, or ``None`` (multi-class models, or no cost ratio given).

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

    def probabilities(self, logits: object) -> np.ndarray:
        """Calibrated probabilities: ``(N,)`` P(defect) for ``(N,)`` logits, else ``(N, K)``."""
        return self.temperature.transform(logits)

    def decide(self, logits: object) -> np.ndarray:
        """Class decisions ``(N,)``: the saved threshold for binary models, else the argmax."""
        p = self.probabilities(logits)
        if self.threshold is None:
            return (p > 0.5).astype(np.int64) if p.ndim == 1 else p.argmax(-1)
        return apply_threshold(p, self.threshold.threshold).astype(np.int64)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (the bundle's ``calibration`` section)."""
        return {
            "temperature": self.temperature.to_dict(),
            "threshold": None if self.threshold is None else self.threshold.to_dict(),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Calibration:
        """Rebuild from :meth:`to_dict`; ``ValueError`` naming what is missing or wrong."""
        if not isinstance(state, dict) or set(state) != {"temperature", "threshold"}:
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(f"calibration state must have keys temperature, threshold: {found}")
        threshold = state["threshold"]
        return cls(
            TemperatureScaler.from_dict(state["temperature"]),
            None if threshold is None else ThresholdChoice.from_dict(threshold),
        )
