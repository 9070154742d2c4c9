"""``audit``, ``evaluate`` and ``bench``: check a split, judge a bundle, time its scoring.

All three take every model kind: a job with an ``images`` section is a ViT job, one with a
``forecast`` section a forecasting job, any other a sensor job; ``evaluate`` and ``bench``
follow the kind recorded in the bundle and judge it with the kind's own comparison, the
same one training ran.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import DataError
from mfgtx.jobfile.config import ConfigError, JobConfig
from mfgtx.jobfile.prepare import read_windows
from mfgtx.jobfile.sources import describe
from mfgtx.kinds import Kind, job_kind

__all__ = ["audit_split", "bench", "evaluate", "job_kind"]

log = logging.getLogger(__name__)


def _check_kind(config: JobConfig, predictor: Any) -> Kind[Any, Any, Any]:
    kind: Kind[Any, Any, Any] = predictor.kind
    if job_kind(config) is not kind:
        raise ConfigError(
            f"{config.source_file}: the bundle {config.bundle} holds a {kind.name} model; its "
            f"job file needs the {kind.sections[0]!r} section it was trained with"
        )
    return kind


def _rows(config: JobConfig) -> Any:
    """The job's sensor rows as a kind cuts them (:func:`read_windows`)."""
    return lambda kind: read_windows(config, kind)


