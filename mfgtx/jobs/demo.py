"""``demo``: run the sample plant's job files, then hand the results to the dashboard.

The demo is not a copy of the job files: it runs ``pipelines/configs/sample_*.yaml`` as they
are (lot pass/fail from ``sensors.csv`` and ``quality.csv``; remaining useful life with an
80 % interval from ``degradation.csv`` and, per operating regime, from the multi-condition
fleet of ``regimes/train.csv`` (scored on ``regimes/test.csv``); a forecaster of the process
sensors; a defect-patch ViT; a ViT on the tiles of full-size strip photos), training each and
scoring with it, and writes where those files say (``runs/sample/``), so ``mfgtx evaluate
pipelines/configs/sample_rul.yaml`` works right after it. ``data`` and ``out`` replace the
files' ``sample_data/`` and ``runs/sample/`` prefixes. A bundle that already exists and
verifies is reused, so a second ``mfgtx demo`` goes straight to the dashboard. ``quick``
trains tiny models for two epochs, on tiles cut ``stride`` apart (a smoke test of the whole
chain, not a useful model).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mfgtx.jobfile._schema import build, load_yaml
from mfgtx.jobfile.config import JobConfig, _read_job_file

__all__ = ["CONFIGS", "DATA", "OUT", "demo_configs", "demo_jobs", "run_demo"]

log = logging.getLogger(__name__)

#: The job files the demo runs, and the kind each trains (``mfgtx train KIND``).
JOBS = {
    "sample_quality": "sensor",
    "sample_rul": "sensor",
    "sample_regimes": "sensor",
    "sample_forecast": "forecast",
    "sample_defects": "vit",
    "sample_inspection": "vit",
}
#: Where they are: ``pipelines/configs`` of the repository.
CONFIGS = Path(__file__).resolve().parents[2] / "pipelines" / "configs"
#: The prefixes of their input and output paths, replaced by ``data`` and ``out``.
DATA, OUT = "sample_data", "runs/sample"

_TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
_TINY_VIT = {"d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64}
_TINY_OF = {"vit": _TINY_VIT}  # the sample ViT job keeps a few more layers
#: Training seconds per job, full and quick, measured with `mfgtx demo --retrain` (and
#: `--quick`) on a 2-core AMD EPYC (AVX2, no AMX) shared with other work, 2026-12-01: 3 min 9 s
#: for the whole demo, 33 s quick.
_SECONDS = {
    "sample_quality": (87, 3),
    "sample_rul": (14, 1),
    "sample_regimes": (31, 5),
    "sample_forecast": (8, 2),
    "sample_defects": (28, 9),
    "sample_inspection": (90, 6),  # with train_stride 16 (the tiles-win merge), measured 90 s
}


def _moved(value: Any, data: str, out: str) -> Any:
    """``value`` with its ``sample_data``/``runs/sample`` path prefixes replaced."""
    if isinstance(value, dict):
        return {k: _moved(v, data, out) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, data, out) for v in value]
    if isinstance(value, str):
        for prefix, new in ((DATA, data), (OUT, out)):
            if value == prefix or value.startswith(prefix + "/"):
                return new + value[len(prefix) :]
    return value


def demo_jobs(
    data_dir: str | Path = DATA, out_dir: str | Path = OUT, *, quick: bool = False
) -> dict[str, tuple[str, JobConfig]]:
    """``{name: (kind, job)}`` of the sample job files, paths moved to ``data_dir`` and
    ``out_dir`` (defaults: as the files say).

    Raises:
        ConfigError: a job file is missing or does not validate.
    """
    out: dict[str, tuple[str, JobConfig]] = {}
    for name, kind in JOBS.items():
        path = CONFIGS / f"{name}.yaml"
        raw = load_yaml(_read_job_file(path), file=path.name) or {}
        raw = _moved(raw, str(data_dir), str(out_dir))
        if quick:
            from mfgtx.kinds import kind_named

            section = kind_named(kind).section_key
            raw[section] = {**raw.get(section, {}), **_TINY_OF.get(kind, _TINY)}
            raw["train"] = {**raw.get("train", {}), "epochs": 2, "patience": None}
            tiles = (raw.get("images") or {}).get("tiles")
            if isinstance(tiles, dict):  # tiles side by side: not 16x (training), 4x denser
                quick_tiles = {k: v for k, v in tiles.items() if k != "train_stride"}
                raw["images"]["tiles"] = {**quick_tiles, "stride": tiles.get("size")}
        images = (raw.get("images") or {}).get("path")
        if images is not None and not Path(images).exists():
            log.warning("%s: left out, %s does not exist", name, images)
            continue
        rows = ((raw.get("data") or {}).get("source") or {}).get("path")
        if name == "sample_regimes" and rows is not None and not Path(rows).exists():
            log.warning("%s: left out, %s does not exist", name, rows)  # an older sample_data
            continue
        out[name] = (kind, build(JobConfig, raw, file=path.name))
    return out


def demo_configs(
    data_dir: str | Path = DATA, out_dir: str | Path = OUT, *, quick: bool = False
) -> dict[str, JobConfig]:
    """The demo's job configurations (see :func:`demo_jobs`)."""
    return {name: job for name, (_, job) in demo_jobs(data_dir, out_dir, quick=quick).items()}


