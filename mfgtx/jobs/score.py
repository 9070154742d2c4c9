"""``score``: a bundle's predictions for new data, replaced by key in the output.

Sensor data (SensorEncoder and CausalForecaster bundles) is read lot-complete chunk by chunk
(:func:`~mfgtx.jobs.sources.iter_lot_frames`). A chunk is validated as a whole first; when
that fails, lot by lot, so that a bad value, a bad lot or a lot shorter than the window goes
to the errors file with the reason and the rest of the batch is still scored. Images
(DefectViT bundles) are read a batch at a time; a file that is not a usable image goes to the
errors file and the rest are scored. The output is written once at the end (atomic file
rename or one SQL transaction); nothing is written when the job fails.

Output columns, every row with ``bundle_id``:

- SensorEncoder: ``lot``, ``window_end`` (text: ISO 8601 time or cycle number; the key with
  ``lot``), ``window_start``, then for a classifier ``p_<k>`` per class (calibrated when the
  bundle has a calibration) and ``decision`` (1 = flagged, with the bundle's operating
  threshold), for a regressor one column per target and ``<target>_q<NN>`` per quantile.
- CausalForecaster: one row per window, sensor and step ahead: ``lot``, ``window_end`` (the
  forecast origin), ``sensor``, ``step`` (1 = the next row; key: these four), ``window_start``,
  ``forecast_at`` (the origin plus ``step`` rows at the window's mean row spacing),
  ``forecast`` and ``q<NN>`` per quantile of the band.
- DefectViT: ``image`` (the file's path relative to the scored folder, zip or manifest; the
  key), ``predicted`` (class index), ``predicted_class``, ``p_<k>`` per class, and with a
  good class ``p_defect`` and ``decision`` (1 = flagged at the bundle's threshold).
"""

from __future__ import annotations

import dataclasses
import logging
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch

from mfgtx._files import remove_leftovers
from mfgtx.calibration import class_probabilities
from mfgtx.data import ColumnMap, DataError, SensorTable, Windows, make_windows, read_table
from mfgtx.jobs._lock import output_lock
from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.prepare import TIME_WORDS, last_per_lot
from mfgtx.jobs.sinks import KEYS, describe_sink, write_errors, write_scores
from mfgtx.jobs.sources import FILE, LINE, WHOLE, describe, iter_lot_frames, without_position

