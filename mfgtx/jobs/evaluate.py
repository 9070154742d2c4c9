"""``audit``, ``evaluate`` and ``bench``: check a split, judge a bundle, time its scoring."""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.prepare import load_windows, split_windows

__all__ = ["audit_split", "bench", "evaluate"]

log = logging.getLogger(__name__)


def audit_split(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Split the job's data as ``train`` would and audit it (never raises on leakage).

    Returns:
        ``(summary, report)``: the summary line and the :class:`~mfgtx.split.AuditReport`.
    """
    windows, _ = load_windows(config)
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
        "audit_passed": prep.report.passed,
    }
    return summary, report


def bench(config: JobConfig, *, repeats: int = 3) -> dict[str, Any]:
    """Scoring throughput of ``config.bundle`` on the job's data: windows per second of the
    model alone (best of ``repeats``), without reading or writing files."""
    import torch

    from mfgtx.jobs.score import load_model_bundle, predict_windows

    config.require("bundle")
    bundle = load_model_bundle(str(config.bundle))
    windows, _ = load_windows(config)
    idx = np.arange(len(windows))
    batch = config.score.batch_size if config.score is not None else 256
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        predict_windows(bundle, windows, idx, batch)
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
