"""find_bundles: every verified bundle of a models folder, described from its manifest."""

from __future__ import annotations

import shutil
from pathlib import Path

from mfgtx.artifacts import FoundBundle, find_bundles

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "bundles_66eb24c"


def _models(tmp_path: Path) -> Path:
    models = tmp_path / "models"
    for name in ("sensor", "forecast_ar", "vit"):
        shutil.copytree(OLD / name, models / name)
    return models


def test_bundles_are_listed_by_name_with_kind_class_and_task(tmp_path: Path) -> None:
    found, problems = find_bundles(_models(tmp_path))
    assert problems == []
    assert [(b.path.name, b.kind, b.model_class, b.task) for b in found] == [
        ("forecast_ar", "forecast", "mfgtx.CausalForecaster", "forecast"),
        ("sensor", "sensor", "mfgtx.SensorEncoder", "classification"),
        ("vit", "vit", "mfgtx.DefectViT", "classification"),
    ]
    assert all(isinstance(b, FoundBundle) and len(b.bundle_id) == 64 for b in found)
    assert {b.signature for b in found} == {"unsigned"}


def test_a_damaged_bundle_is_named_not_listed(tmp_path: Path) -> None:
    models = _models(tmp_path)
    weights = models / "sensor" / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")
    (models / "notes").mkdir()  # a folder without a manifest is no bundle: passed over
    found, problems = find_bundles(models)
    assert [b.path.name for b in found] == ["forecast_ar", "vit"]
    assert len(problems) == 1 and problems[0].startswith("sensor: ")


def test_a_warning_of_the_checks_is_kept_with_the_bundle(tmp_path: Path) -> None:
    models = _models(tmp_path)
    (models / "vit" / "Thumbs.db").write_bytes(b"x")
    found, _ = find_bundles(models)
    by_name = {b.path.name: b for b in found}
    assert any("Thumbs.db" in w for w in by_name["vit"].warnings)
    assert by_name["sensor"].warnings == ()


def test_a_missing_folder_is_said_in_words(tmp_path: Path) -> None:
    assert find_bundles(tmp_path / "nowhere") == (
        [],
        [f"models directory {tmp_path / 'nowhere'} does not exist"],
    )
