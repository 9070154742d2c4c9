"""Lot-aware drift: lots drawn like the training lots stay quiet although lots differ from
each other far more than readings within a lot do; a shift of two training spreads of one
sensor over three lots is still flagged; profiles without lots are judged as before."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.watch import TrainingProfile, WatchSettings, check_inputs
from mfgtx.watch.lots import LotSummaries, lot_limits

SENSORS = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
MEANS = np.array([180.0, 5.0, 2.2, 11.5])
SPREADS = np.array([8.0, 0.35, 0.3, 0.8])
#: Each lot's own level, in spreads: 0.9 of a sensor's spread lies between lots, as on the
#: sample plant (where its lines differ and a lot's readings spread 0.2 of the whole).
LOT_LEVEL = 0.9
GROUPS = (1, 3, 5, 10)
DRAWS = 25


def _lots(rng: np.random.Generator, lots: int, rows: int = 120) -> tuple[np.ndarray, np.ndarray]:
    """``lots`` lots of ``rows`` readings ``(lots * rows, 4)`` and each row's lot: a lot's
    level is a random effect (:data:`LOT_LEVEL` spreads), readings an AR(1) around it."""
    out = []
    within = np.sqrt(1 - LOT_LEVEL**2)
    for _ in range(lots):
        level = MEANS + rng.normal(0.0, LOT_LEVEL, 4) * SPREADS
        noise = np.zeros((rows, 4))
        noise[0] = rng.normal(size=4)
        for t in range(1, rows):  # AR(1), phi 0.7, unit variance
            noise[t] = 0.7 * noise[t - 1] + np.sqrt(1 - 0.7**2) * rng.normal(size=4)
        out.append(level + noise * SPREADS * within)
    return np.concatenate(out), np.repeat(np.arange(lots), rows)


@pytest.fixture(scope="module")
def profile() -> TrainingProfile:
    values, lot = _lots(np.random.default_rng(0), lots=40)
    return TrainingProfile.from_values(values, SENSORS, lot=lot)


def _checks(profile: TrainingProfile, values: np.ndarray, lot: np.ndarray | None, **kw: float):
    frame = pd.DataFrame(values, columns=list(SENSORS))
    return check_inputs(profile, frame, WatchSettings(**kw), lot=lot)


def _false_alarms(profile: TrainingProfile, *, lots_told: bool) -> Counter:
    """Findings per reason over :data:`DRAWS` watches of each group size in :data:`GROUPS`,
    every watch of fresh lots drawn like the training lots (4 sensor checks a watch)."""
    found: Counter = Counter()
    for k in GROUPS:
        for seed in range(DRAWS):
            values, lot = _lots(np.random.default_rng(1000 * k + seed), k)
            for c in _checks(profile, values, lot if lots_told else None):
                found.update(c.reasons)
    return found


def test_lots_drawn_like_the_training_lots_stay_quiet(profile) -> None:
    """400 sensor checks (25 watches each of 1, 3, 5 and 10 fresh lots, 4 sensors) of lots
    drawn like the 40 training lots. Measured: drift in 12 (3 %), range in 16 (4 %) of the
    400 checks (aimed at: false_alarms 1 %; the 40 training lots are themselves one sample,
    so one profile's realized rate lies around the aim, and a range is an extreme).
    Judged reading by reading, as before lots were recorded, the same draws raise drift in
    57 (14 %) and range in 20 (5 %) checks (the next test): this test fails there.
    Bound: 5 % for drift, 6 % for range."""
    found = _false_alarms(profile, lots_told=True)
    checks = 4 * DRAWS * len(GROUPS)
    assert found["drift"] / checks <= 0.05, found
    assert found["range"] / checks <= 0.06, found
    assert not set(found) - {"drift", "range"}, found


def test_the_same_lots_judged_reading_by_reading_alarm_often(profile) -> None:
    found = _false_alarms(profile, lots_told=False)
    assert found["drift"] / (4 * DRAWS * len(GROUPS)) > 0.05, found


def test_a_two_spread_shift_of_one_sensor_over_three_lots_is_flagged(profile) -> None:
    """20 watches of 3 fresh lots, temperature read two training spreads high. Measured:
    temperature flagged in 16 of 20 (a group of lots that runs cold by itself hides part of
    the shift); the other sensors flagged in 9 of 60 checks (drift 4, range 5)."""
    flagged = others = 0
    for seed in range(20):
        values, lot = _lots(np.random.default_rng(500 + seed), 3)
        values[:, 0] += 2 * profile.sensors["temperature_c"].std
        for c in _checks(profile, values, lot):
            if c.sensor == "temperature_c":
                flagged += "drift" in c.reasons
            else:
                others += bool(c.problems)
    assert flagged >= 14
    assert others <= 12


def test_the_limit_widens_with_the_lot_to_lot_spread_and_narrows_with_more_lots() -> None:
    rng = np.random.default_rng(1)
    lot = np.repeat(np.arange(30), 50)
    calm = LotSummaries.of(np.repeat(rng.normal(0, 0.2, 30), 50) + rng.normal(0, 1, 1500), lot)
    lumpy = LotSummaries.of(np.repeat(rng.normal(0, 1.0, 30), 50) + rng.normal(0, 0.2, 1500), lot)
    calm_limit, lumpy_limit = lot_limits(calm, 3, 0.01), lot_limits(lumpy, 3, 0.01)
    assert calm_limit is not None and lumpy_limit is not None
    assert calm_limit.distance < 0.6 < 1.2 < lumpy_limit.distance
    wider = lot_limits(lumpy, 1, 0.01)
    assert wider is not None and wider.distance > lumpy_limit.distance
    assert lot_limits(lumpy, 3, 0.1).distance < lumpy_limit.distance  # type: ignore[union-attr]
    few = LotSummaries.of(rng.normal(0, 1, 200), np.repeat(np.arange(4), 50))
    assert lot_limits(few, 2, 0.01) is None  # too few training lots: reading by reading


def test_dead_stuck_missing_and_out_of_range_sensors_are_flagged_with_lots_too(profile) -> None:
    values, lot = _lots(np.random.default_rng(3), 5)
    values[:, 2] = np.nan  # vibration: no reading at all
    values[:, 3] = 11.5  # motor current: one value throughout
    values[::2, 0] = np.nan  # temperature: half its readings missing
    values[:, 1] += 20 * profile.sensors["pressure_bar"].std  # pressure: far out
    found = {f"{r}:{c.sensor}" for c in _checks(profile, values, lot) for r in c.reasons}
    assert found == {
        "dead:vibration_mm_s",
        "constant:motor_current_a",
        "missing:temperature_c",
        "drift:pressure_bar",
        "range:pressure_bar",
    }


def test_a_profile_without_lots_is_judged_as_before(profile) -> None:
    state = profile.to_dict()
    assert all("lots" in s for s in state["sensors"].values())
    assert TrainingProfile.from_dict(state) == profile
    for s in state["sensors"].values():
        del s["lots"]  # as an older mfgtx wrote it
    older = TrainingProfile.from_dict(state)
    values, lot = _lots(np.random.default_rng(4), 3)
    with_lots = _checks(older, values, lot)
    without = _checks(older, values, None)
    assert with_lots == without
    assert all(c.lots is None and c.drift_limit == 1.0 for c in with_lots)
    assert any(c.lots == 3 for c in _checks(profile, values, lot))


def test_regimes_keep_their_lots() -> None:
    rng = np.random.default_rng(6)
    values, lot = _lots(rng, 20)
    regime = (lot % 2).astype(np.int64)  # (R,) odd lots run the other grade
    p = TrainingProfile.from_values(
        values, SENSORS, regime=regime, regime_names=("a", "b"), lot=lot
    )
    assert p.regimes["a"]["temperature_c"].lots.n_lots == 10  # type: ignore[union-attr]
    assert p.sensors["temperature_c"].lots.n_lots == 20  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def sample_plant_draws() -> tuple[Counter, Counter, int]:
    """The sample plant's own lots, left untouched: 30 draws each of 1 and 3 lots, each
    judged against a profile of the other lots (as new lots meet a trained bundle), lot by
    lot and reading by reading; the findings of both and the sensor checks made."""
    frame = pd.read_csv(Path(__file__).parents[2] / "sample_data" / "sensors.csv")
    sensors = list(SENSORS)
    names = frame["lot"].unique()
    rng = np.random.default_rng(0)
    by_lots, by_readings = Counter(), Counter()
    checks = 0
    for k in (1, 3):
        for _ in range(30):
            held = frame["lot"].isin(names[rng.choice(len(names), k, replace=False)])
            rest = frame[~held]
            profile = TrainingProfile.from_values(
                rest[sensors].to_numpy(float), sensors, lot=pd.factorize(rest["lot"])[0]
            )
            recent = frame[held]
            for c in check_inputs(profile, recent, WatchSettings(), lot=recent["lot"].to_numpy()):
                by_lots.update(c.reasons)
            for c in check_inputs(profile, recent, WatchSettings()):
                by_readings.update(c.reasons)
            checks += len(sensors)
    return by_lots, by_readings, checks


def test_the_sample_plants_own_lots_stay_quiet(sample_plant_draws) -> None:
    """The sample plant's lots differ by line (L2 runs about 1.3 spreads hot, L3 1.1 cold,
    on every sensor). 240 sensor checks of held-out lots, 1 or 3 at a time. Measured: judged
    lot by lot, drift in 8 (3.3 %); reading by reading, as before, drift in 83 (35 %): this
    test fails there. Bound: 5 %."""
    by_lots, _, checks = sample_plant_draws
    assert sum(by_lots.values()) / checks <= 0.05, by_lots


def test_the_sample_plants_lots_judged_reading_by_reading_alarm_often(sample_plant_draws) -> None:
    _, by_readings, checks = sample_plant_draws
    assert by_readings["drift"] / checks > 0.2, by_readings
