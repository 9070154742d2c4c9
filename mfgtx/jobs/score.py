"""``score``: a bundle's predictions for new data, replaced by key in the output.

The job reads the input and writes the output; the bundle's predictor
(:func:`mfgtx.load`, :mod:`mfgtx.kinds`) turns each batch of input into output rows, as it
does for the dashboard and for Python users. Sensor rows (SensorEncoder and CausalForecaster
bundles) are read lot-complete chunk by chunk (:func:`~mfgtx.jobfile.sources.iter_lot_frames`);
a bad value, a bad lot or a lot shorter than the window goes to the errors file with its lot,
file and line, and the rest of the batch is still scored. Images (DefectViT bundles) are read
a batch at a time; a file that is not a usable image goes to the errors file. The output is
written once at the end (atomic file rename or one SQL transaction); nothing is written when
the job fails. The output columns of each kind are described in :mod:`mfgtx.kinds.sensor`,
:mod:`~mfgtx.kinds.forecast` and :mod:`~mfgtx.kinds.vit`.

Every run is recorded in the job's history (:mod:`mfgtx.history`, default ``history.db``
beside the output; ``history: off`` records nothing): a ``running`` row before scoring,
then, after the output is written, all its rows and its status in one transaction. The
output comes first: a history that cannot be written is logged and named in the summary
(``history``), and the job still succeeds with its output in place.

With an ``alerts:`` section, the recorded run's flagged lots and predictions beyond the job's
``limits:`` raise alerts (:func:`mfgtx.alerts.notify`, source ``score:<job>``), each sent once
and cleared when a later run scores the lot without it; the summary's ``alerts`` says how many
opened, were sent, failed and cleared. Alerts need the history: a run it does not record
checks none. A delivery that fails is logged and retried by the next run, never failing the
job.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from mfgtx._files import remove_leftovers
from mfgtx.alerts import notify, score_findings
from mfgtx.data import DataError, DataWarning
from mfgtx.engine import EngineSpec
from mfgtx.history import HistoryError, HistoryStore, history_url, job_name
from mfgtx.jobfile.config import ConfigError, JobConfig, engine_spec
from mfgtx.jobfile.sources import FILE, LINE, WHOLE, describe, iter_lot_frames, without_position
from mfgtx.jobs._lock import output_lock
from mfgtx.jobs._sql import open_job_history
from mfgtx.jobs.sinks import describe_sink, write_errors, write_scores
from mfgtx.kinds import JobScores, Scored, WindowKind
from mfgtx.kinds._job import RowScorer

__all__ = ["ScoreOutcome", "check_score_outputs", "load_predictor", "score"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScoreOutcome:
    """What a scoring job did (the CLI prints it as the summary line)."""

    bundle_id: str
    output: str
    errors_file: str
    lots: int
    windows: int
    bad_lots: int
    output_rows: int
    seconds: float
    windows_per_s: float
    kind: str = "sensor"
    unit: str = "windows"
    images: int = 0
    bad_images: int = 0
    images_per_s: float = float("nan")
    warnings: int = 0
    history: str = "off"
    alerts: str = "off"

    def summary(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        drop: tuple[str, ...] = ("lots", "windows", "bad_lots", "windows_per_s", "warnings")
        if self.unit != "images":
            drop = ("images", "bad_images", "images_per_s")
        drop += ("unit",)
        return {"command": "score", **{k: v for k, v in out.items() if k not in drop}}

    @property
    def message(self) -> str:
        """One line for a person: what was scored, how fast, what went wrong, where it went."""
        if self.unit == "images":
            what = (
                f"scored {self.images} images in {self.seconds:.2f} s "
                f"({self.images_per_s:.1f} images/s); {self.bad_images} bad image(s)"
            )
        else:
            what = (
                f"scored {self.windows} windows of {self.lots} lots in {self.seconds:.2f} s "
                f"({self.windows_per_s:.1f} windows/s); {self.bad_lots} bad lot(s)"
            )
            if self.warnings:
                what += f" and {self.warnings} warning(s) about scored lots"
        alerts = "" if self.alerts == "off" else f"; alerts: {self.alerts}"
        return (
            f"{what} listed in {self.errors_file}; output {self.output} holds "
            f"{self.output_rows} rows; history: {self.history}{alerts}"
        )


def load_predictor(config: JobConfig) -> Any:
    """The predictor of ``config.bundle`` (:func:`mfgtx.load`).

    Raises:
        BundleError: the bundle is missing, damaged or unsigned where a key is configured.
    """
    from mfgtx.kinds import load

    config.require("bundle")
    return load(str(config.bundle))


def check_score_outputs(config: JobConfig, source: Any) -> tuple[Path, Path]:
    """The output (or, for a SQL output, the errors file) to lock and the errors file,
    after the path rules (:mod:`mfgtx.jobs._paths`); nothing is written before this."""
    from mfgtx.jobs._paths import PathRules

    sc = config.score
    assert sc is not None
    rules = PathRules.of(config, bundle=config.bundle)
    if sc.output.path is not None:
        target = rules.output("score.output.path", sc.output.path)
    else:
        target = None
        reads = [("score.source", source), ("score.source", sc.source)]
        reads.append(("data.source", config.data.source if config.data else None))
        rules.sql_output("score.output.table", str(sc.output.url), str(sc.output.table), reads)
    key = "score.errors" if sc.errors is not None else "score.errors (default, beside the output)"
    errors = rules.errors_file(key, sc.errors_path())
    return (target or errors), errors


def score(config: JobConfig, *, engine: EngineSpec | None = None) -> ScoreOutcome:
    """Score new data with ``config.bundle``: sensor rows (``score.source``, default
    ``data.source``) for sensor and forecast bundles, images (``score.images``, default
    ``images.path``) for ViT bundles.

    ``engine``: where the sensor rows are scored (default: the job's ``engine`` section,
    :func:`~mfgtx.jobfile.config.engine_spec`; without one, in this process); on Ray
    (``EngineSpec("ray")``) the source is scored in partitions by Ray Data
    actors (:mod:`mfgtx.jobs._ray_score`), and the output, errors file and history are
    the ones this process would write, byte for byte.

    Raises:
        ConfigError: a missing section, or columns other than the bundle's.
        BundleError: the bundle is missing or damaged.
        LockedError: another job writes the same output.
        DataError: the input cannot be read at all, or nothing in it could be scored.
    """
    config.require("bundle", "score")
    sc = config.score
    if sc is None:  # narrowed for type checkers; require() raised already
        raise ConfigError(f"{config.source_file}: score: required")
    engine = engine if engine is not None else engine_spec(config)
    check_score_outputs(config, None)  # before the bundle is even read
    predictor = load_predictor(config)
    kind = predictor.kind
    source, reads = kind.score_source(config)
    target, errors_path = check_score_outputs(config, reads)
    if engine is not None and engine.name != "local" and not isinstance(kind, WindowKind):
        log.warning("a %s bundle scores its images in this process: engine %s scores sensor "
                    "rows", kind.name, engine.name)  # fmt: skip
    history = _HistoryRun.start(config, predictor.bundle_id, kind.name)
    t0 = time.perf_counter()
    try:
        scored, rows = _score_and_write(
            config, predictor, source, target, errors_path, _row_scorer(config, source, engine)
        )
    except BaseException as e:
        history.fail(e, time.perf_counter() - t0)
        raise
    seconds = time.perf_counter() - t0
    n_bad = len(scored.errors) - scored.warnings
    extra = getattr(getattr(predictor, "columns", None), "keys", ())  # the data's line, ...
    bad = n_bad if scored.unit != "images" else len(scored.errors)
    recorded = history.finish(scored, bad, seconds, extra)
    alerts = history.alert(
        config, scored, getattr(getattr(predictor, "columns", None), "lot", "lot"), extra
    )
    if scored.unit == "images":
        n = scored.lots
        log.info("scored %d images in %.2f s (%d bad)", n, seconds, len(scored.errors))
        return ScoreOutcome(
            bundle_id=predictor.bundle_id,
            output=describe_sink(sc.output),
            errors_file=str(errors_path),
            lots=0,
            windows=0,
            bad_lots=0,
            output_rows=rows,
            seconds=round(seconds, 3),
            windows_per_s=float("nan"),
            kind=kind.name,
            unit="images",
            images=n,
            bad_images=len(scored.errors),
            images_per_s=round(n / seconds, 1) if seconds > 0 else float("nan"),
            history=recorded,
            alerts=alerts,
        )
    log.info("scored %d windows of %d lots in %.2f s", scored.windows, scored.lots, seconds)
    return ScoreOutcome(
        bundle_id=predictor.bundle_id,
        output=describe_sink(sc.output),
        errors_file=str(errors_path),
        lots=scored.lots,
        windows=scored.windows,
        bad_lots=n_bad,
        output_rows=rows,
        seconds=round(seconds, 3),
        windows_per_s=round(scored.windows / seconds, 1) if seconds > 0 else float("nan"),
        kind=kind.name,
        warnings=scored.warnings,
        history=recorded,
        alerts=alerts,
    )


def _row_scorer(config: JobConfig, raw_source: Any, engine: EngineSpec | None) -> RowScorer:
    """How the job's sensor rows are scored: in this process, or on Ray in partitions."""
    if engine is None or engine.name == "local":
        return lambda p, src: _score_rows(config, p, src)
    from mfgtx.jobs._ray_score import score_rows_on_ray

    return lambda p, src: score_rows_on_ray(config, p, src, raw_source, engine)


