"""Every problem of a job's data in one run (``mfgtx check JOB``), before any training.

:func:`check_job` reads what the job reads (``data.source`` with its labels, and
``score.source`` when the job names one) lot-complete in bounded chunks, as training and
scoring do, and validates each chunk with the same rules in their collecting mode
(:class:`~mfgtx.data.Problems`): where a job stops at the first bad value, the check lists,
per lot and column, the first bad value of every lot, then goes on. A problem of a whole
input (a missing column, a column name given twice, a file that cannot be read) is listed
once per file. Each :class:`Problem` says what it does to a job (:attr:`Problem.effect`):

- ``stops the job``: a job would stop there (training and scoring);
- ``lot left out``: training leaves the lot out (listed in ``<bundle>.errors.csv``) and
  scoring does not score it (listed in its errors file);
- ``note``: read as it is, worth knowing (a time that goes back, the rows then sorted; a
  sensor without a single reading in a lot; a column left out of the sensors).

Lots too short for one window are listed too (``windows.on_short: skip`` leaves them out;
``error`` stops the job). An image job's folder, zip or manifest is read as training reads it
(columns, labels, lots and times, every listed file there); the images are not decoded, and
tiled jobs are not checked yet: the report says so.
"""

from __future__ import annotations

import logging
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from mfgtx.data import ColumnMap, DataError, DataWarning, Problems, read_table
from mfgtx.data.table import Where
from mfgtx.jobfile.config import DataSection, JobConfig, SourceSection
from mfgtx.jobfile.prepare import checked_labels
from mfgtx.jobfile.sources import (
    FILE,
    LINE,
    UngroupedLotsError,
    describe,
    iter_lot_frames,
    prepare,
    read_frame,
)
from mfgtx.kinds import WindowKind, job_kind

__all__ = ["STOPS", "CheckReport", "Problem", "check_job"]

log = logging.getLogger(__name__)

#: :attr:`Problem.effect` of a problem that stops a job.
STOPS = "stops the job"
#: :attr:`Problem.effect` of a problem that leaves its lot out.
LEFT_OUT = "lot left out"
#: :attr:`Problem.effect` of something read as it is.
NOTE = "note"


