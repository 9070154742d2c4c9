"""With a plant's signing key, only bundles signed with it are used, anywhere."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from mfgtx.artifacts import BundleError, sign_bundle, verify_bundle
from mfgtx.cli import main
from tests.bundles import load as load_bundle

KEY = "k" * 40
OTHER = "o" * 40


def _reforge(bundle: Path, edit) -> None:
    """Edit the manifest and recompute every checksum, as someone with write access could."""
    manifest = json.loads((bundle / "manifest.json").read_text())
    edit(manifest)
    data = (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    (bundle / "manifest.json").write_bytes(data)
    lines = {
        "manifest.json": hashlib.sha256(data).hexdigest(),
        "weights.safetensors": hashlib.sha256(
            (bundle / "weights.safetensors").read_bytes()
        ).hexdigest(),
    }
    (bundle / "checksum.sha256").write_text(
        "".join(f"{d}  {n}\n" for n, d in sorted(lines.items()))
    )


@pytest.fixture
def copy(quality_bundle, tmp_path) -> Path:
    _, bundle = quality_bundle
    out = tmp_path / "bundle"
    shutil.copytree(bundle, out)
    return out


def test_without_a_key_bundles_load_and_say_they_are_unsigned(copy, monkeypatch) -> None:
    monkeypatch.delenv("MFGTX_BUNDLE_KEY", raising=False)
    monkeypatch.delenv("MFGTX_BUNDLE_KEY_FILE", raising=False)
    assert verify_bundle(copy)["signature"] == "unsigned"
    load_bundle(copy)


def test_with_a_key_an_unsigned_bundle_is_refused_until_signed(copy, monkeypatch) -> None:
    monkeypatch.delenv("MFGTX_BUNDLE_KEY_FILE", raising=False)
    bundle_id = verify_bundle(copy)["bundle_id"]
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    with pytest.raises(BundleError, match="is not signed"):
        load_bundle(copy)
    key_id = sign_bundle(copy)
    verified = verify_bundle(copy)
    assert verified["signature"] == "verified" and verified["bundle_id"] == bundle_id
    assert len(key_id) == 12 and KEY not in (copy / "signature.hmac").read_text()
    load_bundle(copy)
    monkeypatch.delenv("MFGTX_BUNDLE_KEY")
    assert verify_bundle(copy)["signature"] == "not verified"


def test_an_edited_and_rechecksummed_bundle_is_refused(copy, monkeypatch) -> None:
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    sign_bundle(copy)
    _reforge(copy, lambda m: m["metrics"].update(verdict="forged"))  # e.g. a new threshold
    monkeypatch.delenv("MFGTX_BUNDLE_KEY")
    verify_bundle(copy)  # the checksums agree: without the key, nothing notices
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    with pytest.raises(BundleError, match="changed after it was signed"):
        load_bundle(copy)


def test_a_bundle_signed_with_another_key_is_refused(copy, monkeypatch) -> None:
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", OTHER)
    sign_bundle(copy)
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    with pytest.raises(BundleError, match="was made with the key .*, not with this machine's key"):
        load_bundle(copy)


def test_swapped_weights_are_refused_even_when_rechecksummed(copy, quality_bundle, monkeypatch):
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    sign_bundle(copy)
    import torch
    from safetensors.torch import load, save

    tensors = load((copy / "weights.safetensors").read_bytes())
    name = next(iter(tensors))
    tensors[name] = torch.zeros_like(tensors[name])
    (copy / "weights.safetensors").write_bytes(save(tensors, metadata={"format": "pt"}))
    size = (copy / "weights.safetensors").stat().st_size
    digest = hashlib.sha256((copy / "weights.safetensors").read_bytes()).hexdigest()
    _reforge(
        copy, lambda m: m["files"].update({"weights.safetensors": {"sha256": digest, "size": size}})
    )
    with pytest.raises(BundleError, match="changed after it was signed"):
        load_bundle(copy)


@pytest.mark.slow
def test_training_signs_and_scoring_checks(plant, tmp_path, monkeypatch, capsys) -> None:
    from tests.cli.conftest import quality_job, summary, write_job

    key_file = tmp_path / "bundle.key"
    key_file.write_text(KEY + "\n")
    key_file.chmod(0o600)
    monkeypatch.setenv("MFGTX_BUNDLE_KEY_FILE", str(key_file))
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    assert main(["train", "sensor", str(job)]) == 0
    bundle = Path(summary(capsys.readouterr().out)["bundle"])
    assert (bundle / "signature.hmac").is_file()
    assert main(["score", str(job)]) == 0
    capsys.readouterr()
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", OTHER)
    monkeypatch.delenv("MFGTX_BUNDLE_KEY_FILE")
    code = main(["score", str(job), "--set", f"score.output.path={tmp_path / 'x.parquet'}"])
    assert code == 2 and "not with this machine's key" in capsys.readouterr().err


def test_mfgtx_sign_signs_a_released_bundle(copy, monkeypatch, capsys) -> None:
    monkeypatch.delenv("MFGTX_BUNDLE_KEY", raising=False)
    monkeypatch.delenv("MFGTX_BUNDLE_KEY_FILE", raising=False)
    assert main(["sign", str(copy)]) == 2
    assert "no signing key" in capsys.readouterr().err
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", KEY)
    assert main(["sign", str(copy)]) == 0
    assert verify_bundle(copy)["signature"] == "verified"
    (copy / "signature.hmac").unlink()
    (copy / "weights.safetensors").write_bytes(b"broken")
    assert main(["sign", str(copy)]) == 2  # a damaged bundle is never signed
    assert "is truncated" in capsys.readouterr().err and not (copy / "signature.hmac").exists()


def test_a_short_key_is_refused(copy, monkeypatch) -> None:
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", "secret")
    with pytest.raises(BundleError, match="use at least 32"):
        load_bundle(copy)


def test_a_bad_key_stops_training_before_any_data_is_read(tmp_path, monkeypatch, capsys) -> None:
    """A key too short to sign with is refused when the job starts, not after the first epoch
    when the first checkpoint would be signed (the data path here does not even exist)."""
    job = tmp_path / "job.yaml"
    job.write_text(
        "data: {source: {path: missing.csv}, columns: {lot: lot, time: t}}\n"
        f"bundle: {tmp_path / 'model'}\n"
    )
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", "short")
    assert main(["train", "sensor", str(job)]) == 2
    err = capsys.readouterr().err
    assert "MFGTX_BUNDLE_KEY" in err and "at least 32" in err and "missing.csv" not in err
