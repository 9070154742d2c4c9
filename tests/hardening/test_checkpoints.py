"""Checkpoints carry their own checksum, and --resume refuses a run with other settings."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest
import torch

from mfgtx.jobs import load_config, train
from mfgtx.train import CheckpointError
from mfgtx.train.checkpoint import load_checkpoint, save_checkpoint
from tests.cli.conftest import quality_job, train_until_killed, write_job


def test_the_checksum_travels_inside_the_checkpoint(tmp_path) -> None:
    path = tmp_path / "last.ckpt"
    save_checkpoint(path, {"epoch": 3, "w": torch.ones(4)})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["last.ckpt"]  # no second file
    assert load_checkpoint(path)["epoch"] == 3
    data = bytearray(path.read_bytes())
    data[-10] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="is corrupted"):
        load_checkpoint(path)


def test_a_checkpoint_of_the_earlier_layout_still_loads(tmp_path) -> None:
    path = tmp_path / "last.ckpt"
    buffer = io.BytesIO()
    torch.save({"epoch": 2}, buffer)
    path.write_bytes(buffer.getvalue())
    digest = hashlib.sha256(buffer.getvalue()).hexdigest()
    (tmp_path / "last.ckpt.sha256").write_text(f"{digest}  last.ckpt\n")
    assert load_checkpoint(path)["epoch"] == 2
    (tmp_path / "last.ckpt.sha256").unlink()
    with pytest.raises(CheckpointError, match="no checksum file"):
        load_checkpoint(path)


def test_saving_removes_only_the_earlier_layouts_checksum_file(tmp_path) -> None:
    path = tmp_path / "last.ckpt"
    digest = hashlib.sha256(b"x").hexdigest()
    sidecar = tmp_path / "last.ckpt.sha256"
    sidecar.write_text(f"{digest}  last.ckpt\n")  # what the earlier layout wrote
    save_checkpoint(path, {"epoch": 1})
    assert not sidecar.exists() and load_checkpoint(path)["epoch"] == 1
    for users in (f"{digest}  firmware.bin\n", "checked by QA on 2026-11-30\n", digest * 4):
        sidecar.write_text(users)
        save_checkpoint(path, {"epoch": 2})
        assert sidecar.read_text() == users


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("windows.stride=20", "windows.stride: 40 -> 20"),
        ("model.dropout=0.3", "model.dropout: 0.0 -> 0.3"),
        ("split.gap=1h", "split.gap: '0s' -> '1h'"),
        ("data.columns.sensors=[temperature_c, pressure_bar]", "data.columns.sensors"),
    ],
)
def test_resume_refuses_changed_data_windows_split_or_model_settings(
    plant, tmp_path, override, key
) -> None:
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    ckpt = train_until_killed("sensor", load_config(job))
    before = ckpt.read_bytes()
    with pytest.raises(CheckpointError, match=rf"cannot resume .*{key}".replace("[", r"\[")):
        train("sensor", load_config(job, [override]), resume=True)
    assert ckpt.read_bytes() == before  # the finished epochs are kept for a corrected rerun


def test_resume_refuses_changed_training_data(plant, tmp_path) -> None:
    import pandas as pd

    sensors = tmp_path / "sensors.csv"
    sensors.write_bytes((plant / "sensors.csv").read_bytes())
    job = quality_job(plant, tmp_path)
    job["data"]["source"]["path"] = str(sensors)
    job = write_job(tmp_path / "job.yaml", job)
    train_until_killed("sensor", load_config(job))
    df = pd.read_csv(sensors)
    df.loc[5, "temperature_c"] += 1.0  # one reading corrected in the export
    df.to_csv(sensors, index=False)
    with pytest.raises(CheckpointError, match="training_data_sha256"):
        train("sensor", load_config(job), resume=True)


@pytest.mark.slow
def test_resume_accepts_the_same_run(plant, tmp_path) -> None:
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    train_until_killed("sensor", load_config(job))
    # how the input is read and how progress is shown are not part of the run
    overrides = ["data.source.chunk_rows=100", "train.progress=off"]
    outcome = train("sensor", load_config(job, overrides), resume=True)
    assert outcome.resumed_from_epoch == 1 and Path(str(outcome.bundle)).is_dir()


KEY = "k" * 40
OTHER = "o" * 40


@pytest.fixture
def no_key(monkeypatch):
    monkeypatch.delenv("MFGTX_BUNDLE_KEY", raising=False)
    monkeypatch.delenv("MFGTX_BUNDLE_KEY_FILE", raising=False)
    return monkeypatch


def test_with_a_key_checkpoints_are_signed_and_checked(tmp_path, no_key) -> None:
    path = tmp_path / "last.ckpt"
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    save_checkpoint(path, {"epoch": 3, "w": torch.ones(4)})
    assert path.read_bytes().startswith(b"mfgtx-checkpoint 3\n")
    assert KEY.encode() not in path.read_bytes()
    assert load_checkpoint(path)["epoch"] == 3
    no_key.delenv("MFGTX_BUNDLE_KEY")  # without a key a signed checkpoint loads, unverified
    assert load_checkpoint(path)["epoch"] == 3


def test_without_a_key_checkpoints_are_as_before(tmp_path, no_key) -> None:
    path = tmp_path / "last.ckpt"
    save_checkpoint(path, {"epoch": 1})
    assert path.read_bytes().startswith(b"mfgtx-checkpoint 2\n")
    assert load_checkpoint(path)["epoch"] == 1


def test_with_a_key_an_unsigned_checkpoint_is_refused(tmp_path, no_key) -> None:
    path = tmp_path / "last.ckpt"
    save_checkpoint(path, {"epoch": 1})  # forged where no key is set: a valid sha256
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    with pytest.raises(CheckpointError, match="is not signed, .* train again without --resume"):
        load_checkpoint(path)


def test_a_checkpoint_signed_with_another_key_is_refused(tmp_path, no_key) -> None:
    path = tmp_path / "last.ckpt"
    no_key.setenv("MFGTX_BUNDLE_KEY", OTHER)
    save_checkpoint(path, {"epoch": 1})
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    with pytest.raises(CheckpointError, match="was signed with the key .*, not with this machine"):
        load_checkpoint(path)


def test_a_resigned_checksum_does_not_make_a_checkpoint_pass(tmp_path, no_key) -> None:
    """Changed weights with a recomputed sha256 and the old signature line: refused."""
    path = tmp_path / "last.ckpt"
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    save_checkpoint(path, {"epoch": 1, "w": torch.ones(4)})
    data = path.read_bytes()
    magic, _digest, signature, _rest = data.split(b"\n", 3)
    buffer = io.BytesIO()
    torch.save({"epoch": 1, "w": torch.zeros(4)}, buffer)
    forged = buffer.getvalue()
    digest = hashlib.sha256(forged).hexdigest().encode()
    path.write_bytes(b"\n".join([magic, digest, signature, forged]))
    with pytest.raises(CheckpointError, match="does not match its signature"):
        load_checkpoint(path)


def test_a_bad_key_stops_the_save_with_the_key_named(tmp_path, no_key) -> None:
    no_key.setenv("MFGTX_BUNDLE_KEY", "short")
    with pytest.raises(CheckpointError, match="MFGTX_BUNDLE_KEY: the bundle key is 5 characters"):
        save_checkpoint(tmp_path / "last.ckpt", {"epoch": 1})
    assert not (tmp_path / "last.ckpt").exists()


@pytest.mark.slow
def test_a_forged_checkpoint_never_resumes_into_a_signed_bundle(plant, tmp_path, no_key) -> None:
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    ckpt = train_until_killed("sensor", load_config(job))
    genuine = ckpt.read_bytes()
    # someone with write access to the checkpoint folder but not the key: a valid sha256
    no_key.delenv("MFGTX_BUNDLE_KEY")
    state = load_checkpoint(ckpt)
    state["best_state"] = {k: torch.zeros_like(v) for k, v in state["model"].items()}
    save_checkpoint(ckpt, state)
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    config = load_config(job)
    with pytest.raises(CheckpointError, match="is not signed"):
        train("sensor", config, resume=True)
    assert not Path(str(config.bundle)).exists()
    ckpt.write_bytes(genuine)  # the run's own checkpoint resumes, into a signed bundle
    outcome = train("sensor", config, resume=True)
    assert outcome.resumed_from_epoch == 1
    assert (Path(str(outcome.bundle)) / "signature.hmac").is_file()


def test_a_bundle_signature_does_not_pass_as_a_checkpoint_signature(tmp_path, no_key) -> None:
    """Both are HMACs with the plant's key, each over its own purpose line."""
    from mfgtx._keys import key_id, mac

    path = tmp_path / "last.ckpt"
    no_key.setenv("MFGTX_BUNDLE_KEY", KEY)
    save_checkpoint(path, {"epoch": 1})
    magic, digest, _signature, payload = path.read_bytes().split(b"\n", 3)
    key = KEY.encode()
    as_bundle = f"hmac-sha256 {key_id(key)} {mac(key, b'mfgtx-bundle-v1', payload)}".encode()
    path.write_bytes(b"\n".join([magic, digest, as_bundle, payload]))
    with pytest.raises(CheckpointError, match="does not match its signature"):
        load_checkpoint(path)
