"""How well an interval holds on the test lots: realized coverage with its binomial interval.

Shape legend: ``N`` windows, ``...`` what one window predicts (``K`` targets, or ``H``
horizon steps by ``C`` channels).

An "80 %" band is a promise about lots the model has not seen. The test lots are few, so the
realized share is itself uncertain: :func:`lot_coverage` gives it with a Clopper-Pearson
interval. It is **counted by lot**: the windows of one lot overlap and share the lot's
conditions, so they are not independent trials, and a lot cut into many windows must not
narrow the interval. Each test lot is one trial whose outcome is the share of its values
inside the band (``0..1``); the realized coverage is the mean of those shares over the lots
(every lot weighs the same, as in the lot-exchangeable conformal calibration of
:mod:`mfgtx.calibration.conformal`), and the interval is Clopper-Pearson with ``n`` = the
number of lots and ``x`` = the sum of the shares. A share in ``[0, 1]`` varies no more than
a 0/1 outcome with the same mean, so this is at least as wide as the interval of independent
0/1 trials per lot would be: conservative, never narrowed by windows. With one test lot it
is (nearly) ``[0, 1]``, which is the honest answer.

The mean width is over every value counted (in the target's units).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import beta

if TYPE_CHECKING:
    from mfgtx.calibration.conformal import IntervalCalibration

__all__ = [
    "COVERAGE_LEVEL",
    "Coverage",
    "band_words",
    "clopper_pearson",
    "describe_band",
    "lot_coverage",
]

COVERAGE_LEVEL = 0.95
"""Level of the binomial interval around a realized coverage."""


def clopper_pearson(
    successes: float, trials: int, level: float = COVERAGE_LEVEL
) -> tuple[float, float]:
    """The Clopper-Pearson ("exact") interval for a proportion.

    ``successes`` may be fractional (a sum of per-lot shares, :func:`lot_coverage`): the beta
    quantiles are defined for any ``0 <= x <= n``.

    Args:
        successes: ``x``, between 0 and ``trials``.
        trials: ``n >= 1``.
        level: the interval's level, e.g. 0.95.

    Returns:
        ``(low, high)``.

    Example:
        >>> low, high = clopper_pearson(8, 10)
        >>> round(low, 4), round(high, 4)
        (0.4439, 0.9748)
    """
    if not isinstance(trials, (int, np.integer)) or trials < 1:
        raise ValueError(f"clopper_pearson: trials must be a positive integer, found {trials!r}")
    x = float(successes)
    if not 0.0 <= x <= trials:
        raise ValueError(f"clopper_pearson: successes must be in [0, {trials}], found {x}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"clopper_pearson: level must be in (0, 1), found {level}")
    alpha = 1.0 - level
    low = 0.0 if x == 0 else float(beta.ppf(alpha / 2, x, trials - x + 1))
    high = 1.0 if x == trials else float(beta.ppf(1 - alpha / 2, x + 1, trials - x))
    return low, high


def band_words(method: str, nominal: float, calibration_lots: int | None = None) -> str:
    """What a band is, in plain words.

    Example:
        >>> band_words("conformal", 0.8, 12)
        '80 % conformal interval (calibrated on 12 validation lots)'
        >>> band_words("quantiles", 0.8)
        '80 % band of uncalibrated quantiles'
    """
    share = f"{nominal:.0%}".replace("%", " %")
    if method in ("conformal", "cqr") and calibration_lots:
        name = "conformal" if method == "conformal" else "conformalized quantile"
        lots = f"{calibration_lots} validation lot{'s' * (calibration_lots != 1)}"
        return f"{share} {name} interval (calibrated on {lots})"
    return f"{share} band of uncalibrated quantiles"


def describe_band(
    calibration: IntervalCalibration | None,
    quantiles: Sequence[float],
    held: Coverage | None = None,
) -> str | None:
    """The sentence a page shows under a bundle's band: what the band is (its interval
    ``calibration``, or for a bundle without one its outer ``quantiles``) and, with ``held``
    (the report's :class:`Coverage` of the model), what it held on the test lots. ``None``
    for a model without a band.

    Example:
        >>> describe_band(None, (0.1, 0.5, 0.9))
        "80 % band of uncalibrated quantiles (the model's 10 % to 90 % quantile)."
    """
    levels = sorted(float(q) for q in quantiles)
    if calibration is not None:
        words = band_words(calibration.method, calibration.coverage, calibration.lots)
    elif len(levels) >= 2:
        lo, hi = (f"{q:.0%}".replace("%", " %") for q in (levels[0], levels[-1]))
        words = (
            f"{band_words('quantiles', levels[-1] - levels[0])} (the model's {lo} to {hi} quantile)"
        )
    else:
        return None
    if held is not None and held.lots > 0 and not math.isnan(held.coverage):
        words += (
            f"; on the bundle's {held.lots} test lot{'s' * (held.lots != 1)} it held "
            f"{held.coverage:.0%} ({held.level:.0%} binomial interval {held.low:.0%} to "
            f"{held.high:.0%})"
        )
    return words + "."


def _none_if_nan(v: float) -> float | None:
    return None if math.isnan(v) else v


@dataclass(frozen=True)
class Coverage:
    """Nominal vs realized coverage of one predictor's interval on the test lots.

    Attributes:
        name: the predictor (the model's name, or a baseline's).
        method: how the band was made: ``"conformal"``, ``"cqr"`` (calibrated on
            validation lots) or ``"quantiles"`` (the model's own, uncalibrated).
        nominal: the coverage promised, e.g. 0.8.
        coverage: realized, the mean over test lots of each lot's share inside the band.
        low: lower end of the binomial interval of ``coverage`` (:func:`clopper_pearson`).
        high: its upper end.
        level: that interval's level.
        width: mean width of the band, in the target's units.
        lots: test lots (the trials of the interval).
        windows: test windows.
        values: values counted (windows x targets, or x horizon steps x channels).
        pooled: share of all values inside (every window counts once: the figure reported
            before coverage was counted by lot).
        calibration_lots: validation lots the band was calibrated on (``None``: none).
        target: the one target (or forecast channel) these figures are of, in its own
            units; ``None``: every target together.
    """

    name: str
    method: str
    nominal: float
    coverage: float
    low: float
    high: float
    level: float
    width: float
    lots: int
    windows: int
    values: int
    pooled: float
    calibration_lots: int | None = None
    target: str | None = None

    @property
    def holds(self) -> bool:
        """The nominal coverage lies within the binomial interval of the realized one."""
        return self.low <= self.nominal <= self.high

    @property
    def band_words(self) -> str:
        """What the band is, in words (:func:`band_words`)."""
        return band_words(self.method, self.nominal, self.calibration_lots)

    def sentence(self, units: str = "") -> str:
        """In plain words: what was promised, what held, how sure, how wide."""
        unit = f" {units}" if units else ""
        if math.isnan(self.coverage):
            return f"{self.band_words}: no test value to check it on."
        return (
            f"{self.band_words}: held for {self.coverage:.1%} of the test values (by lot; "
            f"{self.level:.0%} binomial interval {self.low:.1%} to {self.high:.1%} over "
            f"{self.lots} test lots), mean width {self.width:.4g}{unit}."
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible form; ``nan`` becomes ``None``."""
        out = asdict(self)
        for k in ("coverage", "low", "high", "width", "pooled"):
            out[k] = _none_if_nan(out[k])
        return out

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> Coverage:
        """Rebuild from :meth:`to_dict` (``None`` becomes ``nan``)."""
        num = {
            k: float("nan") if state.get(k) is None else float(state[k])
            for k in ("coverage", "low", "high", "width", "pooled")
        }
        cal = state.get("calibration_lots")
        return cls(
            name=str(state["name"]),
            method=str(state["method"]),
            nominal=float(state["nominal"]),
            level=float(state["level"]),
            lots=int(state["lots"]),
            windows=int(state["windows"]),
            values=int(state["values"]),
            calibration_lots=None if cal is None else int(cal),
            target=None if state.get("target") is None else str(state["target"]),
            **num,
        )


def lot_coverage(
    y_true: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    lots: np.ndarray,
    *,
    nominal: float,
    name: str = "model",
    method: str = "quantiles",
    calibration_lots: int | None = None,
    level: float = COVERAGE_LEVEL,
    target: str | None = None,
) -> Coverage:
    """Realized coverage of the band ``[low, high]`` on ``y_true``, counted by lot.

    Args:
        y_true: ``(N, ...)`` actual values; NaN entries (not recorded) are left out.
        low: the band's lower edge, the shape of ``y_true``.
        high: its upper edge.
        lots: ``(N,)`` the lot of each window.
        nominal: the coverage the band promises, in ``(0, 1)``.
        name: the predictor, for the report.
        method: ``"conformal"``, ``"cqr"`` or ``"quantiles"``.
        calibration_lots: validation lots the band was calibrated on.
        level: level of the binomial interval.
        target: the one target the arrays are of (``None``: all together).

    Returns:
        a :class:`Coverage`; ``nan`` figures and ``lots == 0`` when no value was recorded.

    Example:
        >>> y = np.array([[1.0], [5.0], [2.0], [2.5]])
        >>> c = lot_coverage(y, y - 1, y * 0 + 3, np.array(["a", "a", "b", "b"]), nominal=0.8)
        >>> c.coverage, c.lots, c.pooled
        (0.75, 2, 0.75)
    """
    y = np.asarray(y_true, dtype=np.float64)
    lo, hi = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    lots = np.asarray(lots)
    if lo.shape != y.shape or hi.shape != y.shape:
        raise ValueError(
            f"lot_coverage: the band's edges must have the shape of the truth {y.shape}, "
            f"found {lo.shape} and {hi.shape}"
        )
    if y.ndim == 0 or lots.shape != (y.shape[0],):
        raise ValueError(
            f"lot_coverage: one lot per window expected ({y.shape[:1]}), found {lots.shape}"
        )
    if not 0.0 < nominal < 1.0:
        raise ValueError(f"lot_coverage: nominal must be in (0, 1), found {nominal}")
    if method not in ("conformal", "cqr", "quantiles"):
        raise ValueError(
            f"lot_coverage: method must be conformal, cqr or quantiles, found {method!r}"
        )
    n = y.shape[0]
    seen = ~np.isnan(y).reshape(n, -1)  # (N, V)
    inside = ((y >= lo) & (y <= hi)).reshape(n, -1) & seen
    width = (hi - lo).reshape(n, -1)
    names, which = np.unique(lots.astype(str), return_inverse=True)
    seen_per_lot = np.bincount(which, weights=seen.sum(1), minlength=len(names))
    inside_per_lot = np.bincount(which, weights=inside.sum(1), minlength=len(names))
    counted = seen_per_lot > 0
    shares = inside_per_lot[counted] / seen_per_lot[counted]
    n_lots, n_values = int(counted.sum()), int(seen.sum())
    nan = float("nan")
    if n_lots == 0:
        cover, lo_ci, hi_ci, pooled, mean_width = nan, nan, nan, nan, nan
    else:
        cover = float(shares.mean())
        lo_ci, hi_ci = clopper_pearson(min(float(shares.sum()), n_lots), n_lots, level)
        pooled = float(inside.sum() / n_values)
        mean_width = float(width[seen].mean())
    return Coverage(
        name=name,
        method=method,
        nominal=float(nominal),
        coverage=cover,
        low=lo_ci,
        high=hi_ci,
        level=float(level),
        width=mean_width,
        lots=n_lots,
        windows=int(seen.any(1).sum()),
        values=n_values,
        pooled=pooled,
        calibration_lots=calibration_lots,
        target=target,
    )
