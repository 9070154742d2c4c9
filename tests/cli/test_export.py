"""``mfgtx export BUNDLE --format onnx``: each kind's model in onnxruntime gives what the bundle
gives in PyTorch, the bundle's identity travels in the file, and the path rules hold."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import mfgtx
from mfgtx.cli import main
from mfgtx.jobs import load_config, train
from tests.cli.conftest import quality_job, summary, write_job
from tests.cli.test_jobs_forecast_vit import _patch, forecast_job, vit_job

pytest.importorskip("onnxruntime")
from mfgtx.serving import load_onnx, model_inputs, torch_outputs

# slow: trains models (fixtures and tests); -m 'not slow' leaves it out
pytestmark = pytest.mark.slow

TOL = 1e-4  # max abs difference allowed between onnxruntime and PyTorch eager


def _one_epoch(job: dict) -> dict:
    job["train"]["epochs"] = 1
    return job


def _rul_job(plant: Path, out: Path) -> dict:
    job = quality_job(plant, out)
    job["data"] = {
        "source": {"path": str(plant / "degradation.csv")},
        "label_known": "lot_end",
        "columns": {"lot": "machine", "time": "timestamp", "targets": ["rul_cycles"],
                    "label_time": "failed_at",
                    "sensors": ["load_pct", "vibration_mm_s", "bearing_temp_c"]},
    }  # fmt: skip
    job["windows"] = {"window": 20, "stride": 10}
    job["split"] = {"test_size": 0.25, "val_size": 0.2, "gap": "2h"}
    job["model"] = {"task": "regression", "patch_len": 4, "d_model": 8, "n_heads": 2,
                    "n_layers": 1, "d_ff": 16, "quantiles": [0.1, 0.9], "target_scale": 100.0}  # fmt: skip
    job["bundle"] = str(out / "models" / "rul")
    return job


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("export-images")
    rng = np.random.default_rng(1)
    for kind in ("none", "scratch"):
        (root / kind).mkdir()
        for i in range(12):
            _patch(kind, rng).save(root / kind / f"{i:03d}.png")
    return root


@pytest.fixture(scope="module")
def bundles(plant, images, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Tiny bundles of every kind (one epoch): ``name -> (job file, bundle)``."""
    out = tmp_path_factory.mktemp("export")
    ensemble = _one_epoch(forecast_job(plant, out / "fe"))
    ensemble["train"]["ensemble"] = {"members": 2}
    jobs = {
        "quality": ("sensor", quality_job(plant, out / "q")),
        "rul": ("sensor", _rul_job(plant, out / "r")),
        "forecast": ("forecast", _one_epoch(forecast_job(plant, out / "f"))),
        "forecast_ensemble": ("forecast", ensemble),
        "vit": ("vit", _one_epoch(vit_job(images, out / "v"))),
    }
    made = {}
    for name, (kind, job) in jobs.items():
        path = write_job(out / f"{name}.yaml", job)
        made[name] = (path, Path(str(train(kind, load_config(path)).bundle)))
    return made


def _export(bundle: Path, out: Path, capsys) -> tuple[int, dict, str]:
    code = main(["export", str(bundle), "--format", "onnx", "--out", str(out)])
    captured = capsys.readouterr()
    return code, summary(captured.out), captured.err


def _windows_with_gaps(predictor, frame: pd.DataFrame) -> tuple:
    """Windows of ``frame`` with readings blanked: a whole row in one window, one sensor
    for a stretch in another (as a plant export with missing values gives them)."""
    frame = frame.copy()
    sensors = list(predictor.columns.sensors)
    frame.loc[frame.index[5:25], sensors] = np.nan  # whole rows missing: patches with none
    frame.loc[frame.index[30:45], sensors[0]] = np.nan  # one sensor for a stretch
    windows = predictor.windows(frame)
    return windows, np.arange(len(windows))


def _frame(job: Path) -> pd.DataFrame:
    config = load_config(job)
    return pd.read_csv(config.data.source.path)


