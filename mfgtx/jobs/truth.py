"""``truth``: inspection results that arrive after the scores, recorded in the job's history.

``mfgtx truth JOB.yaml --labels FILE`` reads a labels file (CSV or Parquet, read as the job
reads its label table: ``data.labels.source``'s CSV options, else ``data.source``'s, and the
job's pass/fail words, the top-level ``labels``) and records each lot's outcome in the
job's history (:func:`mfgtx.history.record_truth`), where it joins the lot's predictions
(:func:`mfgtx.history.predictions_with_truth`), whenever they were scored.

What is read:

- the lot column: ``--on``, else ``data.labels.on``, else ``data.columns.lot``;
- each of the job's targets (``data.columns.targets``) the file holds, as a number; the
  ``defect`` target of a job with ``data.pass_column`` from that pass/fail column
  (``i.O.`` -> 0, ``n.i.O.`` -> 1 with ``labels: {good: [i.O.], bad: [n.i.O.]}``);
- ``--window-end COLUMN``: the outcome of one window (a machine's RUL at a cycle or a time)
  rather than of the lot as a whole.

A row that cannot be read (a value that is not a number nor a pass/fail word, no lot id, a
lot given twice) goes to the errors file (lot, file, line, column, reason; default: beside
the history, ``<labels file>.truth-errors.csv``) and the other rows are recorded; an empty
value (not inspected yet) is left out without a word. A file without the lot column or any
target column is refused, naming what it expected and what it found. Importing the same file
again replaces the values: a lot holds one outcome per target.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import DataError, Problems
from mfgtx.data.io import CsvFormat
from mfgtx.data.read_options import LabelWords
from mfgtx.data.table import COMMA_NUMBER, Where, pass_fail
from mfgtx.history import HistoryStore, history_url, record_truth
from mfgtx.history.queries import scored_lots
from mfgtx.jobfile.config import ConfigError, JobConfig, SourceSection
from mfgtx.jobfile.sources import FILE, LINE, read_frame
from mfgtx.jobs._sql import open_job_history
from mfgtx.jobs.sinks import write_errors

__all__ = ["TruthOutcome", "import_truth", "read_labels"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TruthOutcome:
    """What a truth import did (the CLI prints it as the summary line)."""

    labels: str
    history: str
    targets: tuple[str, ...]
    rows: int
    lots: int
    recorded: int
    bad_rows: int
    empty: int
    with_predictions: int
    errors_file: str
    seconds: float

    def summary(self) -> dict[str, Any]:
        return {"command": "truth", **self.__dict__, "targets": list(self.targets)}

    @property
    def message(self) -> str:
        """One line for a person: what was read, recorded and joined, what went wrong."""
        return (
            f"recorded {self.recorded} outcome(s) ({', '.join(self.targets)}) of {self.lots} "
            f"lot(s) from {self.labels} in {self.history}; {self.with_predictions} of those "
            f"lots have predictions; {self.bad_rows} bad row(s) listed in {self.errors_file}"
            + (f"; {self.empty} empty value(s) left out" if self.empty else "")
        )


def _csv_of(config: JobConfig) -> CsvFormat:
    """How the job's label table is written: ``data.labels.source``'s CSV options, each one
    it leaves out as ``data.source`` has it."""
    data = config.data
    if data is None:
        return CsvFormat()
    base = data.source.csv_format()
    return data.labels.source.csv_format(base) if data.labels is not None else base


def _window_ends(values: pd.Series) -> pd.Series:
    """Window ends as the history writes a score's: whole numbers as ``31``, times as ISO
    8601 in UTC (``2026-03-02T10:00:00+00:00``), anything else as written."""
    text = values.astype("string").str.strip()
    numbers = pd.to_numeric(text, errors="coerce")
    if numbers.notna().all() and (numbers % 1 == 0).all():
        return numbers.astype("int64").astype(str)
    times = pd.to_datetime(text, utc=True, errors="coerce", format="ISO8601")
    if times.notna().all():
        return pd.Series([t.isoformat() for t in times], index=values.index)
    return text.astype(str)


def read_labels(
    config: JobConfig,
    labels: str | Path,
    *,
    on: str | None = None,
    window_end: str | None = None,
) -> tuple[pd.DataFrame, list[dict[str, object]], int]:
    """The outcomes of a labels file: ``(frame, errors, empty)``, ``frame`` one row per lot
    (and window end) with ``lot``, ``window_end`` (``""``: the lot as a whole) and a text
    column per target; ``errors`` the bad rows (lot, file, line, column, reason); ``empty``
    the values left out for being empty.

    Raises:
        ConfigError: the job has no ``data`` section (its columns say what to read).
        DataError: the file cannot be read, or holds no lot column or no target column.
    """
    data = config.data
    if data is None:
        raise ConfigError(f"{config.source_file}: data: required (its columns name the targets)")
    fmt = _csv_of(config)
    source = SourceSection(path=str(labels)).inheriting(fmt)
    table = read_frame(source)
    shown = [str(c) for c in table.columns if c not in (FILE, LINE)]
    lot = on or (data.labels.on if data.labels is not None else data.columns.lot)
    if lot not in table.columns:
        raise DataError(
            f"{labels}: no lot column {lot!r} (expected from "
            f"{'--on' if on else 'data.labels.on' if data.labels else 'data.columns.lot'}); "
            f"found {shown}",
            column=lot,
        )
    if window_end is not None and window_end not in table.columns:
        raise DataError(
            f"{labels}: no window-end column {window_end!r} (--window-end); found {shown}",
            column=window_end,
        )
    lots = table[lot].astype("string").str.strip()
    where = Where.of(table, str(labels))
    problems = Problems()
    columns: dict[str, str] = {}  # target -> the file's column
    values: dict[str, pd.Series] = {}
    for target in data.columns.targets:
        if target == "defect" and data.pass_column is not None and data.pass_column in table:
            column = data.pass_column
            good = _passed(config.labels, table[column], column, where, lots, problems)
            values[target] = 1.0 - good
        elif target in table.columns:
            column = target
            values[target] = _numbers(table[column], column, where, lots, problems)
        else:
            continue
        columns[target] = column
    if not columns:
        wanted = [*data.columns.targets]
        if data.pass_column is not None:
            wanted.append(f"{data.pass_column} (data.pass_column)")
        raise DataError(
            f"{labels}: no outcome column; expected one of {wanted} (data.columns.targets), "
            f"found {shown}"
        )
    errors: list[dict[str, object]] = [
        {"lot": e.lot, "file": e.file or str(labels), "line": e.line, "column": e.column,
         "reason": str(e)}
        for e in problems.errors
    ]  # fmt: skip
    bad = lots.isin(problems.lots).fillna(False).to_numpy(dtype=bool)
    missing_lot = (lots.isna() | (lots == "")).to_numpy(dtype=bool)
    for i in np.flatnonzero(missing_lot).tolist():
        reason = f"{where(i)}: no lot id in column {lot!r}, expected one"
        errors.append(
            {"lot": None, "file": str(labels), "line": _line(table, i), "column": lot,
             "reason": reason}
        )  # fmt: skip
    ends = (
        _window_ends(table[window_end])
        if window_end is not None
        else pd.Series("", index=table.index)
    )
    keep = ~bad & ~missing_lot
    key = lots.astype(str) + "\0" + ends.astype(str)
    twice = key.duplicated() & keep
    for i in np.flatnonzero(twice.to_numpy()).tolist():
        first = int(np.flatnonzero((key == key.iloc[i]).to_numpy())[0])
        at = "" if window_end is None else f" at {window_end} {ends.iloc[i]}"
        errors.append({"lot": lots.iloc[i], "file": str(labels), "line": _line(table, i),
                       "column": lot, "reason": f"{where(i)}: lot {lots.iloc[i]}{at} has a "
                       f"second row (the first at {where(first)}); a labels file gives one "
                       "outcome per lot: the first is recorded"})  # fmt: skip
    keep &= ~twice.to_numpy()
    frame = pd.DataFrame({"lot": lots[keep].astype(str), "window_end": ends[keep].astype(str)})
    empty = 0
    for target, series in values.items():
        kept = series[keep]
        empty += int(kept.isna().sum())
        frame[target] = [None if pd.isna(v) else str(float(v)) for v in kept]
    for e in errors:
        log.warning("%s", e["reason"])
    return frame.reset_index(drop=True), errors, empty


def _line(table: pd.DataFrame, i: int) -> int | None:
    return int(table[LINE].iloc[i]) if LINE in table.columns else None


def _passed(
    words: LabelWords,
    values: pd.Series,
    column: str,
    where: Where,
    lots: pd.Series,
    problems: Problems,
) -> pd.Series:
    """``values`` as 1 (a good word), 0 (a bad word), NaN (empty, or not understood: listed
    in ``problems``), read with the job's pass/fail ``words``."""
    return pass_fail(values, column, where, lots.fillna(""), problems,
                     good=words.good, bad=words.bad)  # fmt: skip


