"""Every kind of damaged, tampered or incompatible bundle is refused, naming the file."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest
import safetensors.torch
import torch

from mfgtx.artifacts import BundleError, load_bundle, verify_bundle

from .conftest import TinyModel


def _refused(path, match: str, file: str) -> BundleError:
    """Both verify_bundle and load_bundle refuse ``path`` with ``match``, naming ``file``."""
    with pytest.raises(BundleError, match=match):
        verify_bundle(path)
    with pytest.raises(BundleError, match=match) as info:
        load_bundle(path, classes=[TinyModel])
    assert file in str(info.value) and info.value.file is not None
    assert info.value.file.name == file
    return info.value


def test_truncated_weights(bundle_path) -> None:
    weights = bundle_path / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:-10])
    _refused(
        bundle_path,
        r"weights\.safetensors is truncated: \d+ bytes, manifest.json says",
        "weights.safetensors",
    )


def test_one_flipped_byte_in_tensor_data_is_caught_by_the_checksum(bundle_path, tmp_path) -> None:
    weights = bundle_path / "weights.safetensors"
    data = bytearray(weights.read_bytes())
    header_end = 8 + int.from_bytes(data[:8], "little")
    position = len(data) - 3
    assert position > header_end  # tensor data, not the JSON header
    data[position] ^= 0x01
    weights.write_bytes(bytes(data))
    # safetensors itself loads the damaged file without complaint, with a different weight:
    tampered = safetensors.torch.load_file(weights)
    data[position] ^= 0x01
    (tmp_path / "clean.safetensors").write_bytes(bytes(data))
    clean = safetensors.torch.load_file(tmp_path / "clean.safetensors")
    assert tampered.keys() == clean.keys()
    assert any(not torch.equal(tampered[k], clean[k]) for k in clean)
    _refused(
        bundle_path,
        r"weights\.safetensors is corrupted or was changed: its sha256 is",
        "weights.safetensors",
    )


def test_changed_metric_in_manifest(bundle_path) -> None:
    manifest = bundle_path / "manifest.json"
    text = manifest.read_text()
    assert '"mae": 0.25' in text
    manifest.write_text(text.replace('"mae": 0.25', '"mae": 0.15'))
    _refused(
        bundle_path,
        r"manifest\.json is corrupted or was changed: .*checksum\.sha256 says",
        "manifest.json",
    )


@pytest.mark.parametrize("name", ["weights.safetensors", "manifest.json", "checksum.sha256"])
def test_missing_file(bundle_path, name) -> None:
    (bundle_path / name).unlink()
    _refused(bundle_path, f"{name} is missing from the bundle", name)


def test_not_a_directory(tmp_path) -> None:
    with pytest.raises(BundleError, match="no bundle at .*nowhere: not a directory"):
        load_bundle(tmp_path / "nowhere", classes=[TinyModel])


def test_checksum_file_and_manifest_must_agree(bundle_path) -> None:
    checksum = bundle_path / "checksum.sha256"
    lines = checksum.read_text().splitlines()
    lines = [("0" * 64 + "  weights.safetensors") if "weights" in ln else ln for ln in lines]
    checksum.write_text("\n".join(lines) + "\n")
    _refused(bundle_path, "disagree about 'weights.safetensors'", "checksum.sha256")


def test_garbled_checksum_file(bundle_path) -> None:
    (bundle_path / "checksum.sha256").write_text("not a checksum\n")
    _refused(bundle_path, r"line 1 is not '<sha256>  <file name>'", "checksum.sha256")


@pytest.mark.parametrize(
    ("version", "match"),
    [
        (4, r"format version 4 is not supported .*reads versions \[1, 2, 3\]\); upgrade mfgtx"),
        (0, "format version 0 is not supported"),
    ],
)
def test_incompatible_format_version(bundle_path, reseal, version, match) -> None:
    reseal(bundle_path, lambda m: m.update(format_version=version))
    _refused(bundle_path, match, "manifest.json")


def test_newer_major_mfgtx(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m["versions"].update(mfgtx="1.0.0"))
    _refused(bundle_path, r"written by mfgtx 1\.0\.0, a newer major version", "manifest.json")


def test_unknown_top_level_key(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m.update(comments={"t": 1.0}))
    _refused(bundle_path, r"missing \[\], unknown \['comments'\]", "manifest.json")


def test_version_1_bundle_has_no_calibration_key(bundle_path, reseal) -> None:
    # a version 1 manifest holding the keys of later versions is refused, not half-read
    reseal(bundle_path, lambda m: m.update(format_version=1))
    _refused(
        bundle_path,
        r"format 1: missing \[\], unknown \['calibration', 'input_spec', 'kind'\]",
        "manifest.json",
    )


def test_version_2_bundle_has_no_kind_or_input_spec(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m.update(format_version=2))
    _refused(
        bundle_path, r"format 2: missing \[\], unknown \['input_spec', 'kind'\]", "manifest.json"
    )


def test_bad_calibration_section(bundle_path, reseal) -> None:
    bad = {"temperature": {"temperature": -1.0}, "threshold": None}
    reseal(bundle_path, lambda m: m.update(calibration=bad))
    _refused_on_load(bundle_path, "bad calibration: temperature must be a positive")


def test_file_entry_outside_the_bundle(bundle_path) -> None:
    # reseal would read ../secret: update the manifest and its checksum line by hand instead
    manifest = json.loads((bundle_path / "manifest.json").read_text())
    manifest["files"]["../secret"] = {"sha256": "0" * 64, "size": 1}
    (bundle_path / "manifest.json").write_text(json.dumps(manifest))
    digest = hashlib.sha256((bundle_path / "manifest.json").read_bytes()).hexdigest()
    lines = [
        ln
        for ln in (bundle_path / "checksum.sha256").read_text().splitlines()
        if "manifest" not in ln
    ]
    (bundle_path / "checksum.sha256").write_text(
        "\n".join([f"{digest}  manifest.json", *lines]) + "\n"
    )
    _refused(
        bundle_path,
        "'files' lists '../secret', which is not a plain data file name",
        "manifest.json",
    )


def test_unregistered_class_like_os_system_is_refused(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m["model"].update({"class": "os.system"}))
    error = _refused_on_load(bundle_path, r"model class 'os\.system' is not known to this program")
    assert "TinyModel" in str(error)  # lists the classes it was given


def test_a_class_named_in_the_manifest_is_never_imported(
    bundle_path, reseal, tmp_path, monkeypatch
) -> None:
    marker = tmp_path / "payload_ran"
    (tmp_path / "mfgtx_payload_mod.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\nclass Payload: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    reseal(bundle_path, lambda m: m["model"].update({"class": "mfgtx_payload_mod.Payload"}))
    _refused_on_load(bundle_path, r"'mfgtx_payload_mod\.Payload' is not known to this program")
    assert not marker.exists()
    assert "mfgtx_payload_mod" not in sys.modules


def _refused_on_load(path, match: str) -> BundleError:
    verify_bundle(path)  # the bundle itself is intact
    with pytest.raises(BundleError, match=match) as info:
        load_bundle(path, classes=[TinyModel])
    assert info.value.file.name == "manifest.json"
    return info.value


def test_weights_that_do_not_fit_the_config(bundle_path, reseal) -> None:
    reseal(bundle_path, lambda m: m["model"]["config"].update(d_in=5))
    error = _refused_on_load_weights(bundle_path)
    assert "tensor 'inp.weight' is (8, 4) torch.float32 in the file" in str(error)
    assert "expects (8, 5) torch.float32" in str(error)


def test_weights_with_an_extra_tensor(bundle_path, reseal) -> None:
    weights = bundle_path / "weights.safetensors"
    tensors = safetensors.torch.load_file(weights) | {"stray.weight": torch.zeros(3, 2)}
    safetensors.torch.save_file(tensors, weights)
    reseal(bundle_path)
    error = _refused_on_load_weights(bundle_path)
    assert "1 tensors the model does not have, first 'stray.weight' (3, 2)" in str(error)


def test_weights_missing_a_tensor(bundle_path, reseal) -> None:
    weights = bundle_path / "weights.safetensors"
    tensors = safetensors.torch.load_file(weights)
    del tensors["head.bias"]
    safetensors.torch.save_file(tensors, weights)
    reseal(bundle_path)
    error = _refused_on_load_weights(bundle_path)
    assert "tensor 'head.bias' (3,) of the model is missing from the file" in str(error)


def _refused_on_load_weights(path) -> BundleError:
    verify_bundle(path)
    with pytest.raises(BundleError, match="does not fit '[\\w.]*TinyModel'") as info:
        load_bundle(path, classes=[TinyModel])
    assert info.value.file.name == "weights.safetensors"
    return info.value


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda c: c.update(colour="red"), r"unknown keys \['colour'\], missing keys \[\]"),
        (lambda c: c.pop("n_codes"), r"unknown keys \[\], missing keys \['n_codes'\]"),
    ],
)
def test_config_with_unknown_or_missing_keys(bundle_path, reseal, edit, match) -> None:
    reseal(bundle_path, lambda m: edit(m["model"]["config"]))
    _refused_on_load(
        bundle_path,
        rf"cannot rebuild '[\w.]*TinyModel': model.config does not match TinyConfig: {match}",
    )