def describe_job(kind: str, job: JobConfig) -> str:
    """What a demo job trains, in a few words: ``a SensorEncoder (classification), 4 epochs``."""
    from mfgtx.kinds import KINDS

    k = KINDS[kind]
    raw = job.to_dict()
    members = ((raw.get("train") or {}).get("ensemble") or {}).get("members")
    model = (k.ensemble_name if members and k.ensemble_name else k.model_name).removeprefix(
        "mfgtx."
    )
    section = raw.get(k.section_key) or {}
    task = section.get("task") or {"forecast": "forecast", "vit": "defect images"}.get(kind)
    epochs = (raw.get("train") or {}).get("epochs")
    parts = [f"a {model}" + (f" ({task})" if task else "")]
    if members:
        parts.append(f"{members} members")
    if epochs:
        parts.append(f"{epochs} epochs")
    return ", ".join(parts)


def estimate_minutes(names: list[str], *, quick: bool) -> float:
    """About how long training ``names`` takes on a 2-core machine (measured once, see
    ``_SECONDS``; a job not measured counts 30 s, 5 s quick)."""
    return sum(_SECONDS.get(n, (30, 5))[1 if quick else 0] for n in names) / 60


def run_demo(
    data_dir: str | Path = DATA,
    out_dir: str | Path = OUT,
    *,
    quick: bool = False,
    retrain: bool = False,
) -> Iterator[dict[str, Any]]:
    """Train (unless a verified bundle exists) and score every demo job; yields the summary
    of every step as it finishes (a ``start`` step first, saying what will be trained)."""
    from mfgtx.jobs.score import score
    from mfgtx.jobs.train import train

    jobs = demo_jobs(data_dir, out_dir, quick=quick)
    todo = [
        n for n, (_, job) in jobs.items() if retrain or _reuse(n, Path(str(job.bundle))) is None
    ]
    yield {
        "job": "demo",
        "start": True,
        "train": todo,
        "minutes": estimate_minutes(todo, quick=quick),
    }
    for name, (kind, config) in jobs.items():
        bundle = Path(str(config.bundle))
        reused = None if retrain else _reuse(name, bundle)
        if reused is None:
            yield {
                "job": name,
                "training": kind,
                "bundle": str(bundle),
                "model": describe_job(kind, config),
                "minutes": estimate_minutes([name], quick=quick),
            }
            reused = {"job": name, **train(kind, config).summary()}
        yield reused
        yield {"job": name, **score(config).summary()}


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
