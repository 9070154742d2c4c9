"""``demo``: run the sample plant's job files, then hand the results to the dashboard.

The demo is not a copy of the job files: it runs ``pipelines/configs/sample_*.yaml`` as they
are (lot pass/fail from ``sensors.csv`` and ``quality.csv``; remaining useful life with an
80 % interval from ``degradation.csv`` and, per operating regime, from the multi-condition
fleet of ``regimes/train.csv`` (scored on ``regimes/test.csv``); a forecaster of the process
sensors; a defect-patch ViT; a ViT on the tiles of full-size strip photos; chatter marks from
the finishing stand's vibration, where only the series' shape in time tells), training each and
scoring with it, and writes where those files say (``runs/sample/``), so ``mfgtx evaluate
pipelines/configs/sample_rul.yaml`` works right after it. ``data`` and ``out`` replace the
files' ``sample_data/`` and ``runs/sample/`` prefixes. A bundle that already exists and
verifies is reused, and so are scores written from the same bundle and input (a record beside
each output), so a second ``mfgtx demo`` goes straight to the dashboard. After its own
scoring, the quality job is scored again day by day into its history, with a drifting
temperature sensor and inspection results arriving a day later
(:mod:`mfgtx.jobs.demo_days`), so the history holds trends, drift and realized error. ``quick``
trains tiny models for two epochs, on tiles cut ``stride`` apart (a smoke test of the whole
chain, not a useful model).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
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
    "sample_chatter": "sensor",
}
#: Jobs whose data came to ``sample_data`` later: left out of an older copy of it.
_ADDED_LATER = ("sample_regimes", "sample_chatter")
#: Where they are: ``pipelines/configs`` of the repository.
CONFIGS = Path(__file__).resolve().parents[2] / "pipelines" / "configs"
#: The prefixes of their input and output paths, replaced by ``data`` and ``out``.
DATA, OUT = "sample_data", "runs/sample"

_TINY = {"d_model": 16, "n_heads": 2, "n_layers": 1, "d_ff": 32}
_TINY_VIT = {"d_model": 32, "n_heads": 2, "n_layers": 2, "d_ff": 64}
_TINY_OF = {"vit": _TINY_VIT}  # the sample ViT job keeps a few more layers
#: Wall seconds per job and phase, ``(full, quick)``: benchmarks/demo_time.py (a fresh demo into
#: a temporary folder) on 2 quiet cores (taskset) of an Intel Xeon with AVX-512, 2026-12-04,
#: 73 s in all, 19 s quick; 60 s on the project's 2-core Xeon at load under 1.5, the days
#: included (benchmarks/results/demo_time-20261204T202221Z.json). A 2-core
#: machine without AVX-512 or shared with other work takes longer; the CLI's ETA follows the
#: pace of the finished phases. ``days``: the quality job's ten days of scoring and truth
#: (:mod:`mfgtx.jobs.demo_days`, each with its watch), 1.7 s full at load 0.7 (demo_time,
#: 2026-12-04).
_SECONDS: dict[str, dict[str, tuple[float, float]]] = {
    "sample_quality": {"train": (5.7, 5.7), "score": (0.2, 0.2), "days": (3.0, 2.0)},
    "sample_rul": {"train": (0.8, 0.3), "score": (0.1, 0.1)},
    "sample_regimes": {"train": (10.1, 1.7), "score": (0.1, 0.1)},
    "sample_forecast": {"train": (3.9, 0.5), "score": (0.2, 0.2)},
    "sample_defects": {"train": (13.4, 3.3), "score": (0.2, 0.1)},
    "sample_inspection": {"train": (20.1, 3.5), "score": (10.7, 2.5)},
    "sample_chatter": {"train": (6.9, 0.8), "score": (0.2, 0.2)},
}
#: A job not in ``_SECONDS``.
_UNMEASURED = {"train": (30.0, 6.0), "score": (5.0, 1.0), "days": (10.0, 10.0)}


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
    data_dir: str | Path = DATA,
    out_dir: str | Path = OUT,
    *,
    quick: bool = False,
    progress: str | None = None,
) -> dict[str, tuple[str, JobConfig]]:
    """``{name: (kind, job)}`` of the sample job files, paths moved to ``data_dir`` and
    ``out_dir`` (defaults: as the files say); ``progress`` replaces ``train.progress``
    (how training shows itself, never what it trains).

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
        if progress is not None:
            raw["train"] = {**raw.get("train", {}), "progress": progress}
        images = (raw.get("images") or {}).get("path")
        if images is not None and not Path(images).exists():
            log.warning("%s: left out, %s does not exist", name, images)
            continue
        rows = ((raw.get("data") or {}).get("source") or {}).get("path")
        if name in _ADDED_LATER and rows is not None and not Path(rows).exists():
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
    """What a demo job trains, in plant words: ``the Transformer (classification), 4 epochs``."""
    from mfgtx.baselines import model_words
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
    parts = [model_words(model) + (f" ({task})" if task else "")]
    if members:
        parts.append(f"{members} members")
    if epochs:
        parts.append(f"{epochs} epochs")
    return ", ".join(parts)


