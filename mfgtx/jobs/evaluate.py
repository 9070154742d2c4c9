"""``audit``, ``evaluate`` and ``bench``: check a split, judge a bundle, time its scoring.

All three take every model kind: a job with an ``images`` section is a ViT job, one with a
``forecast`` section a forecasting job, any other a SensorEncoder job; ``evaluate`` and
``bench`` follow the kind recorded in the bundle.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from mfgtx.calibration import class_probabilities
from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.prepare import load_forecast_windows, load_windows, split_windows

__all__ = ["audit_split", "bench", "evaluate"]

log = logging.getLogger(__name__)


def job_kind(config: JobConfig) -> str:
    """``vit`` (an ``images`` section), ``forecast`` (a ``forecast`` section) or ``sensor``."""
    if config.images is not None:
        return "vit"
    return "forecast" if config.forecast is not None else "sensor"


def _bundle_kind(bundle: Any) -> str:
    return str(((bundle.manifest.get("extra") or {}).get("job") or {}).get("kind", "sensor"))


def _check_kind(config: JobConfig, bundle: Any) -> str:
    kind = _bundle_kind(bundle)
    if job_kind(config) != kind:
        section = {"vit": "images", "forecast": "forecast", "sensor": "model"}[kind]
        raise ConfigError(
            f"{config.source_file}: the bundle {config.bundle} holds a {kind} model; its job "
            f"file needs the {section!r} section it was trained with"
        )
    return kind


def audit_split(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Split the job's data as ``train`` would and audit it (never raises on leakage).

    Returns:
        ``(summary, report)``: the summary line and the :class:`~mfgtx.split.AuditReport`.
    """
    kind = job_kind(config)
    if kind == "vit":
        from mfgtx.jobs.vit import prepare_images

        prep = prepare_images(config)
        report = prep.audit_report()
        summary = {
            "command": "audit",
            "passed": report.passed,
            "failed": list(report.failed),
            "method": prep.split.method,
            "images": prep.counts,
        }
        return summary, report
    windows = load_forecast_windows(config)[0] if kind == "forecast" else load_windows(config)[0]
    prep = split_windows(config, windows, strict=False)
    sets = prep.sets
    summary = {
        "command": "audit",
        "passed": prep.report.passed,
        "failed": list(prep.report.failed),
        "windows": {
            "train": len(sets.train),
            "val": len(sets.val),
            "test": len(sets.test),
            "purged": len(sets.purged),
        },
        "lots": {
            name: len(set(windows.lot[np.asarray(idx)]))
            for name, idx in (("train", sets.train), ("val", sets.val), ("test", sets.test))
        },
    }
    return summary, prep.report