def audit_split(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Split the job's data as ``train`` would and audit it (never raises on leakage).

    Returns:
        ``(summary, report)``: the summary line and the :class:`~mfgtx.split.AuditReport`.
    """
    kind = job_kind(config)
    data = kind.read(config, _rows(config))
    try:
        return kind.audit(config, data)
    finally:
        kind.release(data)


def _check_sensors(config: JobConfig, predictor: Any, windows: Any) -> None:
    expected = tuple(predictor.input_spec.columns.sensors or ())
    if windows.sensors != expected:
        raise ConfigError(
            f"{config.source_file}: data.columns.sensors: the bundle was trained on "
            f"{list(expected)}, the data gives {list(windows.sensors)}"
        )


def _external_windows(
    config: JobConfig, predictor: Any
) -> tuple[Any, list[dict[str, object]], list[object]]:
    """The external source cut as the bundle reads it: its windows, one error row per lot
    that could not be scored (too short, bad values), and every lot id the source holds."""
    from mfgtx.data import Windows
    from mfgtx.jobfile.sources import FILE, LINE, iter_lot_frames, without_position

    assert config.evaluate is not None and config.data is not None
    # what evaluate.source leaves out of its CSV options, data.source says (as for score.source)
    source = config.evaluate.source.inheriting(config.data.source.csv_format())
    try:
        predictor = predictor.with_columns(config.data.column_map(targets=False))
    except ValueError as e:
        raise ConfigError(f"{config.source_file}: {e}") from e
    cols = predictor.columns
    parts, errors, lots = [], [], []
    problems: list[dict[str, object]] = []
    for frame in iter_lot_frames(source, cols.lot, cols.time, problems=problems):
        positions = frame[[FILE, LINE]].rename(columns={FILE: "file", LINE: "line"})
        rows = without_position(frame)
        if cols.lot in rows.columns:
            lots += pd.unique(rows[cols.lot].dropna()).tolist()
        for windows, err in predictor.windows_by_lot(rows, positions):
            if err is not None:
                errors.append(err)
            elif windows is not None and len(windows):
                parts.append(windows)
    errors += [{"lot": None, "column": None, **p} for p in problems]
    if not parts:
        raise DataError(f"evaluate.source: no lot of {describe(source)} could be scored")
    return Windows.concat(parts), errors, list(dict.fromkeys(lots))


def _same_rows(train: Any, test: Any, test_idx: np.ndarray) -> list[str]:
    """Test lots whose judged window holds exactly the readings of a training window (the
    test set is, in part, the training data)."""
    import hashlib

    def digest(w: Any, i: int) -> bytes:
        x, _ = w.features(np.array([i]), None)
        return hashlib.sha256(np.ascontiguousarray(x).tobytes()).digest()

    seen = {digest(train, int(i)) for i in train.last_per_lot()}
    seen |= {digest(train, int(i)) for i in np.arange(len(train))[:: max(1, len(train) // 5000)]}
    return [str(test.lot[i]) for i in test_idx if digest(test, int(i)) in seen]


def _evaluate_external(config: JobConfig, predictor: Any, kind: Kind) -> tuple[dict[str, Any], Any]:
    """Judge the bundle on ``evaluate.source`` (each lot's last window, against
    ``evaluate.truth`` or the source's own targets) beside baselines fitted on every labelled
    window of ``data.source``.

    Raises:
        ConfigError: an image bundle, a forecast bundle with a truth table, or data whose
            sensors are not the bundle's.
        DataError: the truth table or the test source cannot be read, or no lot could be
            judged.
    """
    from dataclasses import replace

    from mfgtx.data import SensorScaler, Windows
    from mfgtx.jobfile.truth import read_truth

    ev = config.evaluate
    assert ev is not None
    kind.check_external(config)
    train_w, _ = read_windows(config, kind)
    _check_sensors(config, predictor, train_w)
    # the windows as the model reads them (per-regime normalised where the bundle has regimes)
    to_model = getattr(predictor, "model_windows", lambda w: w)
    train_w = to_model(train_w)
    targets = tuple(predictor.input_spec.targets)
    errors: list[dict[str, object]] = []
    if ev.truth is None:
        assert config.data is not None
        test_source = ev.source.inheriting(config.data.source.csv_format())
        test_config = replace(config, data=replace(config.data, source=test_source))
        test_w, _ = read_windows(test_config, kind)
        _check_sensors(config, predictor, test_w)
        test_w = to_model(test_w)
        labelled = test_w.labelled()
        test_idx = test_w.last_per_lot(labelled) if ev.last_per_lot else labelled
        n_source_lots = len(test_w.lots)
    else:
        assert config.data is not None
        cut, errors, lots = _external_windows(config, predictor)
        n_source_lots = len(lots)
        truth = read_truth(ev.truth, lots, targets, config.data.columns.lot)
        _record_truth(config, truth, targets, ev.truth.path)
        last = cut.last_per_lot()
        names = cut.lot[last].astype(str)
        known = np.isin(names, truth.index.to_numpy())
        for lot in names[~known]:
            reason = f"lot {lot}: not in the truth table {ev.truth.path}"
            errors.append({"lot": lot, "file": ev.truth.path, "line": None, "column": None,
                           "reason": reason})  # fmt: skip
        if not known.any():
            raise DataError(
                f"evaluate.truth: none of the {len(names)} scored lots is in {ev.truth.path} "
                f"(lots like {list(names[:3])}; the table has {list(truth.index[:3])})"
            )
        y = np.full((len(cut), len(targets)), np.nan, dtype=np.float32)
        y[last[known]] = truth.loc[names[known], list(targets)].to_numpy(dtype=np.float32)
        test_w = replace(cut, y=y, targets=targets, label_time=cut.end)
        test_idx = last[known]
    if len(test_idx) == 0:
        raise DataError(f"evaluate.source: {describe(ev.source)} has no labelled window to judge")
    overlap = _same_rows(train_w, test_w, test_idx)
    if overlap:
        log.warning(
            "evaluate: %d test lot(s) repeat training readings exactly (%s): the test set is "
            "partly the training data", len(overlap), ", ".join(overlap[:5]),
        )  # fmt: skip
    # one Windows holding both, the test lots renamed apart (test ids may repeat training ids)
    train_w = replace(train_w, lot=np.array([str(x) for x in train_w.lot], dtype=object))
    test_w = replace(test_w, lot=np.array([f"test {x}" for x in test_w.lot], dtype=object))
    both = Windows.concat([train_w, test_w])
    learn = train_w.labelled()
    judged = np.asarray(test_idx, dtype=np.int64) + len(train_w)
    scaler = SensorScaler.fit(both, learn)
    report, extra = kind.judge_external(predictor, both, learn, judged, scaler=scaler)
    for err in errors:
        log.warning("lot %s not judged: %s", err["lot"], err["reason"])
    summary = _summary(predictor, report, not overlap, extra)
    summary["external"] = {
        "source": describe(ev.source),
        "truth": None if ev.truth is None else ev.truth.path,
        "lots_in_source": n_source_lots,
        "lots_judged": len(judged),
        "not_judged": [{"lot": e["lot"], "reason": e["reason"]} for e in errors],
        "repeats_training_rows": overlap,
        "baselines_fitted_on": f"{len(learn)} labelled windows of {describe(config.data.source)}"
        if config.data is not None
        else None,
    }
    return summary, report


def _record_truth(
    config: JobConfig, truth: pd.DataFrame, targets: tuple[str, ...], path: str
) -> None:
    """Keep ``evaluate.truth`` in the job's history (:mod:`mfgtx.history`), where it joins
    the predictions scored before it arrived. Only a history that exists is written (a score
    run creates it); one that cannot be written is logged and the evaluation goes on."""
    from pathlib import Path

    from mfgtx.history import HistoryError, history_url, open_history, record_truth
    from mfgtx.jobs._sql import write_engine

    url = history_url(config)
    if url is None:
        return
    sqlite = url[len("sqlite:///") :] if url.startswith("sqlite:///") else None
    if sqlite is not None and not Path(sqlite).is_file():
        return
    frame = truth[list(targets)].copy()
    frame.insert(0, "__lot", truth.index.astype(str))
    try:
        store = open_history(write_engine(url), sqlite or "(the job's history URL)")
        n = record_truth(store, frame, lot="__lot", targets=targets, source=path)
    except (HistoryError, OSError, ValueError) as e:
        log.warning("the truth of %s is not recorded in the history: %s", path, e)
        return
    log.info("recorded %d truth values of %s in the history", n, path)


def _summary(predictor: Any, report: Any, audit_passed: bool, extra: dict) -> dict[str, Any]:
    metrics = {k: round(float(v), 6) for k, v in report.rows[0].metrics.items()}
    return {
        "command": "evaluate",
        "bundle_id": predictor.bundle_id,
        "task": predictor.task,
        "n_test": report.n_test,
        "metrics": {**metrics, **extra},
        "verdict": report.verdict,
        "standing": report.standing().level,
        "how_sure": report.how_sure,
        "audit_passed": audit_passed,
    }


def evaluate(config: JobConfig) -> tuple[dict[str, Any], Any]:
    """Judge ``config.bundle`` on the test lots of the job's data against baselines fitted on
    its training lots (same split rules and the same comparison as ``train``), or, with an
    ``evaluate`` section, on an external test set (:func:`_evaluate_external`).

    Returns:
        ``(summary, report)`` with the :class:`~mfgtx.baselines.EvaluationReport`.
    """
    from mfgtx.jobs.score import load_predictor

    predictor = load_predictor(config)
    kind = _check_kind(config, predictor)
    if config.evaluate is not None:
        return _evaluate_external(config, predictor, kind)
    data = kind.read(config, _rows(config))
    try:
        report, extra, audit_passed = kind.evaluate(predictor, config, data)
    finally:
        kind.release(data)
    return _summary(predictor, report, audit_passed, extra), report


def bench(config: JobConfig, *, repeats: int = 3) -> dict[str, Any]:
    """Scoring throughput of ``config.bundle`` on the job's data: windows (or images) per
    second of the model alone (best of ``repeats``), without reading or writing files; for a
    tiled bundle, full-size photos (and tiles) per second."""

    from mfgtx.jobs.score import load_predictor

    predictor = load_predictor(config)
    kind = _check_kind(config, predictor)
    batch = config.score.batch_size if config.score is not None else 256
    return kind.bench(predictor, config, _rows(config), batch=batch, repeats=repeats)
