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

Where the training lots recorded their values of the job's key columns (``data.columns.keys``:
the line, press or machine) and the recent rows carry them, each key's recent lots are judged
against the training lots of that key alone: distances in that key's training spread, the
range that key had, groups of as many of its lots against its other lots, the false-alarm
rate shared among the keys a watch holds, and at least a half-normal tail where its groups
are few (:func:`~mfgtx.watch.lots.lot_limits`). A sensor reports its worst key
(:attr:`SensorCheck.group`, ``temperature_c on line L3``). A key with fewer than
:data:`~mfgtx.watch.lots.MIN_LOTS` training lots is judged against every training lot, and
the message says so; a key no training lot had is a ``range`` finding of the key column.

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
from mfgtx.watch.lots import (
    MIN_LOTS,
    LotLimits,
    LotSummaries,
    key_words,
    lot_distance,
    lot_limits,
)
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
        group: the recent lots' key (``line L3``) whose figures these are, the worst of the
            keys judged apart (``None``: every recent lot judged together).
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
    group: str | None = None

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
    key: np.ndarray | None = None,
    key_columns: Sequence[str] = (),
) -> SensorCheck:
    """``sensor``'s recent readings ``values`` ``(R,)`` (NaN: missing) against ``trained``;
    ``presence=False`` leaves the dead and missing checks to a check over every row;
    ``lot`` ``(R,)``: each row's lot, to judge the readings against groups of as many
    training lots (``None``: reading by reading); ``key`` ``(R,)``: each row's values of
    ``key_columns`` (a tuple of text, ``None``: not told), to judge each key's lots against
    the training lots of that key (where the training lots record theirs)."""
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    seen = values[finite]
    seen_lot = None if lot is None else pd.Series(np.asarray(lot)[finite])
    seen_key = None if key is None else np.asarray(key, dtype=object)[finite]
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
    groups = [
        g
        for g in _groups_of(trained, seen, seen_lot, seen_key, key_columns)
        if g[1].sum() >= max(settings.min_readings, 1)
    ]
    rate = settings.false_alarms / max(len(groups), 1)  # several lines: each at its share
    judged = [
        _judge(trained, seen[inside], _at(seen_lot, inside), own, settings, group, note, rate)
        for group, inside, own, note in groups
    ]
    if not judged:
        return _with(check, problems)
    # the worst group: the furthest beyond its drift limit; the most outside its range
    worst = max(judged, key=lambda j: -1.0 if j.distance is None else j.distance / j.drift_limit)
    wide = max(judged, key=lambda j: j.outside / max(j.range_limit, 1e-12))
    check = SensorCheck(
        sensor,
        regime,
        rows,
        n,
        check.missing,
        round(worst.outside, 4),
        None if worst.distance is None else round(worst.distance, 4),
        None if worst.distance is None else round(worst.drift_limit, 4),
        round(worst.range_limit, 4),
        None if worst.limits is None else worst.limits.lots,
        group=worst.group,
    )
    if worst.distance is not None and worst.distance > worst.drift_limit:
        j = worst
        of = "training" if j.own is None else f"{j.group} in training"
        problems.append(
            (
                "drift",
                f"{j.where(where)}: recent readings lie {j.distance:.1f} training spreads "
                f"from {of} (mean {_g(j.mean)} against {_g(j.trained_mean)}, spread "
                f"{_g(j.std)} against {_g(j.spread)}; limit {j.drift_limit:.2g}"
                f"{_basis(j)})",
            )
        )
    if wide.outside > wide.range_limit:
        j = wide
        of = "the training range" if j.own is None else f"the range of {j.group} in training"
        problems.append(
            (
                "range",
                f"{j.where(where)}: {j.outside:.0%} of recent readings lie outside "
                f"{of} [{_g(j.low)}, {_g(j.high)}] (limit {j.range_limit:.0%}"
                f"{_basis(j)})",
            )
        )
    return _with(check, problems)


@dataclass(frozen=True)
class _Judged:
    """One group of recent readings (every one, or one key's) against training lots.

    ``own``: the training lots of the group's key (``None``: every training lot);
    ``spread``, ``trained_mean``: of those training readings (the unit of ``distance``);
    ``mean``, ``std``: of the group's recent readings; ``note``: why a key's readings were
    judged against every training lot."""

    outside: float
    distance: float | None
    drift_limit: float
    range_limit: float
    limits: LotLimits | None
    low: float
    high: float
    mean: float
    std: float
    trained_mean: float
    spread: float
    own: LotSummaries | None
    group: str | None
    note: str
    rate: float

    def where(self, sensor: str) -> str:
        return sensor if self.group is None else f"{sensor} on {self.group}"


