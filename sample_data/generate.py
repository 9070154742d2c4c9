"""Deterministic generator of the synthetic sample plant in ``sample_data/``.

Writes four CSV files (see ``sample_data/README.md`` for every column and the story):

* ``sensors.csv``      1-minute wide sensor log of 36 lots on three production lines;
* ``quality.csv``      one row per lot: inspection time, surface roughness Ra, pass/fail;
* ``faults.csv``       ground truth of the sensor faults injected into ``sensors.csv``;
* ``degradation.csv``  run-to-failure cycles of 14 machines, with the true RUL (target only);

and, each from its own random stream so that the others do not change:

* ``generate_defects``: the folder ``defects/``: 200 grey 64x64 PNG surface patches with
  scratches, pits, inclusions, cracks or no defect, a defect mask each, and ``manifest.csv``
  (label, lot, timestamp, defect size and contrast per patch);
* ``generate_regimes``: the folder ``regimes/``: a fleet run under six operating conditions
  (``train.csv`` run to failure, ``test.csv`` cut off before failure, ``test_rul.csv`` the
  truth of the test machines);
* ``generate_inspection``: the folder ``inspection/``: 16 full-size 900x360 photos of steel
  strip, some with pitting, each with a PNG mask and a labelme file of the pit outlines, and
  ``manifest.csv`` (path, lot, timestamp);
* ``generate_finishing``: the folder ``finishing/``: a finishing stand's 10-s log of 200 coils
  (``log.csv``: strip speed, vibration) and each coil's inspection (``inspection.csv``: chatter
  marks, pass/fail). The physics (:func:`vibration_beat`): the vibration level beats as work
  and backup roll pass each other; on a healthy stand the beat is irregular, when the stand
  chatters it turns regular at the roll stack's natural frequency, with the same depth. Only
  that regularity, a shape in time, marks the failing coils: a window's mean, std, min, max,
  last value and slope (the baselines' features) are distributed alike. Chatter is likelier
  at high speed, a weak clue the baselines can use.

Usage::

    python sample_data/generate.py [--out DIR] [--seed N]

The same seed gives byte-identical files. numpy and pandas are needed, and Pillow to fill the
pit outlines the way ``mfgtx.images.rasterise`` does.
"""

import argparse
import heapq
import itertools
import json
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw

DEFAULT_SEED = 20260302
DEFAULT_OUT = Path(__file__).resolve().parent

PLANT_START = pd.Timestamp("2026-03-02T06:00:00Z")  # Monday, first shift
FLEET_START = pd.Timestamp("2026-01-05T00:00:00Z")
SENSORS = ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
DECIMALS = {"temperature_c": 2, "pressure_bar": 3, "vibration_mm_s": 3, "motor_current_a": 2}

LOTS_PER_LINE = 12
LOT_MINUTES = (180, 480)  # inclusive range of lot durations
CHANGEOVER_MINUTES = (20, 75)  # inclusive range of gaps between lots of one campaign
WARMUP_MINUTES = 30  # the first minutes of a lot are the heat-up ramp
INSPECTION_DELAY_H = (2.0, 12.0)  # the quality result is known this long after lot_end
RA_SPEC_UM = 1.6  # upper spec limit of the surface roughness Ra (lower is better)

N_MACHINES = 14
LIFE_CYCLES = (120, 350)  # inclusive range of cycles to failure
CYCLE_MINUTES = (110, 130)  # inclusive range of minutes between two cycles


@dataclass(frozen=True)
class LineSpec:
    """Nominal behaviour of one production line (one product family per line)."""

    temp_sp_c: float  # centre of the recipe temperature set-points
    temp_opt_c: float  # process temperature that gives the smoothest surface
    pressure_sp_bar: float
    vibration_mm_s: float  # nominal RMS vibration velocity of a healthy spindle
    current_a: float  # nominal motor current
    ra_base_um: float  # roughness of a perfect lot
    temp_drift_c_per_day: float  # slow upward drift of the real temperature (heater control)
    vib_drift_per_day: float  # relative growth of vibration per day (spindle wear)


LINES: dict[str, LineSpec] = {
    "L1": LineSpec(185.0, 185.0, 5.20, 2.2, 12.0, 0.95, 0.00, 0.000),
    "L2": LineSpec(195.0, 195.0, 6.00, 2.6, 14.5, 0.95, 0.15, 0.008),
    "L3": LineSpec(172.0, 173.0, 4.60, 1.8, 10.5, 0.95, 0.00, 0.000),
}


@dataclass(frozen=True)
class FaultPlan:
    """One injected sensor fault: which lot and sensor, what kind; the timing is drawn."""

    kind: str  # "missing", "stuck", "spike" or "offset"
    lot: str
    sensor: str  # a column of SENSORS, or "all" for a data-logger outage
    detail: float = 0.0  # spike count, or the offset of a calibration jump


# Which lots get which fault is fixed, so the README table holds for every seed; the exact
# minutes are drawn from the seed and written to faults.csv.
FAULT_PLAN: tuple[FaultPlan, ...] = (
    FaultPlan("missing", "L1-0003", "all"),
    FaultPlan("missing", "L1-0007", "vibration_mm_s"),
    FaultPlan("missing", "L1-0010", "pressure_bar"),
    FaultPlan("missing", "L1-0012", "temperature_c"),
    FaultPlan("missing", "L2-0002", "motor_current_a"),
    FaultPlan("missing", "L2-0005", "all"),
    FaultPlan("missing", "L2-0009", "temperature_c"),
    FaultPlan("missing", "L2-0011", "vibration_mm_s"),
    FaultPlan("missing", "L3-0001", "pressure_bar"),
    FaultPlan("missing", "L3-0004", "temperature_c"),
    FaultPlan("missing", "L3-0006", "all"),
    FaultPlan("missing", "L3-0010", "motor_current_a"),
    FaultPlan("stuck", "L2-0006", "pressure_bar"),
    FaultPlan("stuck", "L3-0009", "vibration_mm_s"),
    FaultPlan("spike", "L1-0008", "temperature_c", 4),
    FaultPlan("spike", "L2-0010", "pressure_bar", 3),
    FaultPlan("spike", "L3-0003", "vibration_mm_s", 5),
    FaultPlan("offset", "L3-0008", "temperature_c", 5.0),
)


def iso_utc(ts: pd.Series | pd.DatetimeIndex) -> pd.Series:
    """Format UTC timestamps as ISO 8601 with an explicit offset: 2026-03-02T06:00:00+00:00."""
    return pd.Series(pd.DatetimeIndex(ts).strftime("%Y-%m-%dT%H:%M:%S+00:00"))


def ar1(rng: np.random.Generator, n: int, phi: float, sigma: float) -> np.ndarray:
    """Stationary AR(1) series x[t] = phi x[t-1] + e[t] with marginal std ``sigma``."""
    eps = rng.normal(0.0, sigma * np.sqrt(1.0 - phi**2), n)
    out = np.empty(n)
    out[0] = rng.normal(0.0, sigma)
    for t in range(1, n):
        out[t] = phi * out[t - 1] + eps[t]
    return out


