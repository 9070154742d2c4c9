"""Temperature scaling (Guo et al., 2017) fitted on validation logits."""

from __future__ import annotations

import logging
import math
import warnings
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np

from mfgtx.calibration._common import CalibrationWarning, _as_logits, _check_labels, _two_column

TEMPERATURE_RANGE = (0.05, 20.0)
"""The temperatures :meth:`TemperatureScaler.fit` searches, ``(lowest, highest)``."""

_STEP_RTOL = 1e-10  # the temperature search stops when 1/T moves by less than this (relative)

log = logging.getLogger(__name__)


def _log_softmax(s: np.ndarray) -> np.ndarray:
    """Row-wise log softmax of ``s (N, K)``, stable for large values."""
    m = s.max(axis=1, keepdims=True)
    return s - m - np.log(np.exp(s - m).sum(axis=1, keepdims=True))


def _nll_slope_curvature(z: np.ndarray, y: np.ndarray, beta: float) -> tuple[float, float]:
    """First and second derivative of ``mean NLL(softmax(beta * z))`` with respect to beta.

    ``d/dbeta = mean(E_p[z] - z_y)`` and ``d2/dbeta2 = mean(Var_p[z]) >= 0``: the loss is
    convex in ``beta = 1 / T``, so the slope has one sign change and a bracketed root search
    finds the global minimum.
    """
    p = np.exp(_log_softmax(beta * z))  # (N, K)
    mean_z = (p * z).sum(axis=1)  # (N,)
    slope = float(np.mean(mean_z - z[np.arange(z.shape[0]), y]))
    curvature = float(np.mean((p * (z - mean_z[:, None]) ** 2).sum(axis=1)))
    return slope, curvature