def _moments(lots: LotSummaries) -> tuple[float, float]:
    """The mean and spread of the readings of ``lots``, from their quantiles (each lot
    weighted by its readings; the spread of a lot's mid-quantiles is a little below its
    readings', about 0.92 of it for a normal lot)."""
    qs = np.asarray(lots.quantiles, dtype=np.float64)  # (L, Q)
    w = np.repeat(np.asarray(lots.counts, dtype=np.float64), qs.shape[1])
    x = qs.ravel()
    mean = float(np.average(x, weights=w))
    return mean, float(np.sqrt(np.average((x - mean) ** 2, weights=w)))


def _judge(
    trained: SensorProfile,
    seen: np.ndarray,
    seen_lot: pd.Series | None,
    lots: LotSummaries | None,
    settings: WatchSettings,
    group: str | None = None,
    note: str = "",
    rate: float | None = None,
) -> _Judged:
    """Readings ``seen`` (of lots ``seen_lot``) against the training lots ``lots`` (those
    of one key: their range, and distances in their spread; else every training lot, or
    none kept: the whole profile's), at the false-alarm ``rate`` (default the settings')."""
    assert trained.std is not None and trained.min is not None and trained.max is not None
    assert trained.mean is not None
    own = None if lots is None or lots is trained.lots else lots
    low, high, mean, spread = trained.min, trained.max, trained.mean, trained.std
    if own is not None:
        low, high = min(own.mins), max(own.maxs)
        mean, spread = _moments(own)
        spread = spread if spread > 0 else trained.std
    outside = float(np.mean((seen < low) | (seen > high)))
    distance = None
    if trained.std > 0 and trained.quantiles:
        distance = float(wasserstein_distance(np.asarray(trained.quantiles), seen)) / trained.std
    limits = None
    rate = settings.false_alarms if rate is None else rate
    if seen_lot is not None and lots is not None:
        limits = lot_limits(lots, int(seen_lot.nunique()), rate, tail=own is not None)
    drift_limit, range_limit = settings.drift, settings.outside_range
    if limits is not None:
        assert lots is not None and seen_lot is not None
        if distance is not None:  # measured as the limit is: lot summaries against lots
            distance = lot_distance(lots, seen, seen_lot.to_numpy()) / spread
            drift_limit = max(drift_limit, limits.distance / spread)
        range_limit = max(range_limit, limits.outside)
    return _Judged(
        outside, distance, drift_limit, range_limit, limits, low, high,
        float(seen.mean()), float(seen.std()), mean, spread, own, group, note, rate,
    )  # fmt: skip


def _at(lot: pd.Series | None, inside: np.ndarray) -> pd.Series | None:
    return None if lot is None else lot[inside]


def _groups_of(
    trained: SensorProfile,
    seen: np.ndarray,
    seen_lot: pd.Series | None,
    key: np.ndarray | None,
    key_columns: Sequence[str],
) -> list[tuple[str | None, np.ndarray, LotSummaries | None, str]]:
    """``(group, rows, training lots, note)``: every reading against every training lot;
    or, where the training lots record repeating key values and ``key`` gives each reading's
    (the line), the readings of each key against the training lots of that key: against every
    training lot where that key has fewer than :data:`~mfgtx.watch.lots.MIN_LOTS` training
    lots (or none: a new line), or for readings without a key value; ``note`` says so."""
    every = np.ones(len(seen), dtype=bool)
    lots = trained.lots
    if key is None or seen_lot is None or lots is None or not lots.grouped:
        return [(None, every, lots, "")]
    out: list[tuple[str | None, np.ndarray, LotSummaries | None, str]] = []
    codes, values = pd.factorize(pd.Series(key, dtype=object), use_na_sentinel=False)
    for at, value in enumerate(values):
        inside = codes == at  # (R,)
        if not isinstance(value, tuple):  # rows without a key value
            out.append(("lots without " + "/".join(key_columns), inside, lots, ""))
            continue
        words = key_words(key_columns, value)
        own = lots.of_key(value)
        if own.n_lots >= MIN_LOTS:
            out.append((words, inside, own, ""))
        elif own.n_lots == 0:
            note = f"{words} never seen in training: against every training lot"
            out.append((words, inside, lots, note))
        else:
            note = f"{words} has only {own.n_lots} training lot(s): against every training lot"
            out.append((words, inside, lots, note))
    return out