def evaluate(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Judge ``config.bundle`` on the test lots of the job's data against baselines fitted on
    its training lots (same split rules as ``train``).

    Returns:
        ``(summary, report)`` with the :class:`~mfgtx.baselines.EvaluationReport`.
    """
    from mfgtx.baselines import compare, fit_baselines
    from mfgtx.jobs.score import load_model_bundle, predict_windows

    config.require("bundle")
    bundle = load_model_bundle(str(config.bundle))
    kind = _check_kind(config, bundle)
    if kind == "vit":
        return _evaluate_vit(config, bundle)
    if kind == "forecast":
        return _evaluate_forecast(config, bundle)
    task = bundle.config.task
    windows, _ = load_windows(config)
    expected = tuple(bundle.manifest["data_schema"]["sensors"])
    if windows.sensors != expected:
        raise ConfigError(
            f"{config.source_file}: data.columns.sensors: the bundle was trained on "
            f"{list(expected)}, the data gives {list(windows.sensors)}"
        )
    prep = split_windows(config, windows, strict=False)
    cols = predict_windows(bundle, windows, prep.test)
    if task == "classification":
        probs = [cols[k] for k in sorted(cols) if k.startswith("p_")]
        pred = probs[1] if len(probs) == 2 else np.stack(probs, axis=1)
    else:
        pred = np.stack([cols[t] for t in windows.targets], axis=1)
    baselines = fit_baselines(windows, prep.sets.train, task, scaler=prep.scaler)
    rul = any("rul" in t.lower() for t in windows.targets)
    report = compare(task, windows, prep.test, pred, baselines, model_name="bundle", rul=rul)
    summary = {
        "command": "evaluate",
        "bundle_id": bundle.bundle_id,
        "task": task,
        "n_test": report.n_test,
        "metrics": {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()},
        "verdict": report.verdict,
        "how_sure": report.how_sure,
        "audit_passed": prep.report.passed,
    }
    return summary, report


def _evaluate_forecast(config: JobConfig, bundle: Any) -> tuple[dict[str, Any], Any]:
    from mfgtx.baselines import compare, fit_baselines
    from mfgtx.jobs.forecast import forecast_arrays
    from mfgtx.models import interval_coverage

    job = bundle.manifest["extra"]["job"]
    windows, _, _ = load_forecast_windows(config)
    if list(windows.targets) != list(job["targets"]) or windows.horizon != int(job["horizon"]):
        raise ConfigError(
            f"{config.source_file}: forecast: the bundle forecasts {job['targets']} "
            f"{job['horizon']} rows ahead; the job asks for {list(windows.targets)} "
            f"{windows.horizon} rows ahead"
        )
    prep = split_windows(config, windows, strict=False)
    labelled = windows.labelled()
    test = np.intersect1d(prep.test, labelled)
    if len(test) == 0:
        raise ConfigError(f"{config.source_file}: split: no test window has its whole horizon")
    pred, band = forecast_arrays(bundle.model, bundle.scaler, windows, test, job["targets"])
    train = np.intersect1d(prep.sets.train, labelled)
    baselines = fit_baselines(windows, train, "forecast", scaler=prep.scaler)
    report = compare("forecast", windows, test, pred, baselines, model_name="bundle")
    metrics = {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()}
    if band is not None:
        cover = interval_coverage(windows.y[test], band, bundle.config.quantiles)  # type: ignore[index]
        metrics["interval_coverage"] = round(float(cover["coverage"]), 4)
    summary = {
        "command": "evaluate",
        "bundle_id": bundle.bundle_id,
        "task": "forecast",
        "n_test": report.n_test,
        "metrics": metrics,
        "verdict": report.verdict,
        "how_sure": report.how_sure,
        "audit_passed": prep.report.passed,
    }
    return summary, report


def _evaluate_vit(config: JobConfig, bundle: Any) -> tuple[dict[str, Any], Any]:

    from mfgtx.jobs.vit import compare_images, prepare_images, vit_logits

    job = bundle.manifest["extra"]["job"]
    assert config.images is not None
    asked = (config.images.image_size, config.images.mode)
    if asked != (int(job["image_size"]), job.get("mode", "L")):
        raise ConfigError(
            f"{config.source_file}: images: the bundle reads {job['image_size']}-px "
            f"{job.get('mode', 'L')} images; the job asks for {asked[0]}-px {asked[1]}"
        )
    prep = prepare_images(config)
    if prep.names != list(job["class_names"]):
        raise ConfigError(
            f"{config.source_file}: images.path: classes {prep.names} differ from the bundle's "
            f"{job['class_names']}"
        )
    logits = vit_logits(bundle, prep.images[prep.test])
    prob = class_probabilities(logits, bundle.calibration)
    report = compare_images(config, prep, prob, model_name="bundle")
    audit = prep.audit_report()
    summary = {
        "command": "evaluate",
        "bundle_id": bundle.bundle_id,
        "task": "classification",
        "n_test": report.n_test,
        "metrics": {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()},
        "verdict": report.verdict,
        "how_sure": report.how_sure,
        "audit_passed": audit.passed,
    }
    return summary, report


def bench(config: JobConfig, *, repeats: int = 3) -> dict[str, Any]:
    """Scoring throughput of ``config.bundle`` on the job's data: windows (or images) per
    second of the model alone (best of ``repeats``), without reading or writing files."""
    import torch

    from mfgtx.jobs.score import load_model_bundle, predict_windows

    config.require("bundle")
    bundle = load_model_bundle(str(config.bundle))
    kind = _check_kind(config, bundle)
    batch = config.score.batch_size if config.score is not None else 256
    if kind == "vit":
        from mfgtx.images import load_images
        from mfgtx.jobs.vit import image_records, vit_logits

        assert config.images is not None
        records = image_records(config.images, config.source_file)
        images, _, _ = load_images(
            records.read_bytes(), config.images.image_size, mode=config.images.mode
        )
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            vit_logits(bundle, images, batch)
            best = min(best, time.perf_counter() - t0)
        return {
            "command": "bench",
            "bundle_id": bundle.bundle_id,
            "images": len(images),
            "image_size": config.images.image_size,
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "seconds": round(best, 4),
            "images_per_s": round(len(images) / best, 1),
        }
    if kind == "forecast":
        from mfgtx.jobs.forecast import forecast_arrays

        windows = load_forecast_windows(config)[0]
        targets = bundle.manifest["extra"]["job"]["targets"]

        def run(idx: np.ndarray) -> None:
            forecast_arrays(bundle.model, bundle.scaler, windows, idx, targets, batch)
    else:
        windows, _ = load_windows(config)

        def run(idx: np.ndarray) -> None:
            predict_windows(bundle, windows, idx, batch)

    idx = np.arange(len(windows))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(idx)
        best = min(best, time.perf_counter() - t0)
    return {
        "command": "bench",
        "bundle_id": bundle.bundle_id,
        "windows": len(idx),
        "window": windows.window,
        "batch_size": batch,
        "threads": torch.get_num_threads(),
        "seconds": round(best, 4),
        "windows_per_s": round(len(idx) / best, 1),
    }