def _score_and_write(
    config: JobConfig,
    predictor: Any,
    source: Any,
    target: Path,
    errors_path: Path,
    score_rows: RowScorer,
) -> tuple[JobScores, int]:
    """Score ``source`` and write the output and the errors file under the output's lock."""
    sc = config.score
    assert sc is not None
    kind = predictor.kind
    with output_lock(target):
        remove_leftovers(target)
        remove_leftovers(errors_path)
        scored = kind.score(predictor, config, source, score_rows)
        if not len(scored.rows):
            write_errors(errors_path, scored.errors)
            if scored.unit == "images":
                raise DataError(
                    f"{source}: no image could be scored ({len(scored.errors)} bad, see "
                    f"{errors_path})"
                )
            raise DataError(
                f"{describe(source)}: nothing could be scored "
                f"({len(scored.errors) - scored.warnings} bad lots, see {errors_path})"
            )
        rows = write_scores(sc.output, scored.rows, scored.keys)
        write_errors(errors_path, scored.errors)
    return scored, rows


class _HistoryRun:
    """One run in the job's history; every failure of the history is logged and kept as
    the summary's ``history`` text, never raised: the scores are the job's output."""

    def __init__(self, store: HistoryStore | None, run_id: str | None, state: str) -> None:
        self.store, self.run_id, self.state = store, run_id, state
        self.recorded = False

    @classmethod
    def start(cls, config: JobConfig, bundle_id: str, kind: str) -> _HistoryRun:
        url = history_url(config)
        if url is None:
            return cls(None, None, "off")
        try:
            store, where = open_job_history(url)
            run_id = store.start_run(bundle_id=bundle_id, kind=kind, job_file=config.source_file)
        except (HistoryError, OSError, ValueError) as e:
            log.warning("this run is not recorded in the history: %s", e)
            return cls(None, None, f"not recorded: {e}")
        return cls(store, run_id, where)

    def fail(self, error: BaseException, seconds: float) -> None:
        if self.store is None or self.run_id is None:
            return
        try:
            self.store.fail_run(self.run_id, str(error) or type(error).__name__, seconds=seconds)
        except HistoryError as e:
            log.warning("the failed run is not marked in the history: %s", e)

    def finish(self, scored: JobScores, bad: int, seconds: float, extra: Any = ()) -> str:
        if self.store is None or self.run_id is None:
            return self.state
        flags: dict[str, list[str]] = {}
        for err in scored.errors:
            if err.get("lot") is not None:
                flags.setdefault(str(err["lot"]), []).append(str(err.get("reason", "")))
        try:
            n = self.store.finish_run(self.run_id, scored.rows, scored.keys, bad_lots=bad,
                                      seconds=round(seconds, 3), flags=flags,
                                      extra_keys=tuple(extra))  # fmt: skip
        except HistoryError as e:
            log.warning("this run's rows are not recorded in the history: %s", e)
            return f"not recorded: {e}"
        self.recorded = True
        return f"{self.state} (run {self.run_id}, {n} rows)"

    def alert(self, config: JobConfig, scored: JobScores, lot_name: str, extra: Any) -> str:
        """Raise the recorded run's alerts (:func:`mfgtx.alerts.notify`); the summary's
        ``alerts`` text. A history failure is logged, never raised."""
        if config.alerts is None:
            return "off"
        if self.store is None or not self.recorded:
            log.warning("alerts are not checked: they need the history, and this run is "
                        "not recorded in it")  # fmt: skip
            return "not checked: alerts need the history, which did not record this run"
        job = job_name(config)
        found, checked = score_findings(scored.rows, lot_name=lot_name, extra_keys=tuple(extra),
                                        limits=config.limits)  # fmt: skip
        try:
            outcome = notify(self.store, config.alerts, found, source=f"score:{job}",
                             checked_subjects=checked)  # fmt: skip
        except HistoryError as e:
            log.warning("alerts are not checked: %s", e)
            return f"not checked: {e}"
        return outcome.text