@pytest.mark.parametrize("name", ["quality", "rul", "forecast", "forecast_ensemble"])
def test_onnx_gives_the_bundles_outputs_on_sample_windows_with_gaps(
    bundles, name, tmp_path, capsys
) -> None:
    job, bundle = bundles[name]
    out = tmp_path / f"{name}.onnx"
    code, result, err = _export(bundle, out, capsys)
    assert code == 0, err
    predictor = mfgtx.load(bundle)
    windows, idx = _windows_with_gaps(predictor, _frame(job))
    inputs = model_inputs(predictor, windows, idx)
    mask = inputs["mask" if "mask" in inputs else "observed"]
    assert not mask.all() and mask.any()  # the batch does hold missing readings
    model = load_onnx(out)
    got = model.run(inputs)
    assert list(got) == result["outputs"]
    if predictor.kind.name == "sensor":  # against the predictor's own inference path
        point, q = predictor.outputs(windows, idx)
        want = {"prediction": point, **({"quantiles": q} if q is not None else {})}
    else:
        want = torch_outputs(predictor, inputs)
        tcols = [windows.sensors.index(t) for t in predictor.input_spec.targets]
        scaler = predictor.input_spec.scaler
        center, scale = np.asarray(scaler.center)[tcols], np.asarray(scaler.scale)[tcols]
        point, band = predictor.arrays(windows, idx)  # in the data's units
        assert np.abs(got["forecast"] * scale + center - point).max() <= TOL * max(1, scale.max())
        if band is not None:
            got_band = got["quantiles"] * scale[:, None] + center[:, None]
            cal = model.intervals  # the band's calibration, applied after the graph
            assert cal == predictor.intervals
            if cal is not None:
                got_band = cal.clip(got_band.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
                got_band[..., 0], got_band[..., -1] = cal.apply(
                    got["forecast"] * scale + center, got_band[..., 0], got_band[..., -1]
                )
            assert np.abs(got_band - band).max() <= TOL * max(1, scale.max())
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key].shape == value.shape
        assert np.abs(got[key] - value).max() <= TOL, key
    # one window alone (the batch axis is dynamic) gives the same numbers
    one = model.run({k: v[-1:] for k, v in inputs.items()})
    for key, value in want.items():
        assert np.abs(one[key] - value[-1:]).max() <= TOL


def test_the_vit_export_gives_the_bundles_logits(bundles, images, tmp_path, capsys) -> None:
    _, bundle = bundles["vit"]
    out = tmp_path / "vit.onnx"
    assert _export(bundle, out, capsys)[0] == 0
    predictor = mfgtx.load(bundle)
    files = sorted(images.rglob("*.png"))[:7]
    pixels, kept, bad = predictor.load([(f.name, f.read_bytes()) for f in files])
    assert len(kept) == 7 and not bad
    got = load_onnx(out).run(model_inputs(predictor, pixels))
    assert np.abs(got["logits"] - predictor.logits(pixels)).max() <= TOL


def test_the_ensemble_export_averages_its_members(bundles, tmp_path, capsys) -> None:
    job, bundle = bundles["forecast_ensemble"]
    out = tmp_path / "ens.onnx"
    assert _export(bundle, out, capsys)[0] == 0
    predictor = mfgtx.load(bundle)
    assert predictor.members == 2
    windows, idx = _windows_with_gaps(predictor, _frame(job))
    b = predictor._inputs(windows, idx)
    with torch.no_grad():
        members = torch.stack(
            [m(b["past"], b["observed"], b["covariates"]) for m in predictor.model.members]
        ).mean(0)
    got = load_onnx(out).run(model_inputs(predictor, windows, idx))
    assert np.abs(got["forecast"] - members.numpy()).max() <= TOL
    assert load_onnx(out).metadata["members"] == "2"


def test_the_bundles_identity_and_input_spec_travel_with_the_export(
    bundles, tmp_path, capsys
) -> None:
    _, bundle = bundles["rul"]
    out = tmp_path / "rul.onnx"
    code, result, _ = _export(bundle, out, capsys)
    predictor = mfgtx.load(bundle)
    meta = load_onnx(out).metadata
    assert code == 0 and result["bundle_id"] == predictor.bundle_id
    assert meta["bundle_id"] == predictor.bundle_id and meta["kind"] == "sensor"
    assert json.loads(meta["input_spec"]) == predictor.bundle.input_spec
    assert json.loads(meta["outputs"]) == ["prediction", "quantiles"]
    inputs = {i["name"]: i for i in json.loads(meta["inputs"])}
    assert inputs["x"]["shape"] == ["batch", 20, 3] and inputs["mask"]["dtype"] == "bool"
    assert json.loads(meta["checksums"]) == predictor.bundle.manifest["files"]
    # a plain ONNX protobuf: onnx reads it back without any pickle, weights inside
    import onnx

    proto = onnx.load(str(out))
    assert proto.producer_name == "mfgtx" and not any(
        t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer
    )


