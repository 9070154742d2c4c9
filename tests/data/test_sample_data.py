"""The committed sample plant: reproducible from its generator and readable by mfgtx.data."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from mfgtx.data import ColumnMap, make_windows, read_table

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
FILES = ("sensors.csv", "quality.csv", "faults.csv", "degradation.csv")


def _generator():
    spec = importlib.util.spec_from_file_location("sample_data_generate", SAMPLE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_committed_files_are_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    written = _generator().generate(tmp_path)
    assert sorted(p.name for p in written.values()) == sorted(FILES)
    for name in FILES:
        ours = hashlib.sha256((tmp_path / name).read_bytes()).hexdigest()
        committed = hashlib.sha256((SAMPLE / name).read_bytes()).hexdigest()
        assert ours == committed, f"{name} differs from generate.py output: regenerate it"


def test_another_seed_gives_other_data(tmp_path: Path) -> None:
    _generator().generate(tmp_path, seed=7)
    assert (tmp_path / "sensors.csv").read_bytes() != (SAMPLE / "sensors.csv").read_bytes()


def quality_table():
    sensors = pd.read_csv(SAMPLE / "sensors.csv", dtype={"lot": str})
    quality = pd.read_csv(SAMPLE / "quality.csv", dtype={"lot": str})
    merged = sensors.merge(quality[["lot", "quality_value", "passed", "inspected_at"]], on="lot")
    cols = ColumnMap(
        lot="lot",
        time="timestamp",
        keys="line",
        targets=("passed", "quality_value"),
        label_time="inspected_at",
    )
    return read_table(merged, cols)


def test_sensor_log_reads_cleanly_with_gaps_kept() -> None:
    table = quality_table()
    assert table.notes == ()
    assert table.sensors == ("temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a")
    assert len(table.lots) == 36
    missing = table.frame[list(table.sensors)].isna().mean()
    assert (missing > 0).all() and (missing < 0.05).all()  # missing stretches kept as NaN


def test_quality_windows_know_their_label_only_after_inspection() -> None:
    table = quality_table()
    w = make_windows(table, 60, stride=30)
    assert (w.label_time > w.end).all()  # inspection results arrive hours after the lot
    lots_per_window = pd.Series(w.lot).groupby(w.lot).size()
    assert len(lots_per_window) == 36
    assert set(np.unique(w.y[:, 0])) == {0.0, 1.0}


def test_stuck_sensor_from_fault_table_is_flat_in_the_data() -> None:
    faults = pd.read_csv(SAMPLE / "faults.csv")
    stuck = faults[faults["kind"] == "stuck"].iloc[0]
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    part = sensors[
        (sensors["lot"] == stuck["lot"])
        & (sensors["timestamp"] >= stuck["start"])
        & (sensors["timestamp"] <= stuck["end"])
    ][stuck["sensor"]].dropna()
    assert len(part) > 5 and part.nunique() == 1


def test_rul_labels_are_known_only_once_the_machine_has_failed() -> None:
    deg = pd.read_csv(SAMPLE / "degradation.csv")
    deg["failed_at"] = deg.groupby("machine")["timestamp"].transform("max")
    cols = ColumnMap(
        lot="machine",
        time="timestamp",
        targets="rul_cycles",
        label_time="failed_at",
        sensors=(
            "load_pct",
            "ambient_temp_c",
            "vibration_mm_s",
            "motor_current_a",
            "bearing_temp_c",
        ),
    )
    w = make_windows(read_table(deg, cols), 30, stride=10)
    assert (w.label_time >= w.end).all()
    assert w.y[:, 0].min() >= 0
    first_failure = pd.Timestamp(deg["failed_at"].min()).tz_convert("UTC").tz_localize(None)
    known = w.known_at(first_failure)
    assert 0 < len(known) < len(w)  # only the first failed machine's windows


@pytest.mark.parametrize("name", FILES)
def test_files_are_small(name: str) -> None:
    assert (SAMPLE / name).stat().st_size < 2_000_000


# ---------------------------------------------------------------------- defect patches

DEFECTS = SAMPLE / "defects"


def test_defect_patches_are_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    written = _generator().generate_defects(tmp_path)
    ours = sorted(p.relative_to(tmp_path / "defects").as_posix() for p in written.values())
    committed = sorted(p.relative_to(DEFECTS).as_posix() for p in DEFECTS.rglob("*") if p.is_file())
    assert ours == committed, "sample_data/defects differs from generate.py: regenerate it"
    for rel in committed:
        a = hashlib.sha256((tmp_path / "defects" / rel).read_bytes()).hexdigest()
        b = hashlib.sha256((DEFECTS / rel).read_bytes()).hexdigest()
        assert a == b, f"defects/{rel} differs from generate.py output: regenerate it"


def test_defect_patches_change_with_the_seed_but_not_the_plant(tmp_path: Path) -> None:
    gen = _generator()
    gen.generate_defects(tmp_path, seed=7)
    assert (tmp_path / "defects" / "images" / "000.png").read_bytes() != (
        DEFECTS / "images" / "000.png"
    ).read_bytes()
    assert not (tmp_path / "sensors.csv").exists()  # the plant files are written separately


def test_defect_patches_read_as_records_with_masks_lots_and_times() -> None:
    from mfgtx.images import ImageRecords, read_images, split_images

    records = ImageRecords.from_manifest(DEFECTS / "manifest.csv")
    assert records.class_names == ("crack", "inclusion", "none", "pit", "scratch")
    assert len(records) == 200 and records.has_lots
    assert np.bincount(records.labels).tolist() == [40] * 5
    manifest = pd.read_csv(DEFECTS / "manifest.csv")
    batch = read_images(records.read_bytes())
    assert not batch.errors and all(img.shape == (64, 64) for img in batch.images)
    masks = []
    for p in manifest["mask_path"]:
        with Image.open(DEFECTS / p) as im:
            assert im.mode == "1" and im.size == (64, 64)  # 1-bit masks
            masks.append(np.asarray(im, dtype=bool))
    mask_pixels = np.array([m.sum() for m in masks])
    assert np.array_equal(mask_pixels, manifest["mask_pixels"].to_numpy())
    assert ((mask_pixels == 0) == (manifest["label"] == "none")).all()
    # a defect is visible: inside its mask the image differs from the surface around it
    images = np.stack(batch.images).astype(float)
    for i in np.flatnonzero(mask_pixels > 0)[:40]:
        m = masks[i]
        assert abs(images[i][m].mean() - images[i][~m].mean()) > 4
    s = split_images(records, test_size=0.2, val_size=0.1)
    lots = manifest["lot"].to_numpy()
    assert set(lots[s.test]) == {"D09", "D10"} and set(lots[s.val]) == {"D08"}


# ---------------------------------------------------------------------- multi-regime fleet

REGIMES = SAMPLE / "regimes"
REGIME_SENSORS = ["t24", "t30", "t50", "p30", "nc", "phi"]


def _same_bytes(written: dict[str, Path], out: Path, committed: Path, what: str) -> None:
    ours = sorted(p.relative_to(out).as_posix() for p in written.values())
    theirs = sorted(
        p.relative_to(committed).as_posix() for p in committed.rglob("*") if p.is_file()
    )
    assert ours == theirs, f"sample_data/{what} differs from generate.py: regenerate it"
    for rel in theirs:
        a = hashlib.sha256((out / rel).read_bytes()).hexdigest()
        b = hashlib.sha256((committed / rel).read_bytes()).hexdigest()
        assert a == b, f"{what}/{rel} differs from generate.py output: regenerate it"


def test_regime_fleet_is_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    gen = _generator()
    _same_bytes(gen.generate_regimes(tmp_path), tmp_path / "regimes", REGIMES, "regimes")
    gen.generate_regimes(tmp_path / "seven", seed=7)
    assert (tmp_path / "seven/regimes/train.csv").read_bytes() != (
        REGIMES / "train.csv"
    ).read_bytes()
    assert not (tmp_path / "sensors.csv").exists()  # the plant files are written separately


def _by_condition(frame: pd.DataFrame) -> pd.Series:
    return frame["setting_1"].round().astype(int)  # altitude 0, 10, 20, 25, 35, 42 kft


def _per_regime_z(frame: pd.DataFrame, fit: pd.DataFrame) -> pd.DataFrame:
    """Sensors scaled per operating condition with means and stds of ``fit`` (training rows)."""
    stats = fit.groupby(_by_condition(fit))[REGIME_SENSORS]
    mean, std = stats.mean(), stats.std()
    cond = _by_condition(frame)
    return (frame[REGIME_SENSORS] - mean.loc[cond].to_numpy()) / std.loc[cond].to_numpy()


def test_regime_fleet_runs_under_six_conditions_drawn_per_cycle() -> None:
    train = pd.read_csv(REGIMES / "train.csv")
    assert train.columns.tolist() == [
        "machine", "cycle", "timestamp", "setting_1", "setting_2", "setting_3",
        *REGIME_SENSORS, "rul_cycles",
    ]  # fmt: skip
    assert train["machine"].nunique() == 24
    settings = train[["setting_1", "setting_2", "setting_3"]].round(
        {"setting_1": 0, "setting_2": 2}
    )
    assert len(settings.drop_duplicates()) == 6  # a little noise around six set points
    cond = _by_condition(train)
    changed = cond.groupby(train["machine"]).diff().fillna(0).ne(0)
    assert 0.75 < changed.mean() < 0.9  # a new draw every cycle: 5/6 of cycles change
    for machine, rows in train.groupby("machine"):
        assert rows["cycle"].tolist() == list(range(1, len(rows) + 1)), machine
        assert (rows["rul_cycles"].to_numpy() == np.arange(len(rows))[::-1]).all(), machine
    # sensor levels jump with the condition: far more than the noise within one condition
    means = train.groupby(cond)[REGIME_SENSORS].mean()
    within = train.groupby(cond)[REGIME_SENSORS].std().mean()
    assert ((means.max() - means.min()) / within > 10).all()


def test_regime_wear_shows_only_after_per_condition_scaling() -> None:
    train = pd.read_csv(REGIMES / "train.csv")
    rul = train["rul_cycles"].clip(upper=125)
    z = _per_regime_z(train, train)
    for s in ("t24", "t30", "t50", "nc"):
        raw = np.corrcoef(train[s], rul)[0, 1]
        scaled = np.corrcoef(z[s], rul)[0, 1]
        assert abs(raw) < 0.1 and scaled < -0.35, (s, raw, scaled)


def test_regime_test_machines_are_cut_before_failure_with_a_truth_file() -> None:
    train = pd.read_csv(REGIMES / "train.csv")
    test = pd.read_csv(REGIMES / "test.csv")
    truth = pd.read_csv(REGIMES / "test_rul.csv")
    assert "rul_cycles" not in test.columns and truth.columns.tolist() == ["machine", "rul_cycles"]
    machines = test["machine"].drop_duplicates().tolist()
    assert machines == truth["machine"].tolist() and len(machines) == 20  # truth in lot order
    assert not set(machines) & set(train["machine"])
    lengths = test.groupby("machine", sort=False).size()
    assert (lengths < 30).sum() == 2  # shorter than a 30-cycle window: must still be scored
    assert (truth["rul_cycles"] >= 10).all()
    for machine, rows in test.groupby("machine"):
        assert rows["cycle"].tolist() == list(range(1, len(rows) + 1)), machine
    # the truth is what the sensors say: scaled near the cut, worn machines have little left
    z = _per_regime_z(test, train).assign(machine=test["machine"])
    last = z.groupby("machine").tail(10).groupby("machine")["t30"].mean().loc[machines]
    assert np.corrcoef(last, truth["rul_cycles"].clip(upper=125))[0, 1] < -0.6


def test_regime_fleet_reads_as_a_sensor_table() -> None:
    train = pd.read_csv(REGIMES / "train.csv")
    cols = ColumnMap(
        lot="machine",
        time="timestamp",
        targets="rul_cycles",
        sensors=("setting_1", "setting_2", "setting_3", *REGIME_SENSORS),
    )
    table = read_table(train, cols)
    assert table.notes == () and len(table.lots) == 24


# ---------------------------------------------------------------------- inspection photos

INSPECTION = SAMPLE / "inspection"


@pytest.mark.slow
def test_inspection_photos_are_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    gen = _generator()
    written = gen.generate_inspection(tmp_path)
    _same_bytes(written, tmp_path / "inspection", INSPECTION, "inspection")
    gen.generate_inspection(tmp_path / "seven", seed=7)
    photo = "inspection/images/P01.png"
    assert (tmp_path / "seven" / photo).read_bytes() != (SAMPLE / photo).read_bytes()


def test_inspection_png_writer_round_trips_through_zlib() -> None:
    import zlib

    deflate = _generator().deflate_huffman
    rng = np.random.default_rng(0)
    for raw in (
        b"a",
        b"\x00" * 5000,
        bytes(range(256)) * 4,
        rng.integers(0, 256, 20_000, dtype=np.uint8).tobytes(),
        (rng.geometric(0.05, 50_000) % 256).astype(np.uint8).tobytes(),  # deep Huffman tree
    ):
        assert zlib.decompress(deflate(raw)) == raw


def test_inspection_masks_and_labelme_outlines_agree_pixel_for_pixel() -> None:
    from mfgtx.images import TileSpec, label_tiles, read_image, read_labelme, read_mask

    manifest = pd.read_csv(INSPECTION / "manifest.csv")
    assert manifest.columns.tolist()[:3] == ["path", "lot", "timestamp"]
    assert len(manifest) == 16 and manifest["lot"].nunique() == 4
    stamps = pd.to_datetime(manifest["timestamp"], utc=True)
    assert stamps.is_monotonic_increasing
    spec, n_tiles, n_defect, pitted = TileSpec(64), 0, 0, []
    images = INSPECTION / "images"
    for row in manifest.itertuples(index=False):
        photo = INSPECTION / row.path
        img = read_image(photo)
        assert img.shape == (360, 900)
        with Image.open(INSPECTION / "masks" / photo.name) as im:
            assert im.mode == "1"  # a 1-bit mask, nonzero = pit
        png = read_mask(
            photo, img.shape, format="png", images_root=images, masks_root=INSPECTION / "masks"
        )
        drawn = read_mask(photo, img.shape, format="labelme", images_root=images)
        assert np.array_equal(png, drawn), row.path
        assert int(png.sum()) == row.mask_pixels
        doc = read_labelme(photo.with_suffix(".json"), photo=str(photo))
        assert len(doc.shapes) == row.pits and set(doc.labels) <= {"pit"}
        if row.pits:
            pitted.append(row.lot)
            assert img[png == 1].mean() < img[png == 0].mean() - 10  # a pit is visible
        tiles = label_tiles(png, spec, min_defect_px=8)
        n_tiles += len(tiles.labels)
        n_defect += tiles.n_defect
    assert len(pitted) == 5 and set(pitted) == set(manifest["lot"])  # some in every coil
    assert 0.005 < n_defect / n_tiles < 0.015  # pitting is about 1 % of the 64-px tiles


def test_sample_data_stays_small() -> None:
    total = sum(p.stat().st_size for p in SAMPLE.rglob("*") if p.is_file())
    assert total < 5_000_000
    for photo in (INSPECTION / "images").glob("*.png"):
        assert photo.stat().st_size < 150_000, photo.name


# ---------------------------------------------------------------------- finishing stand

FINISHING = SAMPLE / "finishing"


def test_finishing_stand_is_exactly_what_the_generator_writes(tmp_path: Path) -> None:
    written = _generator().generate_finishing(tmp_path)
    _same_bytes(written, tmp_path / "finishing", FINISHING, "finishing")


def test_chatter_shows_in_the_shape_of_the_vibration_not_in_its_summaries() -> None:
    """The sample's shape-in-time problem: chattering coils are told apart by the regularity
    of the vibration's beat (lag-6 autocorrelation), not by a window's summary statistics."""
    log = pd.read_csv(FINISHING / "log.csv")
    inspection = pd.read_csv(FINISHING / "inspection.csv")
    assert (inspection["passed"] == ~inspection["chatter_marks"]).all()
    assert 0.25 < inspection["chatter_marks"].mean() < 0.45
    stats, lag6 = [], []
    for _, rows in log.groupby("coil", sort=True):
        v = rows["vibration_mm_s"].to_numpy()[-32:]  # the last window, as evaluated
        r = v / v.mean() - 1  # relative to the coil's level
        stats.append([r.std(), r.min(), r.max(), r[-1], np.polyfit(np.arange(32), r, 1)[0]])
        lag6.append((r[6:] * r[:-6]).sum() / (r * r).sum())
    chatter = inspection.sort_values("coil")["chatter_marks"].to_numpy()
    lag6 = np.array(lag6)
    assert lag6[chatter].min() > lag6[~chatter].max()  # the shape separates them completely
    stats = np.array(stats)
    for j in range(stats.shape[1]):  # the summaries hardly do: AUC near 0.5 for each
        a, b = stats[chatter, j], stats[~chatter, j]
        auc = (a[:, None] > b[None, :]).mean()
        assert 0.3 < auc < 0.7, (j, auc)