@dataclass(frozen=True)
class TemperatureScaler:
    """Temperature scaling: probabilities ``softmax(logits / T)`` (binary: ``sigmoid(logit / T)``).

    Build it with :meth:`fit` on validation logits. One number, so it cannot over-fit a
    validation set of a few hundred parts, and it never changes which part ranks as more
    likely defective than another.

    Args:
        temperature: ``T > 0``; ``1`` leaves the model as it is.

    Example:
        >>> import numpy as np
        >>> logits = np.array([4.0, -4.0, 4.0, -4.0, 4.0, -4.0])  # very sure ...
        >>> labels = np.array([1, 0, 0, 1, 1, 0])                 # ... and wrong 2 times in 6
        >>> scaler = TemperatureScaler.fit(logits, labels)
        >>> round(scaler.temperature, 2)
        5.77
        >>> scaler.transform([4.0, -4.0]).round(3)                # now 2/3, as observed
        array([0.667, 0.333])
        >>> TemperatureScaler.from_dict(scaler.to_dict()) == scaler
        True
    """

    temperature: float

    def __post_init__(self) -> None:
        t = self.temperature
        if isinstance(t, bool) or not isinstance(t, Real) or not (math.isfinite(t) and t > 0):
            raise ValueError(f"temperature must be a positive finite number, found {t!r}")

    @classmethod
    def fit(cls, logits: object, labels: object, *, max_iter: int = 100) -> TemperatureScaler:
        """Find the temperature in :data:`TEMPERATURE_RANGE` with the lowest validation log loss.

        A safeguarded Newton search on ``1 / T`` (the loss is convex in it) in float64:
        deterministic, and the log loss at the result is never above the one at ``T = 1``.
        When the validation set is perfectly separated (every part's true class has the
        highest logit) no temperature is best: the log loss keeps falling as ``T`` goes to 0,
        and the end of the range would make every prediction almost certain, so a few
        well-ranked validation parts would tie every confident new one at P = 1. The
        temperature is then left at 1 (the model's own probabilities), with a
        :class:`CalibrationWarning`. A warning also says when the best temperature is an end
        of the range: the lowest (0.05) when the set is almost separated, the highest (20)
        when the logits carry no information about the labels, or point the wrong way.

        Args:
            logits: validation logits, ``(N,)`` for a binary model (one logit for the defect
                class) or ``(N, K)``; numpy, list or torch tensor.
            labels: ``(N,)`` true classes ``0..K-1``; at least two classes must be present.
            max_iter: most search steps (about 10 are used); a
                :class:`CalibrationWarning` says if they run out.

        Raises:
            ValueError: empty input, shapes that do not match, NaN or infinite logits,
                labels that are not classes of the logits, or only one class present.
        """
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, found {max_iter!r}")
        z = _two_column(_as_logits(logits, "TemperatureScaler.fit"))  # (N, K)
        y = _check_labels(labels, z.shape[0], z.shape[1], "TemperatureScaler.fit")
        t_low, t_high = TEMPERATURE_RANGE
        if _separated(z, y):
            log.debug("TemperatureScaler.fit: every true class has the highest logit")
            warnings.warn(
                "probability calibration: the model puts every validation part in its right "
                "class (perfectly separated), so its probabilities cannot be tuned (a sharper "
                "setting always looks better); the setting (temperature) is left at 1, the "
                "model's own probabilities. More validation parts, some of which the model "
                "gets wrong, let them be tuned.",
                CalibrationWarning,
                stacklevel=2,
            )
            return cls(temperature=1.0)
        lo, hi = 1.0 / t_high, 1.0 / t_low  # bracket on beta = 1 / T
        if _nll_slope_curvature(z, y, lo)[0] >= 0:
            _warn_bound(
                t_high, "the model's scores tell nothing about the validation parts' labels "
                "(or point the wrong way)"
            )  # fmt: skip
            return cls(temperature=t_high)
        if _nll_slope_curvature(z, y, hi)[0] <= 0:
            _warn_bound(
                t_low, "the model puts the validation parts in their right class almost "
                "without error (almost separated)"
            )  # fmt: skip
            return cls(temperature=t_low)
        beta = 1.0  # start from the model as it is
        for _ in range(max_iter):
            slope, curvature = _nll_slope_curvature(z, y, beta)
            if slope == 0:
                break
            if slope < 0:
                lo = beta
            else:
                hi = beta
            step = beta - slope / curvature if curvature > 0 else math.nan
            new = step if lo < step < hi else 0.5 * (lo + hi)  # Newton, else bisection
            converged = abs(new - beta) <= _STEP_RTOL * beta
            beta = new
            if converged:
                break
        else:
            warnings.warn(
                f"probability calibration: the search did not converge in max_iter={max_iter} "
                f"steps; using the setting (temperature) {1.0 / beta:.6g}",
                CalibrationWarning,
                stacklevel=2,
            )
        return cls(temperature=1.0 / beta)

    def transform(self, logits: object) -> np.ndarray:
        """Calibrated probabilities, float64 numpy: ``(N,)`` P(class 1) or ``(N, K)`` rows.

        Args:
            logits: ``(N,)`` (binary) or ``(N, K)``; numpy, list or torch tensor.
        """
        z = _as_logits(logits, "TemperatureScaler.transform") / self.temperature
        if z.ndim == 1:
            return np.exp(-np.logaddexp(0.0, -z))  # sigmoid, no overflow
        return np.exp(_log_softmax(z))

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (saved in the model bundle)."""
        return {"temperature": float(self.temperature)}

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> TemperatureScaler:
        """Rebuild from :meth:`to_dict`; raises ``ValueError`` on missing or bad fields."""
        if not isinstance(state, dict) or set(state) != {"temperature"}:
            found = sorted(state) if isinstance(state, dict) else type(state).__name__
            raise ValueError(
                f"temperature scaler state must have keys ['temperature'], found {found}"
            )
        return cls(temperature=state["temperature"])


def _separated(z: np.ndarray, y: np.ndarray) -> bool:
    """Whether every row's true class has the strictly highest logit of ``z (N, K)``."""
    true = z[np.arange(z.shape[0]), y]
    others = np.where(np.arange(z.shape[1])[None, :] == y[:, None], -np.inf, z)
    return bool((true > others.max(axis=1)).all())


def _warn_bound(temperature: float, why: str) -> None:
    warnings.warn(
        f"probability calibration: {why}; the setting (temperature) is set to {temperature}, "
        f"the end of the searched range {TEMPERATURE_RANGE}. Check the validation parts "
        "(enough of them, good and bad ones, not the training data) before trusting these "
        "probabilities.",
        CalibrationWarning,
        stacklevel=3,
    )


# ------------------------------------------------------------------- operating threshold