def _numbers(
    values: pd.Series, column: str, where: Where, lots: pd.Series, problems: Problems
) -> pd.Series:
    """``values`` as numbers (NaN: empty, or not a number: listed in ``problems``)."""
    text = values.astype("string").str.strip()
    out = pd.to_numeric(text, errors="coerce").astype(float)
    bad = (out.isna() & text.notna() & (text != "")) | np.isinf(out)
    for i in np.flatnonzero(bad.to_numpy(dtype=bool)).tolist():
        found = str(values.iloc[i])[:40]
        comma = re.fullmatch(COMMA_NUMBER, found) is not None
        hint = (
            "; it looks like a decimal comma: the job file reads it with decimal: ',' in "
            "data.labels.source (or data.source)"
            if comma
            else ""
        )
        err = DataError(
            f"{where(i)} (lot {lots.iloc[i]}): column {column!r} holds {found!r}, "
            f"expected a number{hint}",
            column=column, lot=str(lots.iloc[i]), found=found, expected="a number",
            **where.fields(i),
        )  # fmt: skip
        problems.add(err)
    return out.where(~bad)


def _errors_path(config: JobConfig, labels: Path, url: str) -> Path:
    """The default errors file: ``<labels stem>.truth-errors.csv`` beside a SQLite history,
    else beside the score output's errors file."""
    name = f"{labels.stem}.truth-errors.csv"
    if url.startswith("sqlite:///"):
        return Path(url[len("sqlite:///") :]).parent / name
    if config.score is not None:
        return config.score.errors_path().parent / name
    return Path(name)