# --------------------------------------------------------------------------- schedule


def make_schedule(rng: np.random.Generator) -> pd.DataFrame:
    """Lots per line in campaigns of 2-3 back-to-back lots, with 2-5 idle days in between."""
    rows = []
    for line_no, line in enumerate(LINES):
        day = line_no % 2  # stagger the lines a little
        lot_no = 0
        while lot_no < LOTS_PER_LINE:
            start = PLANT_START + pd.Timedelta(days=day, minutes=int(rng.integers(0, 151)))
            campaign = min(int(rng.integers(2, 4)), LOTS_PER_LINE - lot_no)
            for _ in range(campaign):
                lot_no += 1
                minutes = int(rng.integers(LOT_MINUTES[0], LOT_MINUTES[1] + 1))
                end = start + pd.Timedelta(minutes=minutes)
                rows.append(
                    {
                        "line": line,
                        "lot": f"{line}-{lot_no:04d}",
                        "lot_start": start,
                        "lot_end": end,
                        "minutes": minutes,
                    }
                )
                gap = int(rng.integers(CHANGEOVER_MINUTES[0], CHANGEOVER_MINUTES[1] + 1))
                start = end + pd.Timedelta(minutes=gap)
            day = (end - PLANT_START).days + int(rng.integers(3, 7))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- one lot


@dataclass
class Lot:
    """Measured signals of one lot (noise added, no faults yet) and the true drivers of quality."""

    measured: dict[str, np.ndarray]
    drivers: dict[str, float]


def simulate_lot(rng: np.random.Generator, spec: LineSpec, n: int, days_in: float) -> Lot:
    """Simulate ``n`` one-minute samples of one lot started ``days_in`` days after plant start."""
    t = np.arange(n, dtype=float)
    hours = t / 60.0

    # Temperature: recipe set-point, heat-up ramp, slow drift within the lot, AR(1) wander,
    # and the line-level drift over weeks (L2's heater control creeps upwards).
    setpoint = spec.temp_sp_c + round(float(rng.normal(0.0, 2.5)) * 2) / 2
    line_drift = spec.temp_drift_c_per_day * days_in
    ramp = -rng.uniform(8.0, 20.0) * np.exp(-t / rng.uniform(5.0, 12.0))
    lot_drift = rng.normal(0.0, 0.4) * hours
    temp_wander = rng.lognormal(np.log(0.6), 0.4)
    temp = setpoint + line_drift + ramp + lot_drift + ar1(rng, n, 0.97, temp_wander)

    # Pressure: set-point, a little thermal coupling, lot-specific instability and pump pulsation.
    p_instab = rng.lognormal(np.log(0.045), 0.5)
    pulsation = rng.uniform(0.0, 0.04) * np.sin(
        2 * np.pi * t / rng.uniform(8, 25) + rng.uniform(0, 6.3)
    )
    pressure = (
        spec.pressure_sp_bar * (1 + rng.normal(0.0, 0.01))
        + 0.01 * (temp - setpoint - line_drift)
        + ar1(rng, n, 0.8, p_instab)
        + pulsation
    )

    # Vibration (RMS velocity, positive): lot-level tool condition, wear within the lot, line wear
    # over weeks, multiplicative noise. Motor jams add short bumps below.
    tool = rng.lognormal(0.0, 0.18)
    wear = 1.0 + rng.uniform(0.0, 0.15) * t / max(n - 1, 1)
    line_wear = 1.0 + spec.vib_drift_per_day * days_in
    vibration = spec.vibration_mm_s * tool * wear * line_wear * np.exp(ar1(rng, n, 0.6, 0.07))

    # Motor current: nominal, load from pressure and vibration, noise; plus jams (real events).
    current = (
        spec.current_a * (1 + rng.normal(0.0, 0.02))
        + 1.2 * (pressure - spec.pressure_sp_bar)
        + 0.8 * (vibration - spec.vibration_mm_s)
        + ar1(rng, n, 0.5, 0.12)
    )
    jam_rate_per_h = rng.gamma(0.6, 0.35)
    n_jams = int(rng.poisson(jam_rate_per_h * n / 60.0))
    for _ in range(n_jams):
        at = int(rng.integers(WARMUP_MINUTES, n - 3))
        length = int(rng.integers(1, 4))
        current[at : at + length] += rng.uniform(3.0, 6.0)
        vibration[at : at + length] *= rng.uniform(1.3, 1.8)

    # Quality depends on the true process, not on what the (possibly faulty) sensors report.
    steady = slice(WARMUP_MINUTES, None)
    drivers = {
        "temp_dev_c": float(np.mean(temp[steady]) - spec.temp_opt_c),
        "temp_std_c": float(np.std(temp[steady])),
        "pressure_std_bar": float(np.std(pressure[steady])),
        "vib_ratio": float(np.mean(vibration) / spec.vibration_mm_s),
        "jams_per_h": n_jams / (n / 60.0),
    }
    # Measurement noise of the instruments; faults are injected later, on the measured copy.
    measured = {
        "temperature_c": temp + rng.normal(0.0, 0.25, n),
        "pressure_bar": pressure + rng.normal(0.0, 0.01, n),
        "vibration_mm_s": vibration * np.exp(rng.normal(0.0, 0.03, n)),
        "motor_current_a": current + rng.normal(0.0, 0.08, n),
    }
    return Lot(measured=measured, drivers=drivers)


def roughness_um(rng: np.random.Generator, spec: LineSpec, d: dict[str, float]) -> float:
    """Surface roughness Ra (µm) of a lot from its true process drivers, with material noise."""
    log_ra = (
        np.log(spec.ra_base_um)
        + 0.010 * d["temp_dev_c"] ** 2
        + 0.25 * (d["temp_std_c"] - 0.75)
        + 3.0 * (d["pressure_std_bar"] - 0.055)
        + 1.1 * np.log(d["vib_ratio"])
        + 0.30 * d["jams_per_h"]
        + rng.normal(0.0, 0.15)
    )
    return float(np.exp(log_ra))


# --------------------------------------------------------------------------- faults


