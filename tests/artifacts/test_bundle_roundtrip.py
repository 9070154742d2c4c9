"""Save then load gives the same model, config, scaler and manifest."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import safetensors.torch
import torch

import mfgtx
from mfgtx.artifacts import BundleError, BundleWarning, load_bundle, save_bundle, verify_bundle
from mfgtx.calibration import Calibration, TemperatureScaler, ThresholdChoice
from mfgtx.data import ColumnMap, SensorScaler

from .conftest import TinyModel

SCALER = SensorScaler(
    sensors=("a", "b", "c", "d"),
    method="standard",
    center=(1.0, 2.0, 3.0, 4.0),
    scale=(0.5, 1.5, 2.0, 1.0),
    fit_rows=((0, 10), (20, 30)),
)


@dataclass(frozen=True)
class TrainConfig:
    lr: float = 1e-3
    epochs: int = 3
    out_dir: Path = Path("runs/x")


class Report:
    """Stands in for an audit report: anything with ``to_dict()``."""

    def to_dict(self) -> dict:
        return {"passed": True, "checks": [{"name": "lot_disjoint", "passed": True}]}


def test_round_trip_gives_identical_predictions(tmp_path, tiny_model, inputs) -> None:
    path = save_bundle(tmp_path / "b", tiny_model)
    bundle = load_bundle(path, classes=[TinyModel])
    with torch.no_grad():
        assert torch.equal(bundle.model(*inputs), tiny_model(*inputs))
    assert bundle.model is not tiny_model and not bundle.model.training
    assert bundle.config == tiny_model.config  # the tuple field came back a tuple
    assert isinstance(bundle.config.quantiles, tuple)
    assert bundle.path == path and bundle.scaler is None


def test_manifest_holds_every_section(tmp_path, tiny_model) -> None:
    columns = ColumnMap(lot="lot", time="timestamp", sensors=("a", "b", "c", "d"), targets="y")
    path = save_bundle(
        tmp_path / "b",
        tiny_model,
        data_schema=columns,
        scaler=SCALER,
        split={"method": "LotTimeSplit", "test_size": 0.2},
        audit=Report(),
        metrics={"mae": torch.tensor(0.5), "per_lot": [1, 2]},
        baseline_metrics={"persistence": {"mae": 0.75}},
        train_config=TrainConfig(),
        precision=torch.bfloat16,
        extra={"line": "L3"},
    )
    bundle = load_bundle(path, classes=[TinyModel])
    m = bundle.manifest
    assert m["format"] == "mfgtx.bundle" and m["format_version"] == 3
    assert m["kind"] is None and m["input_spec"] is None  # written from Python, no kind
    assert m["versions"]["mfgtx"] == mfgtx.__version__
    assert m["versions"]["torch"] == str(torch.__version__)
    assert m["created_utc"].endswith("+00:00")
    assert m["model"]["class"] == f"{TinyModel.__module__}.TinyModel"  # the default name
    assert m["model"]["config"] == {
        **dataclasses.asdict(tiny_model.config),
        "quantiles": [0.1, 0.5, 0.9],
    }
    assert m["data_schema"] == json.loads(json.dumps(dataclasses.asdict(columns)))
    assert m["split"] == {"method": "LotTimeSplit", "test_size": 0.2}
    assert m["audit"]["checks"][0]["name"] == "lot_disjoint"
    assert m["metrics"] == {"mae": 0.5, "per_lot": [1, 2]}
    assert m["baseline_metrics"] == {"persistence": {"mae": 0.75}}
    assert m["train_config"] == {"lr": 1e-3, "epochs": 3, "out_dir": "runs/x"}
    assert m["precision"] == "bfloat16" and m["extra"] == {"line": "L3"}
    assert bundle.scaler == SCALER
    weights = (path / "weights.safetensors").read_bytes()
    assert m["files"] == {
        "weights.safetensors": {"sha256": hashlib.sha256(weights).hexdigest(), "size": len(weights)}
    }
    manifest_sha = hashlib.sha256((path / "manifest.json").read_bytes()).hexdigest()
    assert bundle.bundle_id == manifest_sha
    assert sorted(p.name for p in path.iterdir()) == [
        "checksum.sha256",
        "manifest.json",
        "weights.safetensors",
    ]


@pytest.mark.skipif(shutil.which("sha256sum") is None, reason="no sha256sum here")
def test_checksum_file_checks_with_sha256sum(bundle_path) -> None:
    done = subprocess.run(
        ["sha256sum", "--strict", "-c", "checksum.sha256"],
        cwd=bundle_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "manifest.json: OK" in done.stdout and "weights.safetensors: OK" in done.stdout


def test_tied_weight_is_stored_once_and_stays_tied(bundle_path) -> None:
    names = safetensors.torch.load_file(bundle_path / "weights.safetensors").keys()
    assert "embed.weight" in names and "code_head.weight" not in names
    manifest = json.loads((bundle_path / "manifest.json").read_text())
    assert manifest["model"]["aliases"] == {"code_head.weight": "embed.weight"}
    model = load_bundle(bundle_path, classes=[TinyModel]).model
    assert model.code_head.weight is model.embed.weight


def test_non_contiguous_buffer_round_trips(bundle_path, tiny_model) -> None:
    assert not tiny_model.mix.matrix.is_contiguous()
    assert torch.equal(
        load_bundle(bundle_path, classes=[TinyModel]).model.mix.matrix, tiny_model.mix.matrix
    )


def test_float64_model_comes_back_in_float64(tmp_path, tiny_model, inputs) -> None:
    model = tiny_model.double()
    bundle = load_bundle(save_bundle(tmp_path / "b", model), classes=[TinyModel])
    assert bundle.model.inp.weight.dtype == torch.float64
    x, codes = inputs
    with torch.no_grad():
        assert torch.equal(bundle.model(x.double(), codes), model(x.double(), codes))


def test_bundle_id_is_stable_and_changes_with_content(tmp_path, tiny_model, bundle_path) -> None:
    first = load_bundle(bundle_path, classes=[TinyModel]).bundle_id
    assert (
        load_bundle(bundle_path, classes=[TinyModel]).bundle_id
        == first
        == verify_bundle(bundle_path)["bundle_id"]
    )
    other = save_bundle(tmp_path / "other", tiny_model, metrics={"mae": 0.5})
    assert load_bundle(other, classes=[TinyModel]).bundle_id != first


def test_verify_checks_without_building_the_model(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m["model"].update({"class": "not.registered.Model"}))
    report = verify_bundle(bundle_path)
    assert report["manifest"]["model"]["class"] == "not.registered.Model"
    assert report["unexpected_files"] == []
    with pytest.raises(BundleError, match="'not.registered.Model' is not known to this program"):
        load_bundle(bundle_path, classes=[TinyModel])


def test_unlisted_file_warns_and_is_ignored(bundle_path, tiny_model, inputs) -> None:
    (bundle_path / "Thumbs.db").write_bytes(b"\x00junk")
    with pytest.warns(BundleWarning, match=r"\['Thumbs.db'\]"):
        bundle = load_bundle(bundle_path, classes=[TinyModel])
    with torch.no_grad():
        assert torch.equal(bundle.model(*inputs), tiny_model(*inputs))
    with pytest.warns(BundleWarning):
        assert verify_bundle(bundle_path)["unexpected_files"] == ["Thumbs.db"]


def test_calibration_travels_with_the_bundle(tmp_path, tiny_model) -> None:
    cal = Calibration(
        TemperatureScaler(1.7),
        ThresholdChoice(
            0.21, cost_missed_defect=10.0, cost_false_alarm=1.0, tp=9, fp=7, tn=80, fn=1
        ),
    )
    bundle = load_bundle(
        save_bundle(tmp_path / "b", tiny_model, calibration=cal), classes=[TinyModel]
    )
    assert bundle.calibration == cal
    assert bundle.manifest["calibration"]["threshold"]["cost_ratio"] == 10.0
    logits = torch.tensor([2.0, -0.5, -3.0])
    assert bundle.calibration.decide(logits).tolist() == [1, 1, 0]  # 0.38 > 0.21 flags it


def test_calibration_must_be_a_calibration(tmp_path, tiny_model) -> None:
    with pytest.raises(TypeError, match="calibration must be a mfgtx.calibration.Calibration"):
        save_bundle(tmp_path / "b", tiny_model, calibration={"temperature": 2.0})
    assert not (tmp_path / "b").exists()


def test_version_1_bundles_still_load(tmp_path, tiny_model, reseal) -> None:
    path = save_bundle(tmp_path / "b", tiny_model)

    def to_version_1(m: dict) -> None:
        for key in ("calibration", "kind", "input_spec"):
            m.pop(key)
        m["format_version"] = 1

    reseal(path, to_version_1)
    bundle = load_bundle(path, classes=[TinyModel])
    assert bundle.calibration is None and bundle.manifest["format_version"] == 1