def import_truth(
    config: JobConfig,
    labels: str | Path,
    *,
    on: str | None = None,
    window_end: str | None = None,
    errors: str | Path | None = None,
) -> TruthOutcome:
    """Record the outcomes of the labels file ``labels`` in ``config``'s history
    (:func:`read_labels`), and list its bad rows in the errors file.

    Raises:
        ConfigError: the job has no history (``history: off``), or an errors file that
            breaks the path rules.
        DataError: the labels file cannot be read, or holds no lot or outcome column.
        HistoryError: the history cannot be opened or written.
    """
    from mfgtx.jobs._paths import PathRules, job_inputs

    t0 = time.perf_counter()
    url = history_url(config)
    if url is None:
        raise ConfigError(
            f"{config.source_file}: history: off (or no score section): no history to record "
            "the truth in; name one with the job file's history key"
        )
    labels = Path(labels)
    rules = PathRules(config.source_file, [*job_inputs(config), ("--labels", str(labels))],
                      config.bundle, written=config.paths_as_written)  # fmt: skip
    key = "--errors" if errors is not None else "--errors (default, beside the history)"
    errors_path = rules.errors_file(key, errors or _errors_path(config, labels, url))
    frame, bad, empty = read_labels(config, labels, on=on, window_end=window_end)
    store, where = open_job_history(url)
    targets = tuple(c for c in frame.columns if c not in ("lot", "window_end"))
    recorded = _record(store, frame, targets, str(labels))
    known = frame.loc[frame[list(targets)].notna().any(axis=1), "lot"].unique().tolist()
    joined = scored_lots(store, known)
    write_errors(errors_path, bad)
    outcome = TruthOutcome(
        labels=str(labels), history=where, targets=targets, rows=len(frame) + len(bad),
        lots=len(known), recorded=recorded, bad_rows=len(bad), empty=empty,
        with_predictions=len(joined), errors_file=str(errors_path),
        seconds=round(time.perf_counter() - t0, 3),
    )  # fmt: skip
    log.info("%s", outcome.message)
    return outcome


def _record(store: HistoryStore, frame: pd.DataFrame, targets: tuple[str, ...], src: str) -> int:
    """Record each target's known values (an empty one is not an outcome yet)."""
    n = 0
    per_window = bool((frame["window_end"] != "").any())
    for target in targets:
        known = frame[frame[target].notna()]
        n += record_truth(store, known, lot="lot", targets=(target,),
                          window_end="window_end" if per_window else None, source=src)  # fmt: skip
    return n
