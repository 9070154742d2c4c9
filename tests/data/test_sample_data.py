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
