"""``audit``, ``evaluate`` and ``bench``: check a split, judge a bundle, time its scoring.

All three take every model kind: a job with an ``images`` section is a ViT job, one with a
``forecast`` section a forecasting job, any other a sensor job; ``evaluate`` and ``bench``
follow the kind recorded in the bundle and judge it with the kind's own comparison, the
same one training ran.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.prepare import read_windows, split
from mfgtx.kinds import FORECAST, SENSOR, VIT, Kind

__all__ = ["audit_split", "bench", "evaluate", "job_kind"]

log = logging.getLogger(__name__)


def job_kind(config: JobConfig) -> Kind:
    """The kind a job file describes: ``vit`` (an ``images`` section), ``forecast`` (a
    ``forecast`` section) or ``sensor``."""
    if config.images is not None:
        return VIT
    return FORECAST if config.forecast is not None else SENSOR


def _check_kind(config: JobConfig, predictor: Any) -> Kind:
    kind = predictor.kind
    if job_kind(config) is not kind:
        section = "images" if kind.inputs == "images" else kind.section_key
        raise ConfigError(
            f"{config.source_file}: the bundle {config.bundle} holds a {kind.name} model; its "
            f"job file needs the {section!r} section it was trained with"
        )
    return kind


def _prepare_images(config: JobConfig) -> Any:
    from mfgtx.kinds.vit import prepare_images

    config.require("images")
    assert config.images is not None
    try:
        return prepare_images(config.images, config.split, seed=config.train.seed)
    except ValueError as e:
        from mfgtx.data import DataError

        if isinstance(e, DataError):
            raise
        raise ConfigError(f"{config.source_file}: {e}") from e


def audit_split(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Split the job's data as ``train`` would and audit it (never raises on leakage).

    Returns:
        ``(summary, report)``: the summary line and the :class:`~mfgtx.split.AuditReport`.
    """
    kind = job_kind(config)
    if kind.inputs == "images":
        prep = _prepare_images(config)
        report = prep.audit_report()
        summary = {
            "command": "audit",
            "passed": report.passed,
            "failed": list(report.failed),
            "method": prep.split.method,
            "images": prep.counts,
        }
        return summary, report
    windows, _ = read_windows(config, kind)
    prep = split(config, windows, strict=False)
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


def _summary(predictor: Any, report: Any, audit_passed: bool, extra: dict) -> dict[str, Any]:
    metrics = {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()}
    return {
        "command": "evaluate",
        "bundle_id": predictor.bundle_id,
        "task": predictor.task,
        "n_test": report.n_test,
        "metrics": {**metrics, **extra},
        "verdict": report.verdict,
        "how_sure": report.how_sure,
        "audit_passed": audit_passed,
    }


def evaluate(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Judge ``config.bundle`` on the test lots of the job's data against baselines fitted on
    its training lots (same split rules and the same comparison as ``train``).

    Returns:
        ``(summary, report)`` with the :class:`~mfgtx.baselines.EvaluationReport`.
    """
    from mfgtx.jobs.score import load_predictor

    predictor = load_predictor(config)
    kind = _check_kind(config, predictor)
    if kind.inputs == "images":
        prep = _prepare_images(config)
        spec = predictor.input_spec
        asked = (config.images.image_size, config.images.mode)  # type: ignore[union-attr]
        if asked != (spec.image_size, spec.mode):
            raise ConfigError(
                f"{config.source_file}: images: the bundle reads {spec.image_size}-px "
                f"{spec.mode} images; the job asks for {asked[0]}-px {asked[1]}"
            )
        if tuple(prep.names) != tuple(spec.class_names):
            raise ConfigError(
                f"{config.source_file}: images.path: classes {prep.names} differ from the "
                f"bundle's {list(spec.class_names)}"
            )
        report, extra = kind.judge(predictor, prep, model_name="bundle")  # type: ignore[attr-defined]
        return _summary(predictor, report, prep.audit_report().passed, extra), report
    windows, _ = read_windows(config, kind)
    spec = predictor.input_spec
    expected = tuple(spec.columns.sensors or ())
    if windows.sensors != expected:
        raise ConfigError(
            f"{config.source_file}: data.columns.sensors: the bundle was trained on "
            f"{list(expected)}, the data gives {list(windows.sensors)}"
        )
    if kind is FORECAST and (
        tuple(windows.targets) != tuple(spec.targets) or windows.horizon != spec.horizon
    ):
        raise ConfigError(
            f"{config.source_file}: forecast: the bundle forecasts {list(spec.targets)} "
            f"{spec.horizon} rows ahead; the job asks for {list(windows.targets)} "
            f"{windows.horizon} rows ahead"
        )
    prep = split(config, windows, strict=False)
    if kind is FORECAST:
        labelled = windows.labelled()
        report, extra = kind.judge(  # type: ignore[attr-defined]
            predictor, windows, np.intersect1d(prep.sets.train, labelled),
            np.intersect1d(prep.test, labelled), scaler=prep.scaler, model_name="bundle",
        )  # fmt: skip
    else:
        report = kind.judge(  # type: ignore[attr-defined]
            predictor, windows, prep.sets.train, prep.test, scaler=prep.scaler,
            model_name="bundle",
        )  # fmt: skip
        extra = {}
    return _summary(predictor, report, prep.report.passed, extra), report


def bench(config: JobConfig, *, repeats: int = 3) -> dict[str, Any]:
    """Scoring throughput of ``config.bundle`` on the job's data: windows (or images) per
    second of the model alone (best of ``repeats``), without reading or writing files."""
    import torch

    from mfgtx.jobs.score import load_predictor

    predictor = load_predictor(config)
    kind = _check_kind(config, predictor)
    batch = config.score.batch_size if config.score is not None else 256
    if kind.inputs == "images":
        from mfgtx.kinds.vit import image_records

        assert config.images is not None
        records = image_records(config.images)
        images, _, _ = predictor.load(records.read_bytes())
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            predictor.logits(images, batch)
            best = min(best, time.perf_counter() - t0)
        return {
            "command": "bench",
            "bundle_id": predictor.bundle_id,
            "images": len(images),
            "image_size": predictor.input_spec.image_size,
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "seconds": round(best, 4),
            "images_per_s": round(len(images) / best, 1),
        }
    windows, _ = read_windows(config, kind)
    idx = np.arange(len(windows))
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        predictor.rows(windows, idx, batch_size=batch)
        best = min(best, time.perf_counter() - t0)
    return {
        "command": "bench",
        "bundle_id": predictor.bundle_id,
        "windows": len(idx),
        "window": windows.window,
        "batch_size": batch,
        "threads": torch.get_num_threads(),
        "seconds": round(best, 4),
        "windows_per_s": round(len(idx) / best, 1),
    }
