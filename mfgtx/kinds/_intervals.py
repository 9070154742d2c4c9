"""The interval figures of a judged model: its band's coverage on the test lots and the
conformalized ridge baseline's beside it (one rule for every interval kind).

Shape legend: ``n`` test windows, ``...`` what one window predicts (``K`` targets, or ``H``
horizon steps by ``C`` channels).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np

from mfgtx.baselines.intervals import conformal_band
from mfgtx.calibration.coverage import Coverage, lot_coverage
from mfgtx.data import SensorScaler, Windows

__all__ = ["Splits", "interval_figures", "judged_intervals"]

Splits = Sequence[tuple[np.ndarray, np.ndarray]]
"""``(fit, validation)`` window indices per split of a model (one per ensemble member)."""

log = logging.getLogger(__name__)


def judged_intervals(
    *,
    name: str,
    task: str,
    windows: Windows,
    test_idx: np.ndarray,
    y: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    nominal: float,
    method: str,
    calibration_lots: int | None,
    splits: Splits | None,
    scaler: SensorScaler | None,
    lower: Sequence[float | None] | None = None,
    uncalibrated: tuple[np.ndarray, np.ndarray, float] | None = None,
) -> tuple[Coverage, ...]:
    """The model's band ``[low, high]`` on ``y`` (the test windows ``test_idx``; the last
    axis the targets) counted by lot, and, with ``splits`` (``(fit, validation)`` windows of
    the model's own split), the ridge baseline's split-conformal interval at the same
    ``nominal`` coverage from the same validation lots
    (:func:`~mfgtx.baselines.intervals.conformal_band`): all targets together first (model,
    baseline), then, for two or more targets, each target alone in its own units.

    ``uncalibrated`` (``(low, high, nominal)``: the model's own outermost quantiles before
    its conformal calibration, and what they span) adds that band after the baseline's, so
    one trained model shows what the calibration changed on the same test lots."""
    test = np.asarray(test_idx, dtype=np.int64)
    lots = windows.lot[test]
    bands = [(name, y, low, high, method, calibration_lots, nominal)]
    if splits:
        try:
            b = conformal_band(
                task, windows, splits, test, coverage=nominal, scaler=scaler, lower=lower
            )
            bands.append((b.name, b.y, b.low, b.high, "conformal", b.calibration_lots, nominal))
        except ValueError as e:  # e.g. no labelled validation window: the model's alone
            log.warning("no conformal baseline interval: %s", e)
    if uncalibrated is not None:
        raw_low, raw_high, raw_nominal = uncalibrated
        bands.append((name, y, raw_low, raw_high, "quantiles", None, raw_nominal))
    targets = tuple(windows.targets)
    parts: list[tuple[str | None, int | None]] = [(None, None)]
    if len(targets) > 1:
        parts += [(t, k) for k, t in enumerate(targets)]
    out = []
    for target, k in parts:
        for who, yy, lo, hi, how, cal, promised in bands:
            arrays = (yy, lo, hi) if k is None else (yy[..., k], lo[..., k], hi[..., k])
            c = lot_coverage(
                *arrays, lots, nominal=promised, name=who, method=how, calibration_lots=cal,
                target=target,
            )  # fmt: skip
            out.append(c)
    return tuple(out)


def interval_figures(intervals: Sequence[Coverage]) -> dict[str, float]:
    """The figures of :func:`judged_intervals` as the report's extra numbers: the model's
    ``interval_*`` (nominal, realized by lot with its binomial interval, mean width, test
    lots), the baseline's ``baseline_interval_coverage`` / ``_width`` and, for a calibrated
    model, its own quantiles' ``uncalibrated_interval_coverage`` / ``_width``."""
    if not intervals:
        return {}
    m, rest = intervals[0], [c for c in intervals[1:] if c.target is None]
    out = {
        "interval_nominal": round(m.nominal, 4),
        "interval_coverage": round(m.coverage, 4),
        "interval_coverage_low": round(m.low, 4),
        "interval_coverage_high": round(m.high, 4),
        "interval_width": round(m.width, 6),
        "interval_test_lots": float(m.lots),
    }
    for c in rest:
        who = "uncalibrated" if c.name == m.name else "baseline"
        out |= {
            f"{who}_interval_coverage": round(c.coverage, 4),
            f"{who}_interval_width": round(c.width, 6),
        }
    return out
