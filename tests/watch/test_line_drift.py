"""Drift judged line by line: where the job names key columns (``data.columns.keys``: the
line), each recent lot is judged against the training lots of its own line. Lines that differ
from each other (one hot, one cold) stay quiet; a drift of one line's lots that the pooled
lot-to-lot spread hides is flagged with the line named; a line training never saw is said;
a profile without keys (an older bundle) is judged as before."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.watch import TrainingProfile, WatchSettings, check_inputs
from mfgtx.watch.lots import LotSummaries

SENSORS = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
MEANS = np.array([180.0, 5.0, 2.2, 11.5])
SPREADS = np.array([8.0, 0.35, 0.3, 0.8])
#: Each line's level in spreads, as on the sample plant (L2 hot, L3 cold on every sensor).
LINES = {"L1": 0.0, "L2": 1.3, "L3": -1.3}
#: A lot's own level around its line's, and its readings around that, in spreads.
LOT_LEVEL, WITHIN = 0.3, 0.3


def _lots(
    rng: np.random.Generator, lines: list[str], rows: int = 80, first: int = 0
) -> pd.DataFrame:
    """One lot per entry of ``lines`` (its line), ``rows`` readings each (AR(1) around the
    lot's level), lots numbered from ``first``."""
    parts = []
    for i, line in enumerate(lines):
        level = LINES.get(line, 0.0) + rng.normal(0.0, LOT_LEVEL, 4)  # (4,) spreads
        noise = np.zeros((rows, 4))
        noise[0] = rng.normal(size=4)
        for t in range(1, rows):
            noise[t] = 0.7 * noise[t - 1] + np.sqrt(1 - 0.7**2) * rng.normal(size=4)
        part = pd.DataFrame(MEANS + (level + WITHIN * noise) * SPREADS, columns=list(SENSORS))
        parts.append(part.assign(lot=f"lot{first + i}", line=line))
    return pd.concat(parts, ignore_index=True)


def _profile(frame: pd.DataFrame, *, keys: bool = True) -> TrainingProfile:
    lot, names = pd.factorize(frame["lot"])
    lot_keys = [(str(frame.loc[frame["lot"] == n, "line"].iloc[0]),) for n in names]
    return TrainingProfile.from_values(
        frame[list(SENSORS)].to_numpy(float),
        SENSORS,
        lot=lot,
        keys=("line",) if keys else (),
        lot_keys=lot_keys if keys else None,
    )


@pytest.fixture(scope="module")
def training() -> pd.DataFrame:
    """15 training lots per line, the lines interleaved as a plant runs them."""
    return _lots(np.random.default_rng(0), ["L1", "L2", "L3"] * 15)


@pytest.fixture(scope="module")
def profile(training) -> TrainingProfile:
    return _profile(training)


def _checks(profile: TrainingProfile, recent: pd.DataFrame):
    return check_inputs(profile, recent, WatchSettings(), lot=recent["lot"].to_numpy())


def test_the_profile_records_each_training_lots_line(profile, training) -> None:
    lots = profile.sensors["temperature_c"].lots
    assert lots is not None and lots.keys is not None and profile.keys == ("line",)
    assert lots.keys[:3] == (("L1",), ("L2",), ("L3",)) and lots.n_lots == 45
    assert lots.of_key(("L2",)).n_lots == 15 and lots.grouped
    state = profile.to_dict()
    assert state["keys"] == ["line"] and state["sensors"]["temperature_c"]["lots"]["keys"][1] == [
        "L2"
    ]
    assert TrainingProfile.from_dict(state) == profile


def test_a_drift_of_one_lines_lots_is_flagged_with_the_line_named(profile, training) -> None:
    """10 watches of 2 lots of the cold line L3 whose temperature reads one training spread
    high (still inside the other lines' range, so the pooled lot-to-lot spread hides it) and
    1 untouched lot of L1. Measured: flagged in 10 of 10, naming line L3, the other sensors
    in 1 of 30 checks (an outlying L1 lot's pressure); judged against every training lot (no
    keys, as before) the same watches flag it in 0 of 10: this test fails there."""
    older = _profile(training, keys=False)
    named = pooled = others = 0
    for seed in range(10):
        recent = _lots(np.random.default_rng(100 + seed), ["L3", "L3", "L1"], first=1000)
        l3 = recent["line"] == "L3"
        recent.loc[l3, "temperature_c"] += SPREADS[0] * np.sqrt(1 + 1.3**2)  # ~ the whole spread
        for c in _checks(profile, recent):
            if c.sensor != "temperature_c":
                others += bool(c.problems)
            elif "drift" in c.reasons:
                named += c.group == "line L3" and "temperature_c on line L3" in c.problems[0][1]
        pooled += any("drift" in c.reasons for c in _checks(older, recent))
    assert named >= 9
    assert others <= 2
    assert pooled <= 2


def test_lines_that_differ_stay_quiet_when_nothing_changed(profile) -> None:
    """300 sensor checks (25 watches each of 1, 2 and 3 fresh lots of random lines, 4
    sensors) of lots drawn like the training lots of their lines. Measured: drift in 12
    (4.0 %), range in 17 (5.7 %) of the 300 checks (aimed at: false_alarms 1 %, shared among
    the lines a watch holds; 15 training lots of a line are one small sample, so the realized
    rate lies above the aim, as the pooled judgement's does in test_lots.py: 3 % and 4 %).
    Without the half-normal tail of a line's few groups (lot_limits(tail=True)) drift rises
    to 17 (5.7 %), and without sharing the rate among the lines to 17 too. Bound: 5 % for
    drift, 8 % for range."""
    found: Counter = Counter()
    rng = np.random.default_rng(7)
    for k in (1, 2, 3):
        for seed in range(25):
            lines = list(rng.choice(list(LINES), k))
            recent = _lots(np.random.default_rng(2000 + 100 * k + seed), lines, first=1000)
            for c in _checks(profile, recent):
                found.update(c.reasons)
    checks = 4 * 25 * 3
    assert found["drift"] / checks <= 0.05, found
    assert found["range"] / checks <= 0.08, found
    assert not set(found) - {"drift", "range"}, found


def test_a_line_training_never_saw_is_said(profile) -> None:
    recent = _lots(np.random.default_rng(9), ["L4", "L4", "L1"], first=1000)
    checks = _checks(profile, recent)
    new = [c for c in checks if c.sensor == "line"]
    assert len(new) == 1 and new[0].reasons == ("range",)
    assert "line L4 was never seen in training (2 recent lot(s))" in new[0].problems[0][1]
    assert all(c.sensor != "line" for c in _checks(profile, recent[recent["line"] == "L1"]))


def test_a_line_with_few_training_lots_is_judged_against_every_lot(training) -> None:
    few = training[~training["lot"].isin([f"lot{i}" for i in range(5, 45, 3)])]  # L3: 1 left
    profile = _profile(few)
    assert profile.sensors["temperature_c"].lots.of_key(("L3",)).n_lots == 1  # type: ignore[union-attr]
    recent = _lots(np.random.default_rng(11), ["L3", "L3"], first=1000)
    recent["temperature_c"] += 6 * SPREADS[0]
    (temp,) = [c for c in _checks(profile, recent) if c.sensor == "temperature_c"]
    assert "drift" in temp.reasons and temp.group == "line L3"
    assert "line L3 has only 1 training lot(s): against every training lot" in temp.problems[0][1]


def test_a_key_that_names_each_lot_apart_does_not_group(training) -> None:
    """An order number as key: every training lot its own value, every recent one new."""
    orders = training.assign(line=training["lot"])
    profile = _profile(orders)
    lots = profile.sensors["temperature_c"].lots
    assert lots is not None and not lots.grouped
    recent = _lots(np.random.default_rng(12), ["L1", "L2"], first=1000)
    recent["line"] = recent["lot"]
    checks = _checks(profile, recent)
    assert all(c.group is None and c.sensor != "line" for c in checks)
    assert checks == _checks(_profile(orders, keys=False), recent)


def test_a_profile_without_keys_is_judged_as_before(profile, training) -> None:
    state = profile.to_dict()
    del state["keys"]
    for s in state["sensors"].values():
        del s["lots"]["keys"]  # as the previous mfgtx wrote it
    older = TrainingProfile.from_dict(state)
    assert older == _profile(training, keys=False)
    assert older.sensors["temperature_c"].lots.keys is None  # type: ignore[union-attr]
    recent = _lots(np.random.default_rng(13), ["L3", "L2", "L4"], first=1000)
    checks = _checks(older, recent)
    assert all(c.group is None and c.sensor != "line" for c in checks)
    assert checks == _checks(older, recent.drop(columns="line"))


def test_lot_summaries_refuse_key_values_of_another_number_of_lots() -> None:
    lots = LotSummaries.of(np.arange(20.0), np.repeat(np.arange(4), 5), [("a",)] * 4)
    state = lots.to_dict()
    assert LotSummaries.from_dict(state) == lots
    state["keys"] = state["keys"][:3]
    with pytest.raises(ValueError, match="4 lots with key values of 3"):
        LotSummaries.from_dict(state)


def test_the_sample_plants_own_lots_judged_line_by_line_stay_quiet() -> None:
    """The sample plant's lots (12 a line; L2 hot, L3 cold), left untouched: 30 draws each of
    1 and 3 held-out lots, each judged against a profile of the other lots with their lines
    (240 sensor checks). Measured: drift in 2 (0.8 %), range in 10 (4.2 %): a line's range
    rests on its 11 or 12 other lots, narrower than every lot's (pooled, test_lots.py: 8
    findings in all). Without the half-normal tail of a line's few groups, drift in 24 (10 %):
    this test fails there. Bound: 3 % for drift, 6 % for range."""
    frame = pd.read_csv(Path(__file__).parents[2] / "sample_data" / "sensors.csv")
    line_of = frame.groupby("lot")["line"].first()
    names = frame["lot"].unique()
    rng = np.random.default_rng(0)
    found: Counter = Counter()
    checks = 0
    for k in (1, 3):
        for _ in range(30):
            held = frame["lot"].isin(names[rng.choice(len(names), k, replace=False)])
            rest = frame[~held]
            lot, lots = pd.factorize(rest["lot"])
            profile = TrainingProfile.from_values(
                rest[list(SENSORS)].to_numpy(float),
                SENSORS,
                lot=lot,
                keys=("line",),
                lot_keys=[(str(line_of[n]),) for n in lots],
            )
            found.update(r for c in _checks(profile, frame[held]) for r in c.reasons)
            checks += len(SENSORS)
    assert found["drift"] / checks <= 0.03, found
    assert found["range"] / checks <= 0.06, found
    assert not set(found) - {"drift", "range"}, found


def test_lots_without_a_line_are_judged_against_every_training_lot(profile) -> None:
    recent = _lots(np.random.default_rng(14), ["L1", "L2"], first=1000)
    recent.loc[recent["line"] == "L2", "line"] = None
    recent.loc[recent["line"].isna(), "temperature_c"] += 10 * SPREADS[0]
    (temp,) = [c for c in _checks(profile, recent) if c.sensor == "temperature_c"]
    assert "drift" in temp.reasons and temp.group == "lots without line"
    assert all(c.sensor != "line" for c in _checks(profile, recent))
