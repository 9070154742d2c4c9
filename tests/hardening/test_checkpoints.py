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


def test_resume_accepts_the_same_run(plant, tmp_path) -> None:
    job = write_job(tmp_path / "job.yaml", quality_job(plant, tmp_path))
    train_until_killed("sensor", load_config(job))
    # how the input is read and how progress is shown are not part of the run
    overrides = ["data.source.chunk_rows=100", "train.progress=off"]
    outcome = train("sensor", load_config(job, overrides), resume=True)
    assert outcome.resumed_from_epoch == 1 and Path(str(outcome.bundle)).is_dir()
