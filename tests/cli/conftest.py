"""Fixtures for the command-line tests: a small copy of the sample plant and job files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"
SENSORS = ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"]


@pytest.fixture(scope="session")
def plant(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """sample_data cut to 4 lots per line (first 200 rows each), and the whole fleet."""
    out = tmp_path_factory.mktemp("plant")
    sensors = pd.read_csv(SAMPLE / "sensors.csv", dtype=str, keep_default_na=False)
    quality = pd.read_csv(SAMPLE / "quality.csv", dtype=str, keep_default_na=False)
    lots = quality.groupby("line")["lot"].head(4).tolist()
    sensors = sensors[sensors["lot"].isin(lots)].groupby("lot", sort=False).head(200)
    sensors.to_csv(out / "sensors.csv", index=False)
    quality[quality["lot"].isin(lots)].to_csv(out / "quality.csv", index=False)
    # whole runs only (RUL is known at failure); the machines overlap in time, so the split
    # needs most of the fleet
    (out / "degradation.csv").write_bytes((SAMPLE / "degradation.csv").read_bytes())
    return out


def quality_job(plant: Path, out: Path, **sections: object) -> dict:
    """A tiny lot pass/fail job on ``plant`` writing under ``out``."""
    job = {
        "data": {
            "source": {"path": str(plant / "sensors.csv")},
            "labels": {
                "source": {"path": str(plant / "quality.csv")},
                "on": "lot",
                "columns": ["passed", "inspected_at"],
            },
            "pass_column": "passed",
            "columns": {
                "lot": "lot",
                "time": "timestamp",
                "sensors": SENSORS,
                "targets": ["defect"],
                "label_time": "inspected_at",
                "keys": ["line"],
            },
        },
        "windows": {"window": 40, "stride": 40},
        "split": {"test_size": 3, "val_size": 3, "gap": "0s"},
        "model": {
            "task": "classification",
            "patch_len": 8,
            "d_model": 8,
            "n_heads": 2,
            "n_layers": 1,
            "d_ff": 16,
            "dropout": 0.0,
        },
        # precision named: "auto" times both on the machine, and a loaded one can flip it between
        # the runs a test compares bit for bit
        "train": {
            "epochs": 2,
            "batch_size": 16,
            "patience": None,
            "progress": "log",
            "precision": "fp32",
        },
        "bundle": str(out / "models" / "quality"),
        "score": {"output": {"path": str(out / "scores.parquet")}},
    }
    job.update(sections)
    return job


def write_job(path: Path, job: dict) -> Path:
    path.write_text(yaml.safe_dump(job, sort_keys=False))
    return path


def summary(stdout: str) -> dict:
    """The JSON summary: the last line of a command's stdout."""
    return json.loads(stdout.strip().splitlines()[-1])


def train_until_killed(kind: str, config: object) -> Path:
    """Run ``train(kind, config)`` and kill it once the first epoch's checkpoint is written,
    as a scheduler or an operator would; returns that checkpoint's path."""
    from mfgtx.jobs import train

    ckpt = Path(f"{config.bundle}.ckpt") / "last.ckpt"  # type: ignore[attr-defined]

    class Killed(Exception):
        pass

    def kill_after_first_checkpoint(step: int, loss: float) -> None:
        if ckpt.exists():  # written at the end of epoch 1
            raise Killed

    with pytest.raises(Killed):
        train(kind, config, on_step=kill_after_first_checkpoint)
    return ckpt