@dataclass(frozen=True)
class Problem:
    """One problem found in a job's data.

    Attributes:
        kind: the kind of problem in a few words (``bad time``, ``not a number``,
            ``label not understood``, ``lot too short``, ``missing column``...).
        effect: what it does to a job: :data:`STOPS`, ``lot left out`` or ``note``.
        source: the job-file key of the input (``data.source``, ``data.labels.source``,
            ``score.source``).
        file: the file (or SQL table) it is in, or ``None``.
        line: its line in ``file`` (CSV: header = line 1; Parquet, SQL: the row), or ``None``.
        lot: the lot, or ``None``.
        column: the column, or ``None``.
        found: the value found, as written, or ``None``.
        expected: what was expected in its place, or ``None``.
        reason: the whole message, as a job would say it.
    """

    kind: str
    effect: str
    source: str
    file: str | None
    line: int | None
    lot: str | None
    column: str | None
    found: str | None
    expected: str | None
    reason: str

    @classmethod
    def of(cls, err: DataError, source: str, effect: str) -> Problem:
        """The problem ``err`` (a :class:`~mfgtx.data.DataError`) names."""
        return cls(
            kind=err.problem or ("cannot read" if effect == STOPS else "bad value"),
            effect=effect,
            source=source,
            file=err.file,
            line=None if err.line is None else int(err.line),
            lot=err.lot,
            column=err.column,
            found=err.found,
            expected=err.expected,
            reason=str(err),
        )

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CheckReport:
    """What :func:`check_job` found.

    Attributes:
        problems: every problem, input by input in the order found.
        checked: the inputs read, in words.
        not_checked: what the check could not read, and why.
        lots: lots read (all inputs together).
    """

    problems: tuple[Problem, ...]
    checked: tuple[str, ...]
    not_checked: tuple[str, ...] = ()
    lots: int = 0

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that stop a job or leave a lot out (not the notes)."""
        return tuple(p for p in self.problems if p.effect != NOTE)

    @property
    def clean(self) -> bool:
        """No problem that stops a job or leaves a lot out."""
        return not self.errors

    def counts(self) -> dict[str, int]:
        """``{kind: problems}``, most frequent first."""
        return dict(Counter(p.kind for p in self.problems).most_common())

    def rows(self) -> list[dict[str, Any]]:
        """Every problem as a row (the columns of an errors file, and more)."""
        return [p.to_dict() for p in self.problems]


@dataclass
class _Found:
    """The problems found so far; a problem of a whole input is kept once per file."""

    problems: list[Problem] = field(default_factory=list)
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    lots: int = 0

    def stop(self, source: str, err: DataError) -> None:
        key = (source, err.problem, err.column, err.file) if err.problem else (source, str(err))
        if key not in self.seen:
            self.seen.add(key)
            self.problems.append(Problem.of(err, source, STOPS))

    def listed(self, source: str, problems: Problems) -> None:
        self.problems += [Problem.of(e, source, LEFT_OUT) for e in problems.errors]
        self.problems += [Problem.of(e, source, NOTE) for e in problems.notes]

    def note(self, source: str, kind: str, reason: str, **where: Any) -> None:
        key = (source, kind, reason)
        if key not in self.seen:
            self.seen.add(key)
            self.problems.append(_problem(kind, NOTE, source, reason, **where))


def _problem(kind: str, effect: str, source: str, reason: str, **where: Any) -> Problem:
    fields = {k: where.get(k) for k in ("file", "line", "lot", "column", "found", "expected")}
    if fields["line"] is not None:
        fields["line"] = int(fields["line"])
    return Problem(kind=kind, effect=effect, source=source, reason=reason, **fields)


def check_job(config: JobConfig) -> CheckReport:
    """Read the job's data as training and scoring would and list every problem.

    Raises:
        ConfigError: the job file names no data to check, or settings that cannot read it
            (no targets for a kind that needs them).
    """
    kind = job_kind(config)
    found = _Found()
    checked: list[str] = []
    not_checked: list[str] = []
    data = config.data
    if not isinstance(kind, WindowKind):
        _check_images(found, config, checked, not_checked)
    elif data is not None:
        section = config.section(kind.section_key)  # a scoring job may have none
        need = config.windows.window if section is None else kind.need(config.windows, section)
        labelled = kind.labelled and bool(data.columns.targets)
        cols = data.column_map(targets=labelled)
        label_frame = None
        labels = Problems()
        if data.labels is not None:
            key = "data.labels.source"
            try:
                label_frame = checked_labels(read_frame(data.labels.source), data, labels)
                checked.append(f"{key}: {describe(data.labels.source)}")
            except DataError as e:
                found.stop(key, e)
                labelled, cols = False, data.column_map(targets=False)
            found.listed(key, labels)
        effect = LEFT_OUT if config.windows.on_short == "skip" else STOPS
        _check_rows(found, "data.source", data.source, cols, need, effect, data=data,
                    labelled=labelled, label_frame=label_frame, left_out=labels.lots)  # fmt: skip
        checked.append(f"data.source: {describe(data.source)}")
    sc = config.score
    if sc is not None and sc.source is not None and isinstance(kind, WindowKind):
        if data is None:
            not_checked.append("score.source: the job has no data.columns to read it with")
        else:
            need = config.windows.window
            cols = data.column_map(targets=False)
            segment = "whole" if data.segment else None
            _check_rows(found, "score.source", sc.source, cols, need, LEFT_OUT, segment=segment)
            checked.append(f"score.source: {describe(sc.source)}")
    if not checked and not not_checked:
        from mfgtx.jobfile.config import ConfigError

        raise ConfigError(f"{config.source_file}: no data to check (data.source, score.source)")
    report = CheckReport(tuple(found.problems), tuple(checked), tuple(not_checked), found.lots)
    log.info("checked %s: %d problem(s)", ", ".join(checked) or "nothing", len(report.problems))
    return report


def _check_images(
    found: _Found, config: JobConfig, checked: list[str], not_checked: list[str]
) -> None:
    """An image job's folder, zip or manifest, read as training reads it (its columns, labels,
    lots and times, and that every listed file is there); the images are not decoded."""
    images = config.images
    if images is None or images.tiles is not None:
        not_checked.append("images: mfgtx check reads labelled images without tiles only")
        return
    from mfgtx.kinds.vit.images import image_records

    checked.append(f"images.path: {images.path}")
    try:
        records = image_records(images)
    except ValueError as e:
        name = Path(images.path).name
        found.problems.append(_problem("images cannot be read", STOPS, "images.path", str(e),
                                       file=name))  # fmt: skip
        return
    checked[-1] += f" ({len(records)} images listed)"
    not_checked.append("image files are not decoded (train and score list each one they cannot)")


def _check_rows(
    found: _Found,
    key: str,
    source: SourceSection,
    cols: ColumnMap,
    need: int,
    short: str,
    *,
    data: DataSection | None = None,
    labelled: bool = False,
    label_frame: pd.DataFrame | None = None,
    left_out: set[str] | frozenset[str] = frozenset(),
    segment: str | None = None,
) -> None:
    """Read ``source`` lot-complete in chunks and list its problems in ``found``."""
    unread: list[dict[str, object]] = []  # files that cannot be read, lots too large
    problems = Problems()
    problems.lots |= set(left_out)  # lots whose labels are bad: left out, not listed again
    if data is not None and segment is None:
        segment = data.segment
    frames = iter_lot_frames(source, cols.lot, cols.time, segment=segment, problems=unread,
                             time_format=cols.time_format)  # fmt: skip
    files: set[str] = set()  # whose columns were looked at
    try:
        for chunk in frames:
            if cols.lot in chunk.columns:
                found.lots += int(chunk[cols.lot].nunique())
            _extra_columns(found, key, chunk, cols, data, files)
            _check_chunk(found, key, chunk, cols, need, short, problems, data, labelled,
                         label_frame)  # fmt: skip
    except UngroupedLotsError as e:
        found.stop(key, e)  # training reads such an input whole; a check stops there
    except DataError as e:
        found.stop(key, e)
    for u in unread:
        what = u.get("problem") or ("lot too large" if u.get("lot") else "cannot read file")
        place = {k: u.get(k) for k in ("file", "line", "lot")}
        found.problems.append(_problem(str(what), STOPS, key, str(u["reason"]), **place))
    found.listed(key, problems)


def _extra_columns(
    found: _Found,
    key: str,
    chunk: pd.DataFrame,
    cols: ColumnMap,
    data: DataSection | None,
    files: set[str],
) -> None:
    """A note of the columns of a file the job does not read (with its sensors listed:
    a sensor misnamed in the job file, or a column of another export), once per file."""
    name = str(chunk[FILE].iloc[0]) if FILE in chunk.columns and len(chunk) else key
    if cols.sensors is None or cols.layout == "long" or name in files:
        return
    files.add(name)
    read = {*cols.non_sensor_columns, *cols.sensors, *cols.categories, FILE, LINE}
    if data is not None:
        read |= {c for c in (data.pass_column, data.labels and data.labels.on) if c}
    extra = [str(c) for c in chunk.columns if c not in read]
    if extra:
        found.note(key, "extra column", f"{name}: column(s) {extra} are not read by the job "
                   "(not in data.columns)", file=name, line=1, column=", ".join(extra),
                   found=", ".join(extra), expected="the columns of data.columns")  # fmt: skip


def _place(places: Where | None, row: int) -> dict[str, Any]:
    """``file`` and ``line`` of input row ``row`` (none for a DataFrame's)."""
    return dict(places.fields(row)) if places is not None else {}


def _check_chunk(
    found: _Found,
    key: str,
    chunk: pd.DataFrame,
    cols: ColumnMap,
    need: int,
    short: str,
    problems: Problems,
    data: DataSection | None,
    labelled: bool,
    label_frame: pd.DataFrame | None,
) -> None:
    """One lot-complete chunk: validated in the collecting mode, then its short lots and
    sensors without a reading."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        try:
            frame = chunk
            if data is not None:
                frame = prepare(chunk, data, labels=labelled, label_frame=label_frame,
                                problems=problems)  # fmt: skip
            table = read_table(frame, cols, problems=problems)
        except DataError as e:
            found.stop(key, e)
            return
    for w in caught:
        text = str(w.message)
        if issubclass(w.category, DataWarning) and "not in time order" not in text:
            found.note(key, "note", text)  # per-lot notes say which lots' times go back
    if not len(table.frame):
        return
    places = table.places
    rows = table.frame["_row"].to_numpy()
    bounds = table.lot_bounds()
    for lot, (a, b) in bounds.items():
        if b - a >= need:
            continue
        where = _place(places, int(rows[a]))
        found.problems.append(_problem(
            "lot too short", short, key,
            f"lot {lot} has {b - a} rows (from {table.where(int(rows[a]))}); a window needs "
            f"{need} (windows.window)",
            lot=lot, file=where.get("file"), line=where.get("line"), found=f"{b - a} rows",
            expected=f"at least {need} rows",
        ))  # fmt: skip
    for lot, sensors in table.unread_sensors().items():
        a = bounds[lot][0]
        where = _place(places, int(rows[a]))
        found.problems.append(_problem(
            "sensor without reading", NOTE, key,
            f"lot {lot}: no reading at all of {', '.join(sensors)} (read as missing)",
            lot=lot, column=", ".join(sensors), file=where.get("file"), line=where.get("line"),
            found="every value empty", expected="a reading",
        ))  # fmt: skip