def estimate_seconds(name: str, phase: str, *, quick: bool) -> float:
    """About how long ``phase`` (``train``, ``score``, or ``days``: the quality job's days,
    :mod:`mfgtx.jobs.demo_days`) of the demo job ``name`` takes on 2
    cores (measured, see ``_SECONDS``; a job not measured counts 30 s to train and 5 s to
    score, a fifth of that quick)."""
    full, fast = _SECONDS.get(name, {}).get(phase, _UNMEASURED[phase])
    return float(fast if quick else full)


def estimate_minutes(names: list[str], *, quick: bool) -> float:
    """About how long training and scoring ``names`` takes on a 2-core machine."""
    phases = ("train", "score")
    return sum(estimate_seconds(n, p, quick=quick) for n in names for p in phases) / 60


def run_demo(
    data_dir: str | Path = DATA,
    out_dir: str | Path = OUT,
    *,
    quick: bool = False,
    retrain: bool = False,
    progress: str | None = None,
    on_step: Callable[[int, float], None] | None = None,
) -> Iterator[dict[str, Any]]:
    """Train (unless a verified bundle exists) and score every demo job; yields the summary
    of every step as it finishes (a ``start`` step first, saying what will be trained and
    listing every phase that will run with its estimated seconds, ``plan``), then a step per
    day of the quality job (``"day"``, :func:`mfgtx.jobs.demo_days.run_days`) and one that
    ends the days (``"phase": "days"``).

    Scoring is skipped when the output is up to date: mfgtx wrote it, unchanged since, from
    the same bundle (its id) and the same input (its sha256), as recorded in
    ``<output>.demo.json`` beside it (:func:`scores_up_to_date`); the step then says
    ``"cached": True``. ``progress`` replaces each job's ``train.progress`` (the CLI's one
    overall bar passes ``"log"``); ``on_step`` is called after every optimizer step.
    """
    from mfgtx.jobs.demo_days import DAYS_JOB, days_up_to_date, run_days
    from mfgtx.jobs.score import score
    from mfgtx.jobs.train import train

    jobs = demo_jobs(data_dir, out_dir, quick=quick, progress=progress)
    bundle_ids = {
        n: None if retrain else _reused_id(n, Path(str(job.bundle))) for n, (_, job) in jobs.items()
    }
    todo = [n for n, bundle_id in bundle_ids.items() if bundle_id is None]
    fresh = {
        n: bundle_ids[n] is not None and scores_up_to_date(job, str(bundle_ids[n]))
        for n, (_, job) in jobs.items()
    }
    days_fresh = (
        DAYS_JOB in jobs
        and fresh[DAYS_JOB]
        and days_up_to_date(jobs[DAYS_JOB][1], out_dir, str(bundle_ids[DAYS_JOB]))
    )
    plan: list[dict[str, Any]] = [
        {"job": n, "phase": phase, "seconds": estimate_seconds(n, phase, quick=quick)}
        for n in jobs
        for phase in ("train", "score", "days")
        if (phase == "train" and n in todo)
        or (phase == "score" and not fresh[n])
        or (phase == "days" and n == DAYS_JOB and not days_fresh)
    ]
    yield {
        "job": "demo",
        "start": True,
        "train": todo,
        "minutes": sum(p["seconds"] for p in plan) / 60,
        "plan": plan,
    }
    for name, (kind, config) in jobs.items():
        bundle = Path(str(config.bundle))
        if name in todo:
            yield {
                "job": name,
                "training": kind,
                "bundle": str(bundle),
                "model": describe_job(kind, config),
                "minutes": estimate_seconds(name, "train", quick=quick) / 60,
            }
            trained = train(kind, config, on_step=on_step)
            yield {"job": name, **trained.summary()}
            bundle_id = trained.bundle_id
        else:
            bundle_id = bundle_ids[name]
            yield {"command": "train", "job": name, "bundle": str(bundle), "reused": True}
        if fresh[name]:
            output = str((config.score.output.path if config.score else None) or "")
            yield {"command": "score", "job": name, "cached": True, "output": output}
        else:
            outcome = score(config)
            bundle_id = bundle_id or outcome.bundle_id
            _record_scores(config, str(bundle_id))
            yield {"job": name, **outcome.summary()}
        if name == DAYS_JOB:  # after the job's own run: the days' scores are the latest
            yield from run_days(config, out_dir, str(bundle_id), rescore=not fresh[name])