def _basis(judged: _Judged) -> str:
    """What a limit rests on, for messages."""
    limits, note = judged.limits, judged.note
    tail = f"; {note}" if note else ""
    if limits is None:
        return tail
    rate = f"{judged.rate:.2g}" if judged.rate < 0.01 else f"{judged.rate:.0%}"
    if judged.own is not None:
        return (
            f"; groups of {limits.lots} training lots of {judged.group} lie as far from its "
            f"other training lots in {rate} of {limits.draws} draws"
        )
    return (
        f"; groups of {limits.lots} training lots lie as far from the other training lots "
        f"in {rate} of {limits.draws} draws{tail}"
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
    from (see the module docstring); where the profile recorded the training lots' key
    columns (the line) and ``frame`` has them, each key's recent lots against the training
    lots of that key, and a key training never saw is a finding of its own (``range`` of the
    key column)."""
    out: list[SensorCheck] = []
    by_regime: Mapping[str, Mapping[str, SensorProfile]] = profile.regimes
    use_regimes = bool(by_regime) and regime is not None
    key = _keys_of(frame, profile.keys) if lot is not None else None
    columns = profile.keys
    for sensor, trained in profile.sensors.items():
        values = _column(frame, sensor)
        whole = check_sensor(
            sensor, trained, values, settings, presence=True, lot=lot, key=key, key_columns=columns
        )
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
                group=None,
            )
        )
        assert regime is not None
        for k, name in enumerate(regime_names):
            own = by_regime.get(str(name), {}).get(sensor)
            inside = np.asarray(regime) == k  # (R,)
            rows = values[inside]
            if own is not None and rows.size:
                lots = None if lot is None else np.asarray(lot)[inside]
                keys = None if key is None else key[inside]
                out.append(
                    check_sensor(
                        sensor,
                        own,
                        rows,
                        settings,
                        regime=str(name),
                        presence=False,
                        lot=lots,
                        key=keys,
                        key_columns=columns,
                    )
                )
    new = _new_keys(profile, key, lot)
    if new is not None:
        out.append(new)
    return tuple(out)


def _keys_of(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray | None:
    """``(R,)`` each row's values of the key ``columns`` as a tuple of text (``None``: one
    missing); ``None`` without key columns or when ``frame`` lacks one."""
    if not columns or any(c not in frame.columns for c in columns):
        return None
    text = frame[list(columns)].astype("string")
    told = text.notna().all(axis=1).to_numpy()  # (R,)
    codes, combos = pd.factorize(pd.MultiIndex.from_frame(text.fillna("")))
    names = np.empty(len(combos), dtype=object)  # (U,) each combination as a tuple of text
    names[:] = [tuple(str(v) for v in c) for c in combos]
    out = names[codes]  # (R,)
    out[~told] = None
    return out


def _new_keys(
    profile: TrainingProfile, key: np.ndarray | None, lot: np.ndarray | None
) -> SensorCheck | None:
    """A check of the key columns (``range``) naming the recent keys no training lot had
    (a new line), or ``None`` (every key seen, or keys not judged)."""
    summaries = [p.lots for p in profile.sensors.values() if p.lots is not None]
    if key is None or lot is None or not summaries or not summaries[0].grouped:
        return None
    seen = {k for s in summaries for k in (s.keys or ()) if k is not None}
    recent = pd.DataFrame({"key": list(key), "lot": np.asarray(lot)})
    recent = recent[recent["key"].notna()]
    lots = recent.groupby("key", sort=False)["lot"].nunique()
    new = [(k, int(n)) for k, n in lots.items() if k not in seen]
    if not new:
        return None
    columns = profile.keys
    said = "; ".join(
        f"{key_words(columns, k)} was never seen in training ({n} recent lot(s)): its readings "
        f"are judged against every training lot; retrain with its lots to judge it on its own"
        for k, n in new
    )
    rows = int(recent["key"].isin([k for k, _ in new]).sum())
    return SensorCheck("/".join(columns), None, rows, rows, 0.0, problems=(("range", said),))
