"""``demo``: train small models on the sample plant, score it, and hand the results to the app.

Four jobs on ``sample_data/``, the same as ``pipelines/configs/sample_*.yaml``: lot
pass/fail (classification, calibrated) from ``sensors.csv`` and ``quality.csv``, remaining
useful life with an 80 % interval from ``degradation.csv``, a forecaster of the process
sensors, and a defect-patch ViT on ``defects/``; each is trained and then scored.
A bundle that already exists and verifies is reused, so a second
``mfgtx demo`` goes straight to the dashboard. ``quick`` trains tiny models for two epochs
(a smoke test of the whole chain, not a useful model).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from mfgtx.jobs._schema import build
from mfgtx.jobs.config import JobConfig

__all__ = ["demo_configs", "run_demo"]

log = logging.getLogger(__name__)

_TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}


def demo_configs(
    data_dir: str | Path, out_dir: str | Path, *, quick: bool = False
) -> dict[str, JobConfig]:
    """The demo's job configurations (the same as ``pipelines/configs/sample_*.yaml``)."""
    data, out = Path(data_dir), Path(out_dir)
    quality: dict[str, Any] = {
        "name": "sample_quality",
        "data": {
            "source": {"path": str(data / "sensors.csv")},
            "labels": {
                "source": {"path": str(data / "quality.csv")},
                "on": "lot",
                "columns": ["passed", "inspected_at"],
            },
            "pass_column": "passed",
            "columns": {
                "lot": "lot",
                "time": "timestamp",
                "sensors": ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"],
                "targets": ["defect"],
                "label_time": "inspected_at",
                "keys": ["line"],
            },
        },
        "windows": {"window": 120, "stride": 30},
        "split": {
            "test_size": 0.25,
            "val_size": 0.2,
            "gap": "30min",
            "evaluate_on": "last_per_lot",
        },
        "model": {
            "task": "classification",
            "patch_len": 10,
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
            "d_ff": 64,
            "dropout": 0.2,
        },
        "train": {"epochs": 30, "batch_size": 32, "lr": 0.001, "patience": 6},
        "calibration": {"cost_ratio": 5.0},
        "bundle": str(out / "models" / "sample_quality"),
        "score": {"output": {"path": str(out / "results" / "sample_quality.parquet")}},
    }
    rul: dict[str, Any] = {
        "name": "sample_rul",
        "data": {
            "source": {"path": str(data / "degradation.csv")},
            "label_known": "lot_end",
            "columns": {
                "lot": "machine",
                "time": "timestamp",
                "sensors": [
                    "load_pct",
                    "ambient_temp_c",
                    "vibration_mm_s",
                    "motor_current_a",
                    "bearing_temp_c",
                ],
                "targets": ["rul_cycles"],
                "label_time": "failed_at",
            },
        },
        "windows": {"window": 30, "stride": 5},
        "split": {"test_size": 0.25, "val_size": 0.2, "gap": "2h"},
        "model": {
            "task": "regression",
            "tokens": "sensor",
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
            "d_ff": 64,
            "quantiles": [0.1, 0.9],
            "target_scale": 100.0,
        },
        "train": {"epochs": 30, "batch_size": 64, "lr": 0.001, "patience": 6},
        "bundle": str(out / "models" / "sample_rul"),
        "score": {"output": {"path": str(out / "results" / "sample_rul.parquet")}},
    }
    sensors = ["temperature_c", "pressure_bar", "vibration_mm_s", "motor_current_a"]
    forecast: dict[str, Any] = {
        "name": "sample_forecast",
        "data": {
            "source": {"path": str(data / "sensors.csv")},
            "columns": {"lot": "lot", "time": "timestamp", "sensors": sensors, "keys": ["line"]},
        },
        "windows": {"window": 64, "stride": 8},
        "split": {"test_size": 0.25, "val_size": 0.2, "gap": "30min"},
        "forecast": {
            "horizon": 32,
            "patch_len": 8,
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
            "d_ff": 64,
            "dropout": 0.1,
            "quantiles": [0.1, 0.5, 0.9],
        },
        "train": {"epochs": 15, "batch_size": 32, "lr": 0.001, "patience": 4},
        "bundle": str(out / "models" / "sample_forecast"),
        "score": {
            "last_per_lot": True,
            "output": {"path": str(out / "results" / "sample_forecast.parquet")},
        },
    }
    defects: dict[str, Any] = {
        "name": "sample_defects",
        "images": {
            "path": str(data / "defects" / "manifest.csv"),
            "image_size": 64,
            "mode": "L",
            "good_class": "none",
        },
        "split": {"test_size": 0.25, "val_size": 0.2},
        "vit": {
            "patch_size": 8,
            "stem": "conv",
            "d_model": 64,
            "n_heads": 4,
            "n_layers": 4,
            "d_ff": 128,
            "dropout": 0.1,
        },
        "train": {"epochs": 40, "batch_size": 32, "lr": 0.001, "patience": 8},
        "calibration": {"cost_ratio": 5.0},
        "bundle": str(out / "models" / "sample_defects"),
        "score": {
            "images": str(data / "defects" / "images"),
            "output": {"path": str(out / "results" / "sample_defects.parquet")},
        },
    }
    if quick:
        for job, section in ((quality, "model"), (rul, "model"), (forecast, "forecast")):
            job[section].update(_TINY)
        defects["vit"].update(d_model=32, n_heads=2, n_layers=2, d_ff=64)
        for job in (quality, rul, forecast, defects):
            job["train"].update(epochs=2, patience=None)
    jobs = [quality, rul, forecast]
    if (data / "defects" / "manifest.csv").is_file():
        jobs.append(defects)
    else:
        log.warning("sample_defects: left out, %s has no defects/manifest.csv", data)
    return {job["name"]: build(JobConfig, job, file=f"demo:{job['name']}") for job in jobs}


#: The model kind of each demo job (``mfgtx train KIND``).
KINDS = {
    "sample_quality": "sensor",
    "sample_rul": "sensor",
    "sample_forecast": "forecast",
    "sample_defects": "vit",
}


def run_demo(
    data_dir: str | Path, out_dir: str | Path, *, quick: bool = False, retrain: bool = False
) -> list[dict[str, Any]]:
    """Train (unless a verified bundle exists) and score every demo job.

    Returns:
        The summary of every step, in order.
    """
    from mfgtx.jobs.score import score
    from mfgtx.jobs.train import train

    data, out = Path(data_dir), Path(out_dir)
    mode = "quick" if quick else "full"
    steps: list[dict[str, Any]] = []
    for name, config in demo_configs(data, out, quick=quick).items():
        bundle = Path(str(config.bundle))
        reused = None if retrain else _reuse(name, bundle)
        if reused is None:
            log.info("%s: training (%s)", name, mode)
            reused = {"job": name, **train(KINDS[name], config).summary()}
        steps += [reused, {"job": name, **score(config).summary()}]
    return steps


def _reuse(name: str, bundle: Path) -> dict[str, Any] | None:
    """The step of an existing bundle that verifies, or ``None``: train it."""
    from mfgtx.artifacts import BundleError, verify_bundle

    if not bundle.exists():
        return None
    try:
        verify_bundle(bundle)
    except BundleError as e:
        log.warning("%s: retraining, the existing bundle is unusable: %s", name, e)
        return None
    log.info("%s: using the existing bundle %s", name, bundle)
    return {"command": "train", "job": name, "bundle": str(bundle), "reused": True}