def inject_faults(rng: np.random.Generator, sensors: pd.DataFrame) -> pd.DataFrame:
    """Apply FAULT_PLAN to the measured columns of ``sensors`` in place; return the fault log."""
    records = []
    for plan in FAULT_PLAN:
        lot_rows = np.flatnonzero(sensors["lot"].to_numpy() == plan.lot)
        n = len(lot_rows)
        columns = list(SENSORS) if plan.sensor == "all" else [plan.sensor]
        if plan.kind == "missing":
            length = int(rng.integers(5, 31))
            first = int(rng.integers(WARMUP_MINUTES, n - length))
            idx = lot_rows[first : first + length]
            for col in columns:
                sensors.loc[idx, col] = np.nan
            spans = [(idx[0], idx[-1], "")]
        elif plan.kind == "stuck":
            length = int(rng.integers(45, 151))
            first = int(rng.integers(WARMUP_MINUTES, n - length))
            idx = lot_rows[first : first + length]
            value = sensors.at[idx[0], plan.sensor]
            sensors.loc[idx, plan.sensor] = value
            spans = [(idx[0], idx[-1], f"held at {value:.{DECIMALS[plan.sensor]}f}")]
        elif plan.kind == "spike":
            picks = np.sort(
                rng.choice(np.arange(WARMUP_MINUTES, n), int(plan.detail), replace=False)
            )
            spans = []
            for i in lot_rows[picks]:
                before = float(sensors.at[i, plan.sensor])
                if plan.sensor == "vibration_mm_s":
                    after = before * rng.uniform(5.0, 9.0)
                elif plan.sensor == "pressure_bar":
                    after = before + rng.choice([-1.0, 1.0]) * rng.uniform(1.5, 3.0)
                else:
                    after = before + rng.uniform(25.0, 60.0)
                sensors.at[i, plan.sensor] = after
                digits = DECIMALS[plan.sensor]
                spans.append((i, i, f"{before:.{digits}f} -> {after:.{digits}f}"))
        elif plan.kind == "offset":
            line = plan.lot.split("-")[0]
            first = lot_rows[int(rng.integers(n // 4, 3 * n // 4))]
            affected = np.flatnonzero(sensors["line"].to_numpy() == line)
            idx = affected[affected >= first]
            sensors.loc[idx, plan.sensor] += plan.detail
            spans = [(idx[0], idx[-1], f"{plan.detail:+.1f} on every later {line} sample")]
        else:
            raise ValueError(f"unknown fault kind {plan.kind!r}")
        for first_i, last_i, detail in spans:
            records.append(
                {
                    "kind": plan.kind,
                    "line": plan.lot.split("-")[0],
                    "lot": plan.lot,
                    "sensor": plan.sensor,
                    "start": sensors.at[first_i, "timestamp"],
                    "end": sensors.at[last_i, "timestamp"],
                    "n_samples": int(last_i - first_i + 1),
                    "detail": detail,
                }
            )
    return pd.DataFrame(records)


# --------------------------------------------------------------------------- plant


def make_plant(
    rng_sched: np.random.Generator, rng_proc: np.random.Generator, rng_fault: np.random.Generator
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Return (sensors, quality, faults) data frames, timestamps still as pandas Timestamps."""
    schedule = make_schedule(rng_sched)
    frames = []
    quality = []
    for row in schedule.itertuples(index=False):
        spec = LINES[row.line]
        days_in = (row.lot_start - PLANT_START) / pd.Timedelta(days=1)
        lot = simulate_lot(rng_proc, spec, row.minutes, days_in)
        stamps = pd.date_range(row.lot_start, periods=row.minutes, freq="min")
        frame = pd.DataFrame({"line": row.line, "lot": row.lot, "timestamp": stamps})
        for col in SENSORS:
            frame[col] = lot.measured[col]
        frames.append(frame)
        ra = round(roughness_um(rng_proc, spec, lot.drivers), 3)
        low, high = (int(h * 60) for h in INSPECTION_DELAY_H)
        delay = pd.Timedelta(minutes=int(rng_proc.integers(low, high + 1)))
        quality.append(
            {
                "line": row.line,
                "lot": row.lot,
                "lot_start": row.lot_start,
                "lot_end": row.lot_end,
                "inspected_at": row.lot_end + delay,
                "quality_value": ra,
                "passed": bool(ra <= RA_SPEC_UM),
            }
        )
    sensors = pd.concat(frames, ignore_index=True)
    sensors = sensors.sort_values(["line", "lot", "timestamp"], kind="stable", ignore_index=True)
    faults = inject_faults(rng_fault, sensors)
    for col in SENSORS:
        sensors[col] = sensors[col].round(DECIMALS[col])
    return sensors, pd.DataFrame(quality), faults


# --------------------------------------------------------------------------- run to failure


def make_degradation(rng: np.random.Generator) -> pd.DataFrame:
    """Run-to-failure cycles of N_MACHINES machines with an exponential health index."""
    frames = []
    start = FLEET_START
    for m in range(1, N_MACHINES + 1):
        life = int(rng.integers(LIFE_CYCLES[0], LIFE_CYCLES[1] + 1))
        cycle = np.arange(1, life + 1)
        # Damage 0 when new, 1 at failure; k sets how late and how sharply it bends upwards.
        k = rng.uniform(3.0, 6.5)
        damage = np.expm1(k * cycle / life) / np.expm1(k)

        # Load: piecewise-constant duty regimes (each held 5-40 cycles) plus a little jitter.
        load = np.empty(life)
        i = 0
        while i < life:
            hold = int(rng.integers(5, 41))
            load[i : i + hold] = rng.choice([40.0, 55.0, 70.0, 85.0, 100.0])
            i += hold
        load = np.clip(load + rng.normal(0.0, 2.5, life), 20.0, 105.0)

        gaps = rng.integers(CYCLE_MINUTES[0], CYCLE_MINUTES[1] + 1, life)
        stamps = start + pd.to_timedelta(np.cumsum(gaps) - gaps[0], unit="min")
        hour = (stamps.hour + stamps.minute / 60.0).to_numpy()
        ambient = 21.0 + 3.5 * np.sin(2 * np.pi * (hour - 9.0) / 24.0) + rng.normal(0, 0.6, life)

        v0 = rng.uniform(1.4, 2.4)
        i0 = rng.uniform(9.0, 13.0)
        vibration = (v0 * (0.7 + 0.006 * load) + 5.5 * damage**1.2) * np.exp(
            rng.normal(0.0, 0.08 + 0.06 * damage, life)
        )
        current = i0 * (0.45 + 0.0055 * load) + 2.8 * damage + rng.normal(0.0, 0.25, life)
        bearing = ambient + 14.0 + 0.22 * load + 28.0 * damage**1.5 + ar1(rng, life, 0.7, 1.2)
        frames.append(
            pd.DataFrame(
                {
                    "machine": f"M{m:02d}",
                    "cycle": cycle,
                    "timestamp": stamps,
                    "load_pct": load.round(1),
                    "ambient_temp_c": ambient.round(2),
                    "vibration_mm_s": vibration.round(3),
                    "motor_current_a": current.round(2),
                    "bearing_temp_c": bearing.round(2),
                    "rul_cycles": life - cycle,
                }
            )
        )
        # The next machine is installed 2-6 days after this one (staggered, overlapping runs).
        start = start + pd.Timedelta(
            days=int(rng.integers(2, 7)), minutes=int(rng.integers(0, 600))
        )
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- output


def write_csv(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` as plain CSV with fixed line endings and empty cells for NaN."""
    frame = frame.copy()
    for col in frame.columns:
        if isinstance(frame[col].dtype, pd.DatetimeTZDtype):
            frame[col] = iso_utc(frame[col]).to_numpy()
    frame.to_csv(path, index=False, lineterminator="\n", na_rep="")
    return path


def generate(out_dir: Path, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    """Generate every file into ``out_dir`` (created if needed); return name -> path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # Independent streams: changing one part of the generator leaves the others unchanged.
    ss_sched, ss_proc, ss_fault, ss_deg = np.random.SeedSequence(seed).spawn(4)
    sensors, quality, faults = make_plant(
        np.random.default_rng(ss_sched),
        np.random.default_rng(ss_proc),
        np.random.default_rng(ss_fault),
    )
    degradation = make_degradation(np.random.default_rng(ss_deg))
    return {
        "sensors": write_csv(sensors, out_dir / "sensors.csv"),
        "quality": write_csv(quality, out_dir / "quality.csv"),
        "faults": write_csv(faults, out_dir / "faults.csv"),
        "degradation": write_csv(degradation, out_dir / "degradation.csv"),
    }


# --------------------------------------------------------------------------- defect patches

DEFECT_CLASSES = ("none", "scratch", "pit", "inclusion", "crack")
DEFECT_LOTS = 10  # lots D01..D10, 20 patches each
DEFECT_PER_LOT = 20
PATCH = 64  # side of a patch in pixels
DEFECT_START = pd.Timestamp("2026-03-02T08:00:00Z")


def write_png(arr: np.ndarray, path: Path, *, bits: int = 8) -> Path:
    """Write a grey uint8 image as PNG with stored (uncompressed) deflate blocks.

    Stored blocks make the bytes independent of the zlib build, so the files are byte-identical
    on every machine. ``bits=1`` packs a 0/1 mask (1 bit per pixel).
    """
    h, w = arr.shape
    if bits == 1:
        rows = np.packbits(arr.astype(bool), axis=1)  # (h, ceil(w/8))
    else:
        rows = arr.astype(np.uint8)
    raw = b"".join(b"\x00" + row.tobytes() for row in rows)  # filter type 0 per row
    blocks, step = [], 65535
    for i in range(0, max(len(raw), 1), step):
        chunk = raw[i : i + step]
        final = 1 if i + step >= len(raw) else 0
        blocks.append(struct.pack("<BHH", final, len(chunk), 0xFFFF ^ len(chunk)) + chunk)
    data = b"\x78\x01" + b"".join(blocks) + struct.pack(">I", zlib.adler32(raw))

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0)  # grey, no interlace
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)
    path.write_bytes(png + chunk(b"IEND", b""))
    return path


def _smooth(x: np.ndarray, kx: int, ky: int) -> np.ndarray:
    """Separable box blur with wrap-around (``kx`` along rows, ``ky`` along columns)."""
    for k, axis in ((kx, 1), (ky, 0)):
        if k > 1:
            x = sum(np.roll(x, s, axis=axis) for s in range(-(k // 2), k - k // 2)) / k
    return x


def surface(rng: np.random.Generator, level: float) -> np.ndarray:
    """Rolled-steel texture: streaks along the rolling direction (x), grain, lighting."""
    n = PATCH
    streaks = _smooth(rng.normal(0, 1, (n, n)), 15, 1)
    streaks = streaks / streaks.std() * rng.uniform(3.0, 7.0)
    grain = _smooth(rng.normal(0, 1, (n, n)), 2, 2) * rng.uniform(2.0, 5.0)
    yy, xx = np.mgrid[0:n, 0:n] / n
    gx, gy = rng.uniform(-8, 8, 2)
    return level + streaks + grain + gx * (xx - 0.5) + gy * (yy - 0.5)


def _line_mask(pts: np.ndarray, width: float) -> np.ndarray:
    """Pixels within ``width / 2`` of the polyline through ``pts`` ((k, 2) as x, y)."""
    yy, xx = np.mgrid[0:PATCH, 0:PATCH].astype(float)
    dist = np.full((PATCH, PATCH), np.inf)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        dx, dy = x1 - x0, y1 - y0
        t = np.clip(((xx - x0) * dx + (yy - y0) * dy) / max(dx * dx + dy * dy, 1e-9), 0, 1)
        dist = np.minimum(dist, np.hypot(xx - (x0 + t * dx), yy - (y0 + t * dy)))
    return dist <= width / 2


def defect(rng: np.random.Generator, kind: str) -> tuple[np.ndarray, np.ndarray, float]:
    """A defect's intensity profile (negative = darker), its mask and its size in pixels."""
    n = PATCH
    yy, xx = np.mgrid[0:n, 0:n].astype(float)
    cx, cy = rng.uniform(14, n - 14, 2)
    if kind == "scratch":  # thin, straight, along the rolling direction (within 20 degrees)
        length, angle = rng.uniform(14, 50), np.deg2rad(rng.uniform(-20, 20))
        d = np.array([np.cos(angle), np.sin(angle)]) * length / 2
        centre = np.array([cx, cy])
        mask = _line_mask(np.stack([centre - d, centre + d]), rng.uniform(1.0, 2.5))
        sign, size = rng.choice([-1.0, 1.0]), length
    elif kind == "pit":  # small round dark spot
        r = rng.uniform(1.5, 5.0)
        mask = np.hypot(xx - cx, yy - cy) <= r
        sign, size = -1.0, 2 * r
    elif kind == "inclusion":  # elongated irregular blob along the rolling direction
        a, b = rng.uniform(4, 12), rng.uniform(1.5, 4.5)
        wobble = 1 + 0.25 * _smooth(rng.normal(0, 1, (n, n)), 5, 5)
        mask = ((xx - cx) / a) ** 2 + ((yy - cy) / b) ** 2 <= wobble
        sign, size = -1.0, 2 * a
    elif kind == "crack":  # jagged, mostly across the rolling direction, sometimes branched
        steps = rng.integers(6, 12)
        heading = np.deg2rad(90 + rng.uniform(-30, 30))
        pts = [np.array([cx, cy])]
        for _ in range(steps):
            heading += rng.normal(0, 0.5)
            pts.append(pts[-1] + 3.5 * np.array([np.cos(heading), np.sin(heading)]))
        pts_arr = np.array(pts) - (np.array(pts[-1]) - pts[0]) / 2
        mask = _line_mask(pts_arr, rng.uniform(1.0, 2.0))
        if rng.random() < 0.4:
            k = int(rng.integers(1, steps))
            drift = np.array([2.5, 0.0])
            twig = np.cumsum(rng.normal(0, 1.5, (4, 2)) + drift, axis=0) + pts_arr[k]
            mask |= _line_mask(np.vstack([pts_arr[k], twig]), 1.0)
        sign = -1.0
        size = float(np.ptp(pts_arr, axis=0).max())
    else:
        raise ValueError(f"unknown defect kind {kind!r}")
    profile = _smooth(mask.astype(float), 2, 2) * 0.5 + mask * 0.5  # soft edge
    return sign * profile, mask, float(size)


def make_defect_patches(
    rng: np.random.Generator,
) -> tuple[list[np.ndarray], list[np.ndarray], pd.DataFrame]:
    """200 patches: 10 lots x 20, classes balanced within each lot, contrast varied."""
    images, masks, rows = [], [], []
    for lot in range(DEFECT_LOTS):
        lot_id = f"D{lot + 1:02d}"
        level = rng.uniform(90, 150)  # each coil has its own brightness
        start = (
            DEFECT_START
            + pd.Timedelta(hours=7 * lot)
            + pd.Timedelta(minutes=int(rng.integers(0, 60)))
        )
        kinds = np.repeat(DEFECT_CLASSES, DEFECT_PER_LOT // len(DEFECT_CLASSES))
        rng.shuffle(kinds)
        for j, kind in enumerate(kinds):
            img = surface(rng, level)
            if kind == "none":
                mask, size, contrast = np.zeros((PATCH, PATCH), bool), 0.0, 0.0
            else:
                profile, mask, size = defect(rng, str(kind))
                contrast = float(rng.uniform(12, 70))
                img = img + contrast * profile
            img = img + rng.normal(0, 1.5, img.shape)  # sensor noise
            images.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
            masks.append(mask)
            i = len(rows)
            rows.append(
                {
                    "path": f"images/{i:03d}.png",
                    "mask_path": f"masks/{i:03d}.png",
                    "label": str(kind),
                    "lot": lot_id,
                    "timestamp": start + pd.Timedelta(minutes=3 * j),
                    "defect_px": round(size, 1),
                    "contrast": round(contrast, 1),
                    "mask_pixels": int(mask.sum()),
                }
            )
    return images, masks, pd.DataFrame(rows)


def generate_defects(out_dir: Path, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    """Write ``out_dir/defects/`` (images, masks, manifest.csv); return name -> path.

    Uses its own random stream (``SeedSequence(seed)``'s fifth child), so the CSV files of
    :func:`generate` are unchanged by it.
    """
    folder = Path(out_dir) / "defects"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "masks").mkdir(parents=True, exist_ok=True)
    ss = np.random.SeedSequence(seed).spawn(5)[4]
    images, masks, manifest = make_defect_patches(np.random.default_rng(ss))
    out = {}
    for i, (img, mask) in enumerate(zip(images, masks, strict=True)):
        out[f"image{i:03d}"] = write_png(img, folder / manifest.path[i])
        out[f"mask{i:03d}"] = write_png(mask, folder / manifest.mask_path[i], bits=1)
    out["manifest"] = write_csv(manifest, folder / "manifest.csv")
    return out


# --------------------------------------------------------------------------- multi-regime fleet

REGIME_START = pd.Timestamp("2026-02-02T00:00:00Z")
N_REGIME_TRAIN = 24  # run-to-failure machines C01..C24
N_REGIME_TEST = 20  # machines C25..C44, cut off before failure
REGIME_SHORT = 2  # test machines with fewer than 30 cycles (shorter than a 30-cycle window)
REGIME_LIFE = (130, 260)  # inclusive range of cycles to failure
REGIME_CYCLE_MINUTES = (200, 280)  # inclusive range of minutes between two cycles

# The six operating conditions (as in C-MAPSS FD002): altitude (kft), Mach number, throttle
# angle (TRA). Each cycle runs in one of them, drawn at random, so consecutive cycles jump.
CONDITIONS = (
    (0.0, 0.00, 100.0),
    (10.0, 0.25, 100.0),
    (20.0, 0.70, 100.0),
    (25.0, 0.62, 60.0),
    (35.0, 0.84, 100.0),
    (42.0, 0.84, 100.0),
)
REGIME_SENSORS = ("t24", "t30", "t50", "p30", "nc", "phi")
# Sensor level in each condition (rows: CONDITIONS, columns: REGIME_SENSORS).
REGIME_LEVELS = np.array(
    [
        [642.5, 1589.0, 1407.0, 553.5, 9060.0, 521.5],
        [604.9, 1497.0, 1304.0, 394.2, 8995.0, 371.1],
        [537.3, 1262.0, 1051.0, 175.4, 8340.0, 164.6],
        [555.4, 1354.0, 1127.0, 194.6, 8007.0, 183.2],
        [549.7, 1348.0, 1121.0, 138.1, 8068.0, 129.9],
        [536.0, 1255.0, 1045.0, 132.0, 8060.0, 122.0],
    ]
)
REGIME_NOISE = np.array([0.45, 4.5, 7.0, 0.55, 5.5, 0.5])  # within-condition noise (std)
# Shift at failure in noise stds (sign: direction of wear); scaled by the condition's level.
REGIME_WEAR = np.array([3.5, 3.5, 4.0, -3.5, 2.5, -3.5])
REGIME_DECIMALS = (2, 2, 2, 2, 1, 2)


def _regime_machine(
    rng: np.random.Generator, name: str, life: int, start: pd.Timestamp
) -> pd.DataFrame:
    """All ``life`` cycles of one machine, run to failure (the caller may cut it short)."""
    cycle = np.arange(1, life + 1)
    d0 = rng.uniform(0.0, 0.15)  # initial wear, unknown to the model
    k = rng.uniform(3.0, 6.0)
    damage = d0 + (1.0 - d0) * np.expm1(k * cycle / life) / np.expm1(k)
    cond = rng.integers(0, len(CONDITIONS), life)
    settings = np.array(CONDITIONS)[cond]  # (life, 3)
    settings[:, 0] += rng.normal(0.0, 0.002, life)
    settings[:, 1] += rng.normal(0.0, 0.0003, life)
    offset = rng.normal(0.0, 0.4, len(REGIME_SENSORS)) * REGIME_NOISE  # build tolerance
    level = REGIME_LEVELS[cond]  # (life, sensors)
    wear = REGIME_WEAR * REGIME_NOISE * level / REGIME_LEVELS[0]  # bigger where levels are
    noise = rng.normal(0.0, 1.0, (life, len(REGIME_SENSORS))) * REGIME_NOISE
    values = level + offset + wear * damage[:, None] + noise
    gaps = rng.integers(REGIME_CYCLE_MINUTES[0], REGIME_CYCLE_MINUTES[1] + 1, life)
    stamps = start + pd.to_timedelta(np.cumsum(gaps) - gaps[0], unit="min")
    frame = pd.DataFrame(
        {
            "machine": name,
            "cycle": cycle,
            "timestamp": stamps,
            "setting_1": settings[:, 0].round(4),
            "setting_2": settings[:, 1].round(4),
            "setting_3": settings[:, 2].round(1),
        }
    )
    for j, col in enumerate(REGIME_SENSORS):
        frame[col] = values[:, j].round(REGIME_DECIMALS[j])
    frame["rul_cycles"] = life - cycle
    return frame


def make_regime_fleet(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(train, test, test_rul): run-to-failure machines, and others cut off before failure."""
    train, test, truth = [], [], []
    start = REGIME_START
    short = set(rng.choice(N_REGIME_TEST, REGIME_SHORT, replace=False).tolist())
    for m in range(N_REGIME_TRAIN + N_REGIME_TEST):
        name = f"C{m + 1:02d}"
        life = int(rng.integers(REGIME_LIFE[0], REGIME_LIFE[1] + 1))
        frame = _regime_machine(rng, name, life, start)
        if m < N_REGIME_TRAIN:
            train.append(frame)
        else:
            # observed cycles: 12-25 for the short machines, else 31 up to 10 before failure
            low, high = (12, 25) if m - N_REGIME_TRAIN in short else (31, life - 10)
            seen = int(rng.integers(low, high + 1))
            test.append(frame.iloc[:seen].drop(columns="rul_cycles"))
            truth.append({"machine": name, "rul_cycles": life - seen})
        start = start + pd.Timedelta(
            days=int(rng.integers(1, 4)), minutes=int(rng.integers(0, 600))
        )
    return (
        pd.concat(train, ignore_index=True),
        pd.concat(test, ignore_index=True),
        pd.DataFrame(truth),
    )


def generate_regimes(out_dir: Path, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    """Write ``out_dir/regimes/`` (train.csv, test.csv, test_rul.csv); return name -> path.

    Uses its own random stream (``SeedSequence(seed)``'s sixth child), so no other file
    changes with it.
    """
    folder = Path(out_dir) / "regimes"
    folder.mkdir(parents=True, exist_ok=True)
    ss = np.random.SeedSequence(seed).spawn(7)[5]
    train, test, truth = make_regime_fleet(np.random.default_rng(ss))
    return {
        "train": write_csv(train, folder / "train.csv"),
        "test": write_csv(test, folder / "test.csv"),
        "test_rul": write_csv(truth, folder / "test_rul.csv"),
    }


# --------------------------------------------------------------------------- compressed PNG

# Order in which deflate sends the code lengths of the code-length alphabet (RFC 1951 3.2.7).
_CL_ORDER = (16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)


def _code_lengths(counts: np.ndarray, limit: int) -> np.ndarray:
    """Huffman code length of every symbol with a nonzero count, at most ``limit`` bits.

    Ties are broken by symbol order, so the code depends on the counts alone. When the tree is
    too deep the counts are halved (never below 1) and it is built again.
    """
    counts = counts.astype(np.int64).copy()
    used = [int(s) for s in np.flatnonzero(counts)]
    if len(used) == 1:  # a code needs two symbols: add a never-used partner
        used.append(1 if used[0] == 0 else 0)
        counts[used[1]] = 1
    while True:
        heap = [(int(counts[s]), i, (s,)) for i, s in enumerate(used)]
        heapq.heapify(heap)
        lengths = np.zeros(counts.size, dtype=np.int64)
        tie = len(heap)
        while len(heap) > 1:
            w1, _, a = heapq.heappop(heap)
            w2, _, b = heapq.heappop(heap)
            lengths[list(a + b)] += 1
            heapq.heappush(heap, (w1 + w2, tie, a + b))
            tie += 1
        if lengths.max() <= limit:
            return lengths
        counts[used] = (counts[used] + 1) // 2


def _reversed_codes(lengths: np.ndarray) -> np.ndarray:
    """Canonical Huffman codes (RFC 1951 3.2.2), bit-reversed for the LSB-first stream."""
    bl_count = np.bincount(lengths, minlength=16)
    bl_count[0] = 0
    next_code, code = [0] * 16, 0
    for bits in range(1, 16):
        code = (code + int(bl_count[bits - 1])) << 1
        next_code[bits] = code
    out = np.zeros(lengths.size, dtype=np.int64)
    for sym, n in enumerate(lengths.tolist()):
        if n:
            out[sym] = int(f"{next_code[n]:0{n}b}"[::-1], 2)
            next_code[n] += 1
    return out


def _pack_bits(values: np.ndarray, widths: np.ndarray) -> bytes:
    """Write each value in its width of bits, least significant bit first (deflate order)."""
    ends = np.cumsum(widths)
    starts = ends - widths
    bits = np.zeros(int(ends[-1]) + (-int(ends[-1]) % 8), dtype=np.uint8)
    for j in range(int(widths.max())):
        has = widths > j
        bits[starts[has] + j] = (values[has] >> j) & 1
    return np.packbits(bits, bitorder="little").tobytes()


def deflate_huffman(raw: bytes) -> bytes:
    """zlib stream of ``raw`` in one dynamic-Huffman deflate block of literals (no matches).

    Our own few lines instead of ``zlib.compress``: zlib builds (zlib, zlib-ng) may emit
    different bytes for the same input, these bytes are the same everywhere. Smooth surfaces
    after PNG's Sub filter shrink to about a third.
    """
    data = np.frombuffer(raw, dtype=np.uint8)
    lit_counts = np.bincount(data, minlength=257)
    lit_counts[256] = 1  # end of block
    lit_len = _code_lengths(lit_counts, 15)
    lit_code = _reversed_codes(lit_len)
    lengths = np.r_[lit_len, 1]  # 257 literal/length codes, then one unused distance code
    cl_len = _code_lengths(np.bincount(lengths, minlength=19), 7)
    cl_code = _reversed_codes(cl_len)
    head_v = [1, 2, 0, 0, 15] + [int(cl_len[i]) for i in _CL_ORDER]
    head_w = [1, 2, 5, 5, 4] + [3] * 19  # BFINAL, BTYPE=2, HLIT, HDIST, HCLEN, code lengths
    symbols = np.r_[data.astype(np.int64), 256]
    values = np.r_[head_v, cl_code[lengths], lit_code[symbols]]
    widths = np.r_[head_w, cl_len[lengths], lit_len[symbols]]
    body = _pack_bits(values.astype(np.int64), widths.astype(np.int64))
    return b"\x78\x01" + body + struct.pack(">I", zlib.adler32(raw))


def write_png_compressed(arr: np.ndarray, path: Path, *, bits: int = 8) -> Path:
    """Write a grey uint8 image (Sub filter) or a 0/1 mask (``bits=1``) as a compressed PNG."""
    h, w = arr.shape
    if bits == 1:
        rows = np.packbits(arr.astype(bool), axis=1)  # (h, ceil(w/8)), filter None
        raw = np.hstack([np.zeros((h, 1), np.uint8), rows])
    else:
        x = arr.astype(np.int16)
        sub = (x - np.pad(x, ((0, 0), (1, 0)))[:, :-1]) % 256  # PNG filter 1: minus the left
        raw = np.hstack([np.ones((h, 1), np.int16), sub]).astype(np.uint8)
    data = deflate_huffman(raw.tobytes())

    def chunk(kind: bytes, body: bytes) -> bytes:
        crc = zlib.crc32(kind + body)
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", w, h, bits, 0, 0, 0, 0)  # grey, no interlace
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", data)
    path.write_bytes(png + chunk(b"IEND", b""))
    return path


# --------------------------------------------------------------------------- inspection photos

PHOTO_SIZE = (360, 900)  # height, width in pixels
PHOTO_COILS = 4  # lots: coils K1..K4, photos taken one after another along each coil
PHOTOS_PER_COIL = 4
PHOTO_PIT_PHOTOS = 5  # photos with pitting: one in every coil and one more
PHOTO_START = pd.Timestamp("2026-03-09T07:00:00Z")


def _blur(x: np.ndarray, k: int, axis: int) -> np.ndarray:
    """Box blur of width ``k`` along ``axis`` with wrap-around (running sums)."""
    if k <= 1:
        return x
    pad = [(0, 0), (0, 0)]
    pad[axis] = (k // 2 + 1, k - k // 2 - 1)
    c = np.cumsum(np.pad(x, pad, mode="wrap"), axis=axis)
    n = x.shape[axis]
    hi = np.take(c, np.arange(k, k + n), axis=axis)
    lo = np.take(c, np.arange(0, n), axis=axis)
    return (hi - lo) / k


def photo_surface(rng: np.random.Generator, level: float) -> np.ndarray:
    """A full-size photo of rolled steel: streaks along the rolling direction (x), fine grain,
    a few faint stains (harmless, not defects), uneven lighting and a little sensor noise."""
    h, w = PHOTO_SIZE
    streaks = _blur(rng.normal(0.0, 1.0, (h, w)), 81, 1)
    streaks = streaks / streaks.std() * rng.uniform(2.5, 4.5)
    grain = _blur(_blur(rng.normal(0.0, 1.0, (h, w)), 2, 0), 7, 1)  # elongated along x
    grain = grain / grain.std() * 1.2
    yy, xx = np.mgrid[0:h, 0:w] / np.array([h, w])[:, None, None]
    gx, gy = rng.uniform(-10, 10, 2)
    light = gx * (xx - 0.5) + gy * (yy - 0.5) - 12.0 * ((xx - 0.5) ** 2 + (yy - 0.5) ** 2)
    stains = np.zeros((h, w))
    for _ in range(int(rng.integers(1, 4))):
        cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(20, 70)
        blob = np.exp(-((yy * h - cy) ** 2 + (xx * w - cx) ** 2) / (2 * r * r))
        stains += rng.choice([-1.0, 1.0]) * rng.uniform(3.0, 7.0) * blob
    return level + streaks + grain + light + stains


def pit_outline(rng: np.random.Generator) -> np.ndarray:
    """A pit as an irregular 10-gon, ``(10, 2)`` ``(x, y)`` rounded to 0.1 px (what an
    annotator's labelme polygon would hold)."""
    h, w = PHOTO_SIZE
    cx, cy = rng.uniform(10, w - 10), rng.uniform(10, h - 10)
    r = rng.uniform(2.5, 5.5)
    angles = np.arange(10) * 2 * np.pi / 10 + rng.uniform(-0.2, 0.2, 10)
    radii = r * rng.uniform(0.8, 1.15, 10)
    pts = np.stack([cx + radii * np.cos(angles), cy + radii * np.sin(angles)], axis=1)
    return pts.round(1)


def rasterise_outline(points: np.ndarray, mask: Image.Image) -> None:
    """Fill a polygon into ``mask`` as :func:`mfgtx.images.rasterise` does: every vertex
    floored to the pixel that holds it, then polygon and outline filled by Pillow."""
    xy = [(int(np.floor(x)), int(np.floor(y))) for x, y in points]
    ImageDraw.Draw(mask).polygon(xy, fill=1, outline=1)


def make_inspection_photos(
    rng: np.random.Generator, coils: int = PHOTO_COILS
) -> tuple[list[np.ndarray], list[np.ndarray], list[list[np.ndarray]], pd.DataFrame]:
    """Photos, masks, pit outlines per photo, and the manifest rows, of ``coils`` coils
    (more than the sample's 4 for a benchmark that needs more photos: the same process, the
    same share of pitted photos)."""
    h, w = PHOTO_SIZE
    n = coils * PHOTOS_PER_COIL
    pitted = {c * PHOTOS_PER_COIL + int(rng.integers(0, PHOTOS_PER_COIL)) for c in range(coils)}
    while len(pitted) < round(PHOTO_PIT_PHOTOS * coils / PHOTO_COILS):
        pitted.add(int(rng.integers(0, n)))
    photos, masks, outlines, rows = [], [], [], []
    for coil in range(coils):
        level = rng.uniform(95, 150)
        start = PHOTO_START + pd.Timedelta(hours=6 * coil, minutes=int(rng.integers(0, 90)))
        for j in range(PHOTOS_PER_COIL):
            i = coil * PHOTOS_PER_COIL + j
            img = photo_surface(rng, level)
            mask_img = Image.new("L", (w, h), 0)
            pits = []
            if i in pitted:
                for _ in range(int(rng.integers(1, 4))):
                    pts = pit_outline(rng)
                    rasterise_outline(pts, mask_img)
                    pits.append(pts)
            mask = np.asarray(mask_img, dtype=bool)
            if pits:
                soft = _blur(_blur(mask.astype(float), 3, 0), 3, 1)
                img = img - rng.uniform(18, 60) * (0.5 * mask + 0.5 * soft)
            img = img + rng.normal(0.0, 0.6, img.shape)  # sensor noise
            photos.append(np.clip(np.rint(img), 0, 255).astype(np.uint8))
            masks.append(mask)
            outlines.append(pits)
            rows.append(
                {
                    "path": f"images/P{i + 1:02d}.png",
                    "lot": f"K{coil + 1:0{len(str(coils))}d}",
                    "timestamp": start + pd.Timedelta(minutes=4 * j),
                    "pits": len(pits),
                    "mask_pixels": int(mask.sum()),
                }
            )
    return photos, masks, outlines, pd.DataFrame(rows)


def labelme_json(outlines: list[np.ndarray], image_name: str) -> str:
    """The labelme file of one photo: one ``pit`` polygon per outline."""
    h, w = PHOTO_SIZE
    shapes = [
        {
            "label": "pit",
            "points": [[float(x), float(y)] for x, y in pts],
            "group_id": None,
            "description": "",
            "shape_type": "polygon",
            "flags": {},
        }
        for pts in outlines
    ]
    doc = {
        "version": "5.5.0",
        "flags": {},
        "shapes": shapes,
        "imagePath": image_name,
        "imageData": None,
        "imageHeight": h,
        "imageWidth": w,
    }
    return json.dumps(doc, indent=2) + "\n"


def generate_inspection(
    out_dir: Path, seed: int = DEFAULT_SEED, *, coils: int = PHOTO_COILS
) -> dict[str, Path]:
    """Write ``out_dir/inspection/`` (photos, PNG masks, labelme files, manifest.csv) of
    ``coils`` coils (the sample: 4).

    Uses its own random stream (``SeedSequence(seed)``'s seventh child), so no other file
    changes with it.
    """
    folder = Path(out_dir) / "inspection"
    (folder / "images").mkdir(parents=True, exist_ok=True)
    (folder / "masks").mkdir(parents=True, exist_ok=True)
    ss = np.random.SeedSequence(seed).spawn(7)[6]
    photos, masks, outlines, manifest = make_inspection_photos(np.random.default_rng(ss), coils)
    out = {}
    for i, (img, mask, pits) in enumerate(zip(photos, masks, outlines, strict=True)):
        name = Path(manifest.path[i]).name
        out[f"photo{i:02d}"] = write_png_compressed(img, folder / manifest.path[i])
        out[f"mask{i:02d}"] = write_png_compressed(mask, folder / "masks" / name, bits=1)
        labelme = folder / "images" / Path(name).with_suffix(".json")
        labelme.write_text(labelme_json(pits, name), encoding="utf-8", newline="\n")
        out[f"labelme{i:02d}"] = labelme
    out["manifest"] = write_csv(manifest, folder / "manifest.csv")
    return out


# --------------------------------------------------------------------------- finishing stand

FINISH_START = pd.Timestamp("2026-03-23T06:00:00Z")
N_COILS = 200  # coils F001..F200, one after another on one finishing stand
COIL_SAMPLES = 64  # one reading every 10 s: about 11 min a coil
COIL_GAP_MIN = (2, 6)  # inclusive range of minutes between two coils (threading the next)
STRIP_SPEEDS = (8.0, 10.0, 12.0, 14.0)  # m/s, the coil's rolling speed set-point
BEAT_DEPTH = (0.20, 0.35)  # amplitude of the vibration beat, relative to its level
CHATTER_PERIOD = (5.8, 6.2)  # samples (10 s each) per beat: the roll stack's natural frequency
WANDER_STEP = (0.02, 0.50)  # turns of the beat's phase per sample on a healthy stand


def vibration_beat(rng: np.random.Generator, n: int, chatter: bool) -> np.ndarray:
    """Relative beat of the stand's vibration level, ``1 + depth * sin(phase)``.

    The work roll and the backup roll turn at slightly different speeds, so the bearing's
    vibration level rises and falls as they pass each other. On a healthy stand the strip's
    tension keeps changing the slip between them, so the beat is irregular: the phase moves
    by a fresh random step every sample (:data:`WANDER_STEP`). When the stand **chatters** the
    rolls lock into a self-excited oscillation and the beat turns regular: the phase moves by
    the same step every sample (one beat every :data:`CHATTER_PERIOD` samples). Depth, start
    phase and the range of steps are drawn alike in both cases, so a window's mean, std, min,
    max, last value and slope of the vibration are distributed alike: only the regularity over
    time, a shape, tells a chattering coil apart.
    """
    depth = rng.uniform(*BEAT_DEPTH)
    if chatter:
        steps = np.full(n, 2 * np.pi / rng.uniform(*CHATTER_PERIOD))
    else:
        steps = rng.uniform(2 * np.pi * WANDER_STEP[0], 2 * np.pi * WANDER_STEP[1], n)
    return 1.0 + depth * np.sin(rng.uniform(0, 2 * np.pi) + np.cumsum(steps))


def chatter_probability(speed: float) -> float:
    """Chatter is likelier the faster the strip runs: 15 % at 8 m/s to 55 % at 14 m/s."""
    return 0.15 + 0.40 * (speed - STRIP_SPEEDS[0]) / (STRIP_SPEEDS[-1] - STRIP_SPEEDS[0])


def make_finishing(rng: np.random.Generator) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(log, inspection): the stand's 10-s log of every coil, and each coil's inspection."""
    frames, rows = [], []
    start = FINISH_START
    n = COIL_SAMPLES
    for c in range(N_COILS):
        coil = f"F{c + 1:03d}"
        speed_sp = float(rng.choice(STRIP_SPEEDS))
        chatter = bool(rng.random() < chatter_probability(speed_sp))
        speed = speed_sp * (1 + rng.normal(0.0, 0.004)) + ar1(rng, n, 0.8, 0.03)
        level = (1.2 + 0.08 * speed_sp) * rng.lognormal(0.0, 0.15)  # bearing, speed, roll
        noise = np.exp(ar1(rng, n, 0.5, 0.04) + rng.normal(0.0, 0.02, n))
        vibration = level * vibration_beat(rng, n, chatter) * noise
        stamps = start + pd.to_timedelta(10 * np.arange(n), unit="s")
        frames.append(
            pd.DataFrame(
                {
                    "coil": coil,
                    "timestamp": stamps,
                    "strip_speed_m_s": speed.round(2),
                    "vibration_mm_s": vibration.round(3),
                }
            )
        )
        end = stamps[-1] + pd.Timedelta(seconds=10)
        rows.append(
            {
                "coil": coil,
                "coil_start": start,
                "coil_end": end,
                "inspected_at": end + pd.Timedelta(minutes=int(rng.integers(20, 61))),
                "chatter_marks": chatter,
                "passed": not chatter,
            }
        )
        start = end + pd.Timedelta(minutes=int(rng.integers(COIL_GAP_MIN[0], COIL_GAP_MIN[1] + 1)))
    return pd.concat(frames, ignore_index=True), pd.DataFrame(rows)


def generate_finishing(out_dir: Path, seed: int = DEFAULT_SEED) -> dict[str, Path]:
    """Write ``out_dir/finishing/`` (log.csv, inspection.csv); return name -> path.

    Uses its own random stream (``SeedSequence(seed)``'s eighth child), so no other file
    changes with it.
    """
    folder = Path(out_dir) / "finishing"
    folder.mkdir(parents=True, exist_ok=True)
    ss = np.random.SeedSequence(seed).spawn(8)[7]
    log, inspection = make_finishing(np.random.default_rng(ss))
    return {
        "log": write_csv(log, folder / "log.csv"),
        "inspection": write_csv(inspection, folder / "inspection.csv"),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, help="random seed")
    parser.add_argument(
        "--inspection-coils", type=int, default=None, metavar="N",
        help="write only OUT/inspection, with N coils of 4 photos (benchmarks/inspection.py)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.inspection_coils is not None:
        files = generate_inspection(args.out, args.seed, coils=args.inspection_coils)
        size = sum(p.stat().st_size for p in files.values())
        print(f"inspection   {args.out / 'inspection'} ({len(files)} files, {size / 1024:.0f} KiB)")
        return 0
    for name, path in generate(args.out, args.seed).items():
        print(f"{name:12s} {path} ({path.stat().st_size / 1024:.0f} KiB)")
    defects = generate_defects(args.out, args.seed)
    size = sum(p.stat().st_size for p in defects.values())
    folder = defects["manifest"].parent
    print(f"{'defects':12s} {folder} ({len(defects)} files, {size / 1024:.0f} KiB)")
    for name, files in (
        ("regimes", generate_regimes(args.out, args.seed)),
        ("inspection", generate_inspection(args.out, args.seed)),
        ("finishing", generate_finishing(args.out, args.seed)),
    ):
        size = sum(p.stat().st_size for p in files.values())
        print(f"{name:12s} {args.out / name} ({len(files)} files, {size / 1024:.0f} KiB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
