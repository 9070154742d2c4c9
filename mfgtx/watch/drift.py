"""Input drift: whether a sensor's recent readings still look like its training readings.

Per sensor (and, with operating regimes, per sensor within each regime) the recent readings
are compared with the bundle's :class:`~mfgtx.watch.profile.SensorProfile`:

- ``dead``: no reading at all (a channel that stopped sending);
- ``constant``: one value throughout where training varied (a stuck or replaced sensor);
- ``missing``: far more missing readings than in training;
- ``range``: too many readings outside the range the sensor had in training;
- ``drift``: the Wasserstein distance (:func:`scipy.stats.wasserstein_distance`) between the
  recent readings and the training distribution (its quantiles) is beyond the limit, in
  training spreads. Moving the whole distribution by ``s`` standard deviations gives a
  distance of ``s``.

The limits are lot-aware. Readings come in lots, and a few lots of an unchanged process lie
further from the pooled training readings than as many independent readings would. Where
the profile kept the training lots one by one and the recent rows' lots are known, the
drift limit is the distance that groups of as many training lots, each compared with the
other training lots, exceed in only
:attr:`~mfgtx.jobfile.watch.WatchSettings.false_alarms` of draws
(:func:`~mfgtx.watch.lots.lot_limits`), and the range limit likewise; never below
:attr:`~mfgtx.jobfile.watch.WatchSettings.drift` spreads and
:attr:`~mfgtx.jobfile.watch.WatchSettings.outside_range`, the limits alone for a profile
without lots (an older bundle) or recent rows without lots.

Fewer recent readings than ``min_readings`` are not judged for drift, range or constancy.

Example:
    >>> import numpy as np
    >>> from mfgtx.jobfile.watch import WatchSettings
    >>> from mfgtx.watch.profile import SensorProfile
    >>> rng = np.random.default_rng(0)
    >>> trained = SensorProfile.of(rng.normal(200.0, 5.0, 5000))
    >>> check_sensor("temp", trained, rng.normal(210.0, 5.0, 500), WatchSettings()).reasons
    ('drift', 'range')
    >>> check_sensor("temp", trained, rng.normal(200.0, 5.0, 500), WatchSettings()).reasons
    ()
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance

from mfgtx.jobfile.watch import WatchSettings
from mfgtx.watch.lots import LotLimits, lot_distance, lot_limits
from mfgtx.watch.profile import SensorProfile, TrainingProfile

__all__ = ["SensorCheck", "check_inputs", "check_sensor"]


def _g(x: float | None) -> str:
    return "-" if x is None else f"{x:.4g}"


@dataclass(frozen=True)
class SensorCheck:
    """One sensor's recent readings against its training readings.

    Attributes:
        sensor: the sensor (column) name.
        regime: the regime compared within, or ``None`` (every row).
        rows: recent rows; readings: those with a reading.
        missing: the share of recent rows without a reading.
        outside: the share of readings outside the training range (``None``: not judged).
        distance: the Wasserstein distance in training spreads (``None``: not judged).
        drift_limit: the distance beyond which it drifted (``None``: not judged).
        range_limit: the outside share beyond which it is flagged (``None``: not judged).
        lots: the lots per group of training lots it was judged against (the recent lots,
            at most half the training lots; ``None``: judged reading by reading, the
            distance then to the training quantiles; else lot summaries against lots).
        problems: ``(reason, message)`` pairs, ``reason`` one of ``dead``, ``constant``,
            ``missing``, ``range``, ``drift``; empty when the sensor looks as in training.
    """

    sensor: str
    regime: str | None
    rows: int
    readings: int
    missing: float
    outside: float | None = None
    distance: float | None = None
    drift_limit: float | None = None
    range_limit: float | None = None
    lots: int | None = None
    problems: tuple[tuple[str, str], ...] = ()

    @property
    def reasons(self) -> tuple[str, ...]:
        return tuple(r for r, _ in self.problems)

    @property
    def where(self) -> str:
        """``sensor`` or ``sensor (regime R)``, for messages."""
        return self.sensor if self.regime is None else f"{self.sensor} (regime {self.regime})"


def check_sensor(
    sensor: str,
    trained: SensorProfile,
    values: np.ndarray,
    settings: WatchSettings,
    *,
    regime: str | None = None,
    presence: bool = True,
    lot: np.ndarray | None = None,
) -> SensorCheck:
    """``sensor``'s recent readings ``values`` ``(R,)`` (NaN: missing) against ``trained``;
    ``presence=False`` leaves the dead and missing checks to a check over every row;
    ``lot`` ``(R,)``: each row's lot, to judge the readings against groups of as many
    training lots (``None``: reading by reading)."""
    values = np.asarray(values, dtype=np.float64)
    seen = values[np.isfinite(values)]
    seen_lot = None if lot is None else pd.Series(np.asarray(lot)[np.isfinite(values)])
    rows, n = int(values.size), int(seen.size)
    missing = 1.0 - n / rows if rows else 0.0
    where = sensor if regime is None else f"{sensor} (regime {regime})"
    check = SensorCheck(sensor, regime, rows, n, round(missing, 4))
    if rows == 0 or trained.mean is None or trained.std is None:
        return check  # nothing recent, or a sensor training never read: nothing to compare
    problems: list[tuple[str, str]] = []
    if presence and n == 0:
        problems.append(
            (
                "dead",
                f"{where}: no reading at all in the {rows} recent rows (in "
                f"training {1 - trained.missing:.0%} of rows had one): a dead channel?",
            )
        )
        return _with(check, problems)
    if presence and missing - trained.missing > settings.missing_increase:
        problems.append(
            (
                "missing",
                f"{where}: {missing:.0%} of recent rows have no reading, "
                f"against {trained.missing:.0%} in training",
            )
        )
    if n < max(settings.min_readings, 1):
        return _with(check, problems)
    if np.ptp(seen) == 0 and trained.std > 0:
        problems.append(
            (
                "constant",
                f"{where}: reads {seen[0]:.4g} in all {n} recent readings; "
                f"in training it varied (spread {trained.std:.4g}): a stuck or replaced "
                f"sensor?",
            )
        )
        return _with(check, problems)
    low, high = trained.min, trained.max
    assert low is not None and high is not None  # a profile with a mean has a range
    outside = float(np.mean((seen < low) | (seen > high)))
    distance = None
    if trained.std > 0 and trained.quantiles:
        distance = float(wasserstein_distance(np.asarray(trained.quantiles), seen)) / trained.std
    limits = None
    if seen_lot is not None and trained.lots is not None:
        limits = lot_limits(trained.lots, int(seen_lot.nunique()), settings.false_alarms)
    drift_limit, range_limit = settings.drift, settings.outside_range
    if limits is not None:
        assert trained.lots is not None and seen_lot is not None
        if distance is not None:  # measured as the limit is: lot summaries against lots
            distance = lot_distance(trained.lots, seen, seen_lot.to_numpy()) / trained.std
            drift_limit = max(drift_limit, limits.distance / trained.std)
        range_limit = max(range_limit, limits.outside)
    check = SensorCheck(
        sensor,
        regime,
        rows,
        n,
        check.missing,
        round(outside, 4),
        None if distance is None else round(distance, 4),
        None if distance is None else round(drift_limit, 4),
        round(range_limit, 4),
        None if limits is None else limits.lots,
    )
    if distance is not None and distance > drift_limit:
        problems.append(
            (
                "drift",
                f"{where}: recent readings lie {distance:.1f} training spreads "
                f"from training (mean {_g(float(seen.mean()))} against "
                f"{_g(trained.mean)}, spread {_g(float(seen.std()))} against "
                f"{_g(trained.std)}; limit {drift_limit:.2g}{_basis(limits, settings)})",
            )
        )
    if outside > range_limit:
        problems.append(
            (
                "range",
                f"{where}: {outside:.0%} of recent readings lie outside the "
                f"training range [{_g(low)}, {_g(high)}] (limit {range_limit:.0%}"
                f"{_basis(limits, settings)})",
            )
        )
    return _with(check, problems)


def _basis(limits: LotLimits | None, settings: WatchSettings) -> str:
    """What a limit rests on, for messages."""
    if limits is None:
        return ""
    return (
        f"; groups of {limits.lots} training lots lie as far from the other training lots "
        f"in {settings.false_alarms:.0%} of {limits.draws} draws"
    )


def _with(check: SensorCheck, problems: list[tuple[str, str]]) -> SensorCheck:
    return replace(check, problems=tuple(problems))


def _column(frame: pd.DataFrame, sensor: str) -> np.ndarray:
    if sensor not in frame.columns:
        return np.full(len(frame), np.nan)
    return pd.to_numeric(frame[sensor], errors="coerce").to_numpy(dtype=np.float64)


def check_inputs(
    profile: TrainingProfile,
    frame: pd.DataFrame,
    settings: WatchSettings,
    *,
    regime: np.ndarray | None = None,
    regime_names: Sequence[str] = (),
    lot: np.ndarray | None = None,
) -> tuple[SensorCheck, ...]:
    """Every profiled sensor of ``frame`` (recent raw rows) against ``profile``.

    Dead and missing readings are judged over every row; drift, range and constancy over
    every row, or, where the profile has regimes and ``regime`` ``(R,)`` gives each row's
    index into ``regime_names``, within each regime that has enough recent readings (a
    sensor column the frame lacks reads as dead). With ``lot`` ``(R,)`` (each row's lot),
    a sensor's readings are judged against groups of as many training lots as they come
    from (see the module docstring)."""
    out: list[SensorCheck] = []
    by_regime: Mapping[str, Mapping[str, SensorProfile]] = profile.regimes
    use_regimes = bool(by_regime) and regime is not None
    for sensor, trained in profile.sensors.items():
        values = _column(frame, sensor)
        whole = check_sensor(sensor, trained, values, settings, presence=True, lot=lot)
        if not use_regimes or "dead" in whole.reasons:
            out.append(whole)
            continue
        presence = tuple(p for p in whole.problems if p[0] == "missing")
        out.append(
            replace(
                whole,
                outside=None,
                distance=None,
                drift_limit=None,
                range_limit=None,
                lots=None,
                problems=presence,
            )
        )
        assert regime is not None
        for k, name in enumerate(regime_names):
            own = by_regime.get(str(name), {}).get(sensor)
            inside = np.asarray(regime) == k  # (R,)
            rows = values[inside]
            if own is not None and rows.size:
                lots = None if lot is None else np.asarray(lot)[inside]
                out.append(
                    check_sensor(
                        sensor, own, rows, settings, regime=str(name), presence=False, lot=lots
                    )
                )
    return tuple(out)