def test_the_default_output_sits_beside_the_bundle(bundles, tmp_path, capsys) -> None:
    _, bundle = bundles["quality"]
    copy = tmp_path / "quality"
    copy.mkdir()
    for f in bundle.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    assert main(["export", str(copy)]) == 0
    assert summary(capsys.readouterr().out)["out"] == str(tmp_path / "quality.onnx")
    assert load_onnx(tmp_path / "quality.onnx").bundle_id == mfgtx.load(copy).bundle_id


@pytest.mark.parametrize("where", ["inside", "bundle", "other_bundle", "not_onnx", "users_file"])
def test_the_export_refuses_to_write_over_an_input_or_into_a_bundle(
    bundles, where, tmp_path, capsys
) -> None:
    _, bundle = bundles["quality"]
    _, other = bundles["rul"]
    users = tmp_path / "notes.onnx"
    users.write_text("a file of the user's")
    out = {
        "inside": bundle / "model.onnx",
        "bundle": bundle,
        "other_bundle": other / "model.onnx",
        "not_onnx": tmp_path / "model.bin",
        "users_file": users,
    }[where]
    before = sorted(p.name for p in bundle.iterdir())
    code, result, err = _export(bundle, out, capsys)
    assert code == 2 and not result["ok"]
    assert "--out" in err
    assert sorted(p.name for p in bundle.iterdir()) == before
    if where == "users_file":
        assert users.read_text() == "a file of the user's"
    else:
        assert not (out.is_file() and out.suffix == ".onnx" and out.parent != tmp_path)


def test_an_earlier_export_is_replaced(bundles, tmp_path, capsys) -> None:
    _, bundle = bundles["quality"]
    out = tmp_path / "q.onnx"
    assert _export(bundle, out, capsys)[0] == 0
    assert _export(bundle, out, capsys)[0] == 0
    assert not list(tmp_path.glob(".q.onnx.*"))  # no temporary left behind


def test_a_damaged_bundle_is_not_exported(bundles, tmp_path, capsys) -> None:
    _, bundle = bundles["quality"]
    copy = tmp_path / "damaged"
    copy.mkdir()
    for f in bundle.iterdir():
        (copy / f.name).write_bytes(f.read_bytes())
    weights = next(p for p in copy.iterdir() if p.suffix == ".safetensors")
    data = bytearray(weights.read_bytes())
    data[-3] ^= 0xFF  # one flipped byte inside the tensor data
    weights.write_bytes(bytes(data))
    out = tmp_path / "damaged.onnx"
    code, result, err = _export(copy, out, capsys)
    assert code == 2 and not result["ok"] and not out.exists()
    assert "checksum" in err.lower() or "sha256" in err.lower()


def test_bench_times_torch_and_onnxruntime_side_by_side(bundles, tmp_path, capsys) -> None:
    job, bundle = bundles["quality"]
    out = tmp_path / "q.onnx"
    assert _export(bundle, out, capsys)[0] == 0
    assert main(["bench", str(job), "--onnx", str(out), "--repeats", "2"]) == 0
    captured = capsys.readouterr().out
    line, result = captured.strip().splitlines()[-2], summary(captured)
    assert "torch eager" in line and "onnxruntime" in line  # figures printed, not judged
    assert result["torch_per_s"] > 0 and result["onnx_per_s"] > 0
    assert result["bundle_id"] == mfgtx.load(bundle).bundle_id


def test_bench_refuses_an_export_of_another_bundle(bundles, tmp_path, capsys) -> None:
    job, _ = bundles["quality"]
    _, other = bundles["rul"]
    out = tmp_path / "rul.onnx"
    assert _export(other, out, capsys)[0] == 0
    code = main(["bench", str(job), "--onnx", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "exported from bundle" in err