def _reused_id(name: str, bundle: Path) -> str | None:
    """The id of an existing bundle that verifies, or ``None``: train it."""
    from mfgtx.artifacts import BundleError, verify_bundle

    if not bundle.exists():
        return None
    try:
        bundle_id = str(verify_bundle(bundle)["bundle_id"])
    except BundleError as e:
        log.warning("%s: retraining, the existing bundle is unusable: %s", name, e)
        return None
    log.info("%s: using the existing bundle %s", name, bundle)
    return bundle_id


# --------------------------------------------------------------------------- the score cache


def _score_files(job: JobConfig) -> tuple[Path, Path] | None:
    """``(output, its cache record)`` of a job that writes its scores to a file."""
    sc = job.score
    if sc is None or sc.output.path is None:
        return None
    output = Path(str(sc.output.path))
    return output, output.with_name(output.name + ".demo.json")


def _score_input(job: JobConfig) -> list[Path] | None:
    """The files a job's scoring reads: the sensor file, or every file of the images'
    folder (a manifest: the folder holding it, which holds the photos it lists); ``None``
    when it reads a database."""
    sc = job.score
    if sc is None:
        return None
    if job.images is not None:
        images = Path(str(sc.images or job.images.path))
        folder = images.parent if images.is_file() else images
        return sorted(p for p in folder.rglob("*") if p.is_file())
    source = sc.source or (job.data.source if job.data is not None else None)
    path = getattr(source, "path", None)
    return None if path is None else [Path(str(path))]


def _input_sha256(files: list[Path]) -> str:
    """One sha256 over the files' names and contents (in name order)."""
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def _score_key(job: JobConfig, bundle_id: str) -> dict[str, Any] | None:
    """What scores depend on: the bundle, the input's bytes and the score section."""
    files = _score_input(job)
    if files is None or not files or not all(p.is_file() for p in files):
        return None
    key: dict[str, Any] = {"bundle_id": bundle_id, "input_sha256": _input_sha256(files)}
    key["score"] = job.to_dict().get("score")
    normal: dict[str, Any] = json.loads(json.dumps(key, sort_keys=True, default=str))
    return normal  # as the record reads back


def scores_up_to_date(job: JobConfig, bundle_id: str) -> bool:
    """Whether the job's scores need no rescoring: the output and its record
    ``<output>.demo.json`` exist, mfgtx wrote both and neither changed since
    (:func:`mfgtx._files.replace_problem`), and the record names this bundle id, the sha256
    of the same input, the same score section and the output's own sha256 (a ``mfgtx score``
    run by hand since, with other settings, is not taken for the demo's)."""
    from mfgtx._files import replace_problem

    files = _score_files(job)
    if files is None or not all(p.is_file() and replace_problem(p) is None for p in files):
        return False
    try:
        recorded = json.loads(files[1].read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    key = _score_key(job, bundle_id)  # and the output is the one the demo wrote, not a rerun's
    return key is not None and recorded == {**key, "output_sha256": _input_sha256([files[0]])}


def _record_scores(job: JobConfig, bundle_id: str) -> None:
    """Write ``<output>.demo.json``: the bundle id and input sha256 the scores came from."""
    from mfgtx._files import atomic_write_bytes

    files, key = _score_files(job), _score_key(job, bundle_id)
    if files is None or key is None or not files[0].is_file():
        return
    key["output_sha256"] = _input_sha256([files[0]])
    text = json.dumps(key, indent=1, sort_keys=True) + "\n"
    atomic_write_bytes(files[1], text.encode("utf-8"))