def _score_rows(config: JobConfig, predictor: Any, source: Any) -> JobScores:
    """Score the sensor rows of ``source`` lot-complete chunk by chunk with a window
    predictor: every scored row, and an errors-file row per bad lot (and per warning)."""
    problems: list[dict[str, object]] = []
    frames = iter_lot_frames(source, predictor.columns.lot, predictor.columns.time,
                             segment=scoring_segment(config), problems=problems,
                             time_format=predictor.columns.time_format)  # fmt: skip
    scored = (score_frame(config, predictor, frame) for frame in frames)
    return collect_scores(predictor, scored, problems)


def scoring_segment(config: JobConfig) -> str | None:
    """How a job without lots is cut into lots for scoring: a segmented series is scored
    whole (:data:`~mfgtx.jobfile.sources.WHOLE`), its latest window must not be cut off."""
    return WHOLE if config.data is not None and config.data.segment else None


def score_frame(config: JobConfig, predictor: Any, frame: pd.DataFrame) -> Scored:
    """One lot-complete frame (:func:`~mfgtx.jobfile.sources.iter_lot_frames`) scored with
    the job's ``score`` settings: the same frame gives the same rows wherever it is scored
    (windows are batched within a frame, so the frames themselves must be the same)."""
    sc = config.score
    assert sc is not None
    positions = frame[[FILE, LINE]].rename(columns={FILE: "file", LINE: "line"})
    with warnings.catch_warnings():  # each is a row of the errors file, logged by collect
        warnings.simplefilter("ignore", DataWarning)
        return predictor.score(
            without_position(frame),
            stride=sc.stride,
            last_per_lot=sc.last_per_lot,
            batch_size=sc.batch_size,
            positions=positions,
        )


def collect_scores(
    predictor: Any, frames: Iterable[Scored], problems: list[dict[str, object]]
) -> JobScores:
    """The job's scores from its frames in reading order, and the reading ``problems``
    (files that could not be read, lots too large or cut off) after them."""
    parts, errors = [], []
    n_lots = n_windows = n_warnings = 0
    for scored in frames:
        for err in scored.errors:
            log.warning("lot %s not scored: %s", err["lot"], err["reason"])
        for note in scored.warnings:
            log.warning("lot %s: %s", note["lot"], note["reason"])
        errors += scored.errors + scored.warnings
        n_warnings += len(scored.warnings)
        if len(scored.rows):
            parts.append(scored.rows)
        n_lots += scored.lots
        n_windows += scored.windows
    errors += [{"lot": None, "column": None, **p} for p in problems]
    rows = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    return JobScores(
        rows, errors, predictor.keys, "windows", lots=n_lots, windows=n_windows,
        warnings=n_warnings,
    )  # fmt: skip