__all__ = [
    "ScoreOutcome",
    "bundle_columns",
    "bundle_windows",
    "forecast_windows",
    "load_model_bundle",
    "predict_windows",
    "score",
]

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
    images: int = 0
    bad_images: int = 0
    images_per_s: float = float("nan")

    def summary(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        drop = ("lots", "windows", "bad_lots", "windows_per_s")
        if self.kind != "vit":
            drop = ("images", "bad_images", "images_per_s")
        return {"command": "score", **{k: v for k, v in out.items() if k not in drop}}

    @property
    def message(self) -> str:
        """One line for a person: what was scored, how fast, what went wrong, where it went."""
        if self.kind == "vit":
            what = (
                f"scored {self.images} images in {self.seconds:.2f} s "
                f"({self.images_per_s:.1f} images/s); {self.bad_images} bad image(s)"
            )
        else:
            what = (
                f"scored {self.windows} windows of {self.lots} lots in {self.seconds:.2f} s "
                f"({self.windows_per_s:.1f} windows/s); {self.bad_lots} bad lot(s)"
            )
        return (
            f"{what} listed in {self.errors_file}; output {self.output} holds "
            f"{self.output_rows} rows"
        )


def _time_text(values: np.ndarray) -> list[str]:
    if np.issubdtype(values.dtype, np.datetime64):
        return [t.isoformat() for t in pd.to_datetime(values, utc=True)]
    return [repr(float(v)) for v in values]


def predict_windows(
    bundle: Any, windows: Windows, idx: np.ndarray, batch_size: int = 256
) -> dict[str, np.ndarray]:
    """The bundle's output columns for windows ``idx`` (see the module docstring)."""
    model, task = bundle.model, bundle.config.task
    quantiles = tuple(getattr(bundle.config, "quantiles", ()) or ())
    targets = bundle.manifest["extra"]["job"]["targets"]
    points, qs = [], []
    with torch.no_grad():
        for a in range(0, len(idx), batch_size):
            x, observed = windows.features(idx[a : a + batch_size], bundle.scaler)
            xt, mt = torch.from_numpy(x), torch.from_numpy(observed)
            points.append(model(xt, mt).float().numpy())
            if quantiles:
                qs.append(model.forward_quantiles(xt, mt).float().numpy())
    out = np.concatenate(points) if points else np.zeros((0, bundle.config.n_outputs))
    cols: dict[str, np.ndarray] = {}
    if task == "classification":
        cal = bundle.calibration
        prob = class_probabilities(out, cal)
        for k in range(prob.shape[1]):
            cols[f"p_{k}"] = prob[:, k].astype(np.float64)
        if cal is not None and cal.threshold is not None:
            cols["decision"] = cal.decide(out).astype(np.int64)
        else:
            cols["decision"] = prob.argmax(axis=1).astype(np.int64)
    else:
        for k, name in enumerate(targets):
            cols[name] = out[:, k].astype(np.float64)
        if quantiles:
            q = np.concatenate(qs)  # (n, K, Q)
            for k, name in enumerate(targets):
                for j, level in enumerate(quantiles):
                    cols[f"{name}_q{round(level * 100):02d}"] = q[:, k, j].astype(np.float64)
    return cols


def _error(lot: object, err: Exception, where: pd.DataFrame | None = None) -> dict[str, object]:
    """An errors-file row; ``where`` holds the ``_file``/``_line`` of the lot's input rows."""
    row = getattr(err, "row", None)
    file = line = None
    reason = str(err)
    if where is not None and row is not None and row < len(where):
        file, line = str(where[FILE].iloc[row]), int(where[LINE].iloc[row])
        unit = "line" if file.lower().endswith((".csv", ".csv.gz", ".txt", ".tsv")) else "row"
        reason = re.sub(r"^DataFrame row \d+", f"{file} {unit} {line}", reason)
    return {
        "lot": None if lot is None else str(lot),
        "file": file,
        "line": line,
        "column": getattr(err, "column", None),
        "reason": reason,
    }


def bundle_columns(bundle: Any, *, targets: bool = False) -> ColumnMap:
    """The :class:`~mfgtx.data.ColumnMap` a sensor ``bundle`` was trained with (its
    ``data_schema``), without the targets and their label time unless ``targets=True``:
    data to be scored has no labels yet."""
    schema = dict(bundle.manifest.get("data_schema") or {})
    if not targets:
        schema.update(targets=(), label_time=None)
    return ColumnMap(**{k: tuple(v) if isinstance(v, list) else v for k, v in schema.items()})


def bundle_windows(
    bundle: Any,
    table: SensorTable,
    *,
    stride: int | None = None,
    on_short: Literal["error", "skip"] = "error",
) -> Windows:
    """Windows over ``table`` as a sensor ``bundle`` reads them: its window length and
    ``min_rows`` (history windows), ``stride`` rows apart (default: the training stride),
    and each lot's window ending at its latest row, so that the newest readings are scored
    whatever the stride. ``score`` and the dashboard both window through this."""
    job = (bundle.manifest.get("extra") or {}).get("job") or {}
    window = int(job.get("window") or bundle.config.max_len)
    return make_windows(
        table,
        window,
        stride=int(stride or job.get("stride") or window),
        on_short=on_short,
        min_rows=job.get("min_rows"),  # absent from bundles of earlier versions: no padding
        include_last=True,
    )


def _windows_of(
    frame: pd.DataFrame, cols: ColumnMap, cut: Callable[[SensorTable], Windows]
) -> Iterator[tuple[Windows | None, dict[str, object] | None]]:
    """Windows of the whole chunk; lot by lot (errors per lot) if the chunk has a bad lot."""
    data = without_position(frame)
    try:
        yield cut(read_table(data, cols)), None
        return
    except DataError:
        log.info("a lot of this chunk is bad: scoring its lots one by one")
    if cols.lot not in data.columns:
        raise DataError(f"missing lot column {cols.lot!r}", column=cols.lot)
    ids = data[cols.lot]
    blank = (ids.isna() | (ids.astype(str).str.strip() == "")).to_numpy()
    if blank.any():  # rows that belong to no lot: listed, never dropped silently
        first = int(np.flatnonzero(blank)[0])
        err = DataError(
            f"DataFrame row {first}: {int(blank.sum())} row(s) have no lot id in column "
            f"{cols.lot!r}; they were not scored",
            column=cols.lot,
            row=first,
        )
        yield None, _error(None, err, frame)
    for lot, part in data[~blank].groupby(cols.lot, sort=False):
        where = frame.loc[part.index, [FILE, LINE]]
        try:
            yield cut(read_table(part.reset_index(drop=True), cols)), None
        except DataError as e:
            yield None, _error(lot, e, where)


def load_model_bundle(path: str | Path) -> Any:
    """:func:`~mfgtx.artifacts.load_bundle` with every model class of mfgtx registered
    (bundles rebuild only registered classes; a fresh scoring process has imported none)."""
    import mfgtx.models  # noqa: F401  (registers SensorEncoder)
    from mfgtx.artifacts import load_bundle

    return load_bundle(path)


def forecast_windows(
    bundle: Any, windows: Windows, idx: np.ndarray, batch_size: int = 256
) -> pd.DataFrame:
    """A forecaster bundle's rows for windows ``idx`` (see the module docstring), without
    ``bundle_id``."""
    from mfgtx.jobs.forecast import forecast_arrays

    c = bundle.config
    targets = list(bundle.manifest["extra"]["job"]["targets"])
    quantiles = tuple(c.quantiles or ())
    point, band = forecast_arrays(bundle.model, bundle.scaler, windows, idx, targets, batch_size)
    n, h, k = len(idx), c.horizon, len(targets)
    step = np.tile(np.arange(1, h + 1), n * k)  # order: window, sensor, step
    window_of = np.repeat(np.arange(n), h * k)
    end, start = windows.end[idx], windows.start[idx]
    spacing = (end - start) / max(windows.window - 1, 1)
    at = end[window_of] + spacing[window_of] * step
    cols: dict[str, Any] = {
        "lot": windows.lot[idx][window_of].astype(str),
        "window_end": np.asarray(_time_text(end), dtype=object)[window_of],
        "sensor": np.tile(np.repeat(np.asarray(targets, dtype=object), h), n),
        "step": step.astype(np.int64),
        "window_start": np.asarray(_time_text(start), dtype=object)[window_of],
        "forecast_at": _time_text(at),
        "forecast": point.transpose(0, 2, 1).reshape(-1).astype(np.float64),
    }
    if band is not None:
        for j, level in enumerate(quantiles):
            cols[f"q{round(level * 100):02d}"] = (
                band[..., j].transpose(0, 2, 1).reshape(-1).astype(np.float64)
            )
    return pd.DataFrame(cols)


def _windows_frame(bundle: Any, windows: Windows, idx: np.ndarray, batch: int) -> pd.DataFrame:
    """The output rows of a sensor-window bundle (encoder or forecaster) for windows ``idx``."""
    if bundle.manifest["extra"]["job"].get("kind") == "forecast":
        part = forecast_windows(bundle, windows, idx, batch)
        part.insert(4, "bundle_id", bundle.bundle_id)
        return part
    return pd.DataFrame(
        {
            "lot": windows.lot[idx].astype(str),
            "window_end": _time_text(windows.end[idx]),
            "window_start": _time_text(windows.start[idx]),
            "bundle_id": bundle.bundle_id,
            **predict_windows(bundle, windows, idx, batch),
        }
    )


def check_score_outputs(config: JobConfig, source: Any) -> tuple[Path, Path]:
    """The output (or, for a SQL output, the errors file) to lock and the errors file,
    after the path rules (:mod:`mfgtx.jobs._paths`); nothing is written before this."""
    from mfgtx.jobs._paths import PathRules, job_inputs

    sc = config.score
    assert sc is not None
    rules = PathRules(config.source_file, job_inputs(config), bundle=config.bundle)
    if sc.output.path is not None:
        target = rules.output("score.output.path", sc.output.path)
    else:
        target = None
        for src in (source, sc.source, config.data.source if config.data else None):
            same_db = src is not None and getattr(src, "url", None) == sc.output.url
            if same_db and getattr(src, "table", None) == sc.output.table:
                raise ConfigError(
                    f"{config.source_file}: score.output.table: {sc.output.table} is the table "
                    "the job reads; write the scores to another table; nothing was written"
                )
    errors = rules.errors_file("score.errors", sc.errors_path())
    return (target or errors), errors


def score(config: JobConfig) -> ScoreOutcome:
    """Score new data with ``config.bundle``: sensor rows (``score.source``, default
    ``data.source``) for SensorEncoder and CausalForecaster bundles, images
    (``score.images``, default ``images.path``) for DefectViT bundles.

    Raises:
        ConfigError: a missing section.
        BundleError: the bundle is missing or damaged.
        LockedError: another job writes the same output.
        DataError: the input cannot be read at all (a missing file, no lot column).
    """
    config.require("bundle", "score")
    sc = config.score
    if sc is None:  # narrowed for type checkers; require() raised already
        raise ConfigError(f"{config.source_file}: score: required")
    check_score_outputs(config, None)  # before the bundle is even read
    bundle = load_model_bundle(str(config.bundle))
    job = bundle.manifest["extra"]["job"]
    if job.get("kind") == "vit":
        from mfgtx.jobs.score_images import score_images

        return score_images(config, bundle)
    source = sc.source or (config.data.source if config.data else None)
    if source is None:
        raise ConfigError(f"{config.source_file}: score.source: name the data to score")
    cols = bundle_columns(bundle)
    expected = tuple(cols.sensors or ())
    if config.data is not None:  # the job file's mapping (a new plant's export) wins
        cols = config.data.columns.column_map(targets=False)
    if not cols.sensors:
        cols = dataclasses.replace(cols, sensors=expected)
    if tuple(cols.sensors) != expected:
        raise ConfigError(
            f"{config.source_file}: data.columns.sensors: the bundle was trained on "
            f"{list(expected)}, the job names {list(cols.sensors)}"
        )

    def cut(table: SensorTable) -> Windows:
        expected = job.get("time_kind")  # not recorded by bundles of earlier versions
        if expected is not None and table.time_kind != expected:
            raise DataError(
                f"lot {table.lots[0]} has {TIME_WORDS[table.time_kind]}, but the model was "
                f"trained on {TIME_WORDS[expected]}; export its times as in training",
                column=cols.time,
                lot=table.lots[0],
            )
        return bundle_windows(bundle, table, stride=sc.stride)

    keys = ("lot", "window_end", "sensor", "step") if job.get("kind") == "forecast" else KEYS
    target, errors_path = check_score_outputs(config, source)
    t0 = time.perf_counter()
    with output_lock(target):
        remove_leftovers(target)
        remove_leftovers(errors_path)
        parts, errors = [], []
        n_lots = n_windows = 0
        t_model = 0.0
        # a segmented series is scored whole: its latest window must not be cut off
        segment = WHOLE if config.data is not None and config.data.segment else None
        problems: list[dict[str, object]] = []
        frames = iter_lot_frames(source, cols.lot, cols.time, segment=segment, problems=problems)
        for frame in frames:
            for windows, err in _windows_of(frame, cols, cut):
                if err is not None:
                    errors.append(err)
                    log.warning("lot %s not scored: %s", err["lot"], err["reason"])
                    continue
                assert windows is not None
                idx = np.arange(len(windows))
                if sc.last_per_lot:
                    idx = last_per_lot(windows, idx)
                t1 = time.perf_counter()
                parts.append(_windows_frame(bundle, windows, idx, sc.batch_size))
                t_model += time.perf_counter() - t1
                n_lots += len(windows.lots)
                n_windows += len(idx)
        errors += [{"lot": None, "column": None, **p} for p in problems]
        if not parts:
            write_errors(errors_path, errors)
            raise DataError(
                f"{describe(source)}: nothing could be scored ({len(errors)} bad lots, see "
                f"{errors_path})"
            )
        frame = pd.concat(parts, ignore_index=True)
        rows = write_scores(sc.output, frame, keys)
        write_errors(errors_path, errors)
    seconds = time.perf_counter() - t0
    log.info(
        "scored %d windows of %d lots in %.2f s (model %.2f s)", n_windows, n_lots, seconds, t_model
    )
    return ScoreOutcome(
        bundle_id=bundle.bundle_id,
        output=describe_sink(sc.output),
        errors_file=str(errors_path),
        lots=n_lots,
        windows=n_windows,
        bad_lots=len(errors),
        output_rows=rows,
        seconds=round(seconds, 3),
        windows_per_s=round(n_windows / seconds, 1) if seconds > 0 else float("nan"),
        kind=str(job.get("kind", "sensor")),
    )
