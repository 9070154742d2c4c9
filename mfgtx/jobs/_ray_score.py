"""``score --engine ray``: a job's sensor rows scored in partitions by Ray Data actors.

The source's files are cut into partitions of consecutive whole files (:func:`plan`), each
described by plain data (file names), and read by the actor that scores it: the data paths
must be visible from every node. Each actor loads the bundle once (:class:`PartitionScorer`)
and scores its partition frame by frame; the driver gathers the frames in partition order and
the job writes them through the same locked, atomic output, errors file and history as the
one-process score (:mod:`mfgtx.jobs.score`).

Same frames, same bytes: windows are batched within a lot-complete frame, and a batch of
other windows can move a float's last bits, so each partition must cut exactly the frames
the one-process reader cuts. A lot still open at the end of a file is, in one process,
scored together with the first lots of the next file: a partition therefore also reads the
file before its first one (its frames not scored) to carry that lot over, and leaves the lot
open at its own end to the next partition. Where a partition cannot be sure of its frames (a
lot over more than two files, an empty file before it, a lot that appears in two
partitions, an input the reader refuses), the job scores the rows in this process instead,
with a warning: the output is the same, only slower.

A SQL table read by lot (``ORDER BY lot, time``) is cut into ranges of rows
(:func:`~mfgtx.jobfile.sources.sql_ranges`): each begins with the lot the whole read carries
over from a chunk and ends its chunks where the whole read does, so each partition reads
only its rows (and the start of the next range's first lot) and cuts the very frames of the
one-process reader. Any other source (one file, a query, a series scored whole, a table
whose order is not total) is read whole by each worker's partition, which scores every n-th
lot-complete frame of it (``source.chunk_rows`` rows a frame): every partition then sees
the one-process reader's frames, at the cost of reading the source once per worker.

Memory: an actor holds a chunk of the source and its partition's output rows, never the
source; the driver holds the output, as the one-process score does.
"""

from __future__ import annotations

import json
import logging
import os
import resource
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data import DataError
from mfgtx.data.io import plant_files
from mfgtx.engine import EngineError, EngineSpec, open_engine
from mfgtx.jobfile.config import ConfigError, JobConfig, SourceSection
from mfgtx.jobfile.sources import FILE, LINE, iter_lot_frames, read_chunks, sql_ranges
from mfgtx.jobfile.sql_rows import SqlRows
from mfgtx.kinds import JobScores, Scored

__all__ = ["Partition", "PartitionScorer", "plan", "score_rows_on_ray"]

log = logging.getLogger(__name__)

#: Source bytes a partition holds at most (more than one file only below this); a source
#: is cut into at least two partitions per worker where it has the files.
PARTITION_BYTES = 128 << 20
#: Rows of a SQL table a partition holds at most (about: a range ends at a chunk's end).
PARTITION_ROWS = 1_000_000


@dataclass(frozen=True)
class Partition:
    """Consecutive whole files of a source, scored by one actor.

    Attributes:
        index: its place in the source (the output keeps this order).
        files: the files it scores (``()``: the whole source, or ``rows`` of it).
        before: the file before ``files``, read for the lot it carries over, not scored.
        last: the source's last partition (it scores the lot still open at its end).
        every: the whole source only: the partition scores frames ``index``,
            ``index + every``, ... of it, and reads it all.
        rows: a range of a SQL table's rows, the only ones it reads.
    """

    index: int
    files: tuple[str, ...] = ()
    before: str | None = None
    last: bool = True
    every: int = 1
    rows: SqlRows | None = None

    @property
    def own_part(self) -> bool:
        """Whether it reads its own part of the source (files, rows), not the whole."""
        return bool(self.files) or self.rows is not None

    def words(self) -> str:
        if self.rows is not None:
            r = self.rows
            return f"partition {self.index} (rows {r.start} to {r.stop - 1} of the table)"
        if not self.files:
            if self.every > 1:
                k, n = self.index, self.every
                return f"partition {k} (frames {k}, {k + n}, ... of the whole source)"
            return f"partition {self.index} (the whole source)"
        names = [Path(f).name for f in self.files]
        span = names[0] if len(names) == 1 else f"{names[0]} .. {names[-1]}"
        return f"partition {self.index} ({span})"


def plan(
    source: SourceSection,
    workers: int,
    *,
    segmented: bool = False,
    lot: str | None = None,
    time: str | None = None,
) -> list[Partition]:
    """The partitions of ``source``: runs of whole files about even in bytes, at least two
    per worker where there are files enough, none over :data:`PARTITION_BYTES` unless one
    file is; or ranges of a SQL table's rows read ``ORDER BY lot, time``, as many, none
    over about :data:`PARTITION_ROWS`. Any other source (one file, a query, a series
    scored whole) is read whole by each of ``workers`` partitions, each scoring every
    ``workers``-th lot-complete frame. Nothing is read but the folder's listing, or the
    table's lots and their row counts."""
    if source.url is not None and not segmented and lot is not None and time is not None:
        ranges = sql_ranges(source, lot, time, 2 * workers, PARTITION_ROWS)
        if ranges is not None:
            n = len(ranges)
            return [Partition(k, last=k == n - 1, rows=r) for k, r in enumerate(ranges)]
    files = plant_files(source.path) if source.path is not None and not segmented else []
    if len(files) < 2:
        return [Partition(k, every=workers) for k in range(workers)]
    sizes = [f.stat().st_size for f in files]
    total = sum(sizes)
    n = max(min(len(files), 2 * workers), -(-total // PARTITION_BYTES))
    groups: list[list[int]] = [[]]
    done = 0
    for i, size in enumerate(sizes):
        if groups[-1] and done >= total * len(groups) / n:
            groups.append([])
        groups[-1].append(i)
        done += size
    return [
        Partition(
            index=k,
            files=tuple(str(files[i].resolve()) for i in group),
            before=str(files[group[0] - 1].resolve()) if group[0] > 0 else None,
            last=k == len(groups) - 1,
        )
        for k, group in enumerate(groups)
    ]


class _Unsure(Exception):
    """A partition cannot be sure its frames are the one-process reader's."""


def partition_frames(
    part: Partition,
    source: SourceSection,
    lot: str,
    time: str | None,
    *,
    segment: str | None,
    time_format: str | None,
    problems: list[dict[str, object]],
) -> Iterator[tuple[int, pd.DataFrame]]:
    """The lot-complete frames of ``part``, exactly as the one-process reader cuts them
    (:func:`~mfgtx.jobfile.sources.iter_lot_frames` over the whole source), each with its
    number in what the partition reads (the frames of a whole source: in the source); its
    reading problems go to ``problems``.

    Raises:
        _Unsure: the lot carried over from ``part.before`` may have begun further back.
    """
    if part.rows is not None:
        yield from _range_frames(part, part.rows, source, lot, time, time_format, problems)
        return
    if not part.files:  # the whole source; a path as this node sees it, named as the job does
        whole = None
        if source.path is not None:
            whole = read_chunks(replace(source, path=str(Path(source.path).resolve())), (),
                                problems)  # fmt: skip
        frames = iter_lot_frames(source, lot, time, segment=segment, problems=problems,
                                 time_format=time_format, chunks=whole)  # fmt: skip
        for i, frame in enumerate(frames):
            if i % part.every == part.index:
                yield i, frame
        if part.index > 0:
            problems.clear()  # each reads them all: the first partition lists them
        return
    order = (lot,) if time is None else (lot, time)
    state = {"own": part.before is None, "ended": False, "mark": 0}
    first_before: list[tuple[object, object]] = []

    def chunks() -> Iterator[pd.DataFrame]:
        if part.before is not None:
            for chunk in read_chunks(replace(source, path=part.before), order, problems):
                if not first_before and len(chunk):
                    first_before.append((chunk[FILE].iloc[0], chunk[LINE].iloc[0]))
                yield chunk
            state["own"], state["mark"] = True, len(problems)
        for file in part.files:
            yield from read_chunks(replace(source, path=file), order, problems)
        state["ended"] = True

    checked = part.before is None
    frames = iter_lot_frames(source, lot, time, segment=segment, problems=problems,
                             time_format=time_format, chunks=chunks())  # fmt: skip
    for i, frame in enumerate(frames):
        if not state["own"] or (state["ended"] and not part.last):
            continue  # the file before's lots, or the lot the next partition carries over
        if not checked:
            checked = True
            start = (frame[FILE].iloc[0], frame[LINE].iloc[0])
            if not first_before or start == first_before[0]:
                raise _Unsure(f"the lot at the start of {Path(part.files[0]).name} may begin "
                              "before the file before it")  # fmt: skip
        yield i, frame
    del problems[: int(state["mark"])]  # the file before's: the partition before lists them


def _range_frames(
    part: Partition,
    rows: SqlRows,
    source: SourceSection,
    lot: str,
    time: str | None,
    time_format: str | None,
    problems: list[dict[str, object]],
) -> Iterator[tuple[int, pd.DataFrame]]:
    """The frames of a range of a table's rows: all the whole read cuts of them but the
    next range's first lot, which this range reads only to carry it as the whole read does
    (its frame and its problems are the next range's)."""
    assert time is not None  # ranges are planned only for a table read in (lot, time) order
    order = (lot, time)
    ended = False

    def chunks() -> Iterator[pd.DataFrame]:
        nonlocal ended
        yield from read_chunks(source, order, problems, rows=rows)
        ended = True

    frames = iter_lot_frames(source, lot, time, problems=problems, time_format=time_format,
                             chunks=chunks())  # fmt: skip
    for i, frame in enumerate(frames):
        if ended and not part.last:
            continue  # the next range's first lot
        yield i, frame
    problems[:] = [p for p in problems if not _at_or_after(p.get("line"), rows.leave)]


def _at_or_after(line: object, row: int) -> bool:
    return isinstance(line, int) and line >= row


class PartitionScorer:
    """A Ray Data actor: loads the bundle once, then scores one partition per batch.

    Each batch is one row, ``partition`` (a :class:`Partition` as JSON); the result is one
    row, ``result``: the partition's frames' :class:`~mfgtx.kinds.Scored`, its reading
    problems, the lots it saw, and this worker's process id and peak memory.
    """

    def __init__(self, config: JobConfig, source: Any, bundle: str, threads: int | None) -> None:
        from mfgtx.kinds import load

        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        self.config = config
        predictor: Any = load(bundle)  # an absolute path: a worker's directory is not the job's
        self.predictor, self.source = predictor.kind.scoring(predictor, config, source)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = np.empty(len(batch["partition"]), dtype=object)
        results[:] = [self.score(Partition(**_parse(text))) for text in batch["partition"]]
        return {"result": results}

    def score(self, part: Partition) -> dict[str, Any]:
        from mfgtx.jobs.score import score_frame, scoring_segment

        cols = self.predictor.columns
        problems: list[dict[str, object]] = []
        frames: list[tuple[int, Scored]] = []
        lots: list[str] = []
        out: dict[str, Any] = {"index": part.index, "pid": os.getpid()}
        try:
            for number, frame in partition_frames(part, self.source, cols.lot, cols.time,
                                          segment=scoring_segment(self.config),
                                          time_format=cols.time_format,
                                          problems=problems):  # fmt: skip
                lots += pd.unique(frame[cols.lot].astype(str)).tolist()
                frames.append((number, score_frame(self.config, self.predictor, frame)))
        except (_Unsure, DataError, ConfigError) as e:  # the one-process reader decides
            out["unsure"] = str(e)
        lots += [str(p["lot"]) for p in problems if p.get("lot") is not None]
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        return {**out, "frames": frames, "problems": problems, "lots": lots, "peak_kib": peak}


def _parse(text: Any) -> dict[str, Any]:
    raw = json.loads(str(text))
    rows = None if raw.get("rows") is None else SqlRows(**raw["rows"])
    return {**raw, "files": tuple(raw["files"]), "rows": rows}


def score_rows_on_ray(
    config: JobConfig, predictor: Any, source: Any, raw_source: Any, spec: EngineSpec
) -> JobScores:
    """Score ``source``'s sensor rows in partitions on Ray (see the module docstring); the
    same :class:`~mfgtx.kinds.JobScores` the one-process score gives.

    ``predictor``, ``source``: as the kind prepared them for this job; ``raw_source``: as
    the job names it (each actor prepares its own the same way).

    Raises:
        EngineError: Ray cannot be started or reached, or an actor failed (named).
    """
    from mfgtx.jobs.score import _score_rows, collect_scores, scoring_segment

    workers = spec.workers or 1
    cols = predictor.columns
    parts = plan(source, workers, segmented=scoring_segment(config) is not None,
                 lot=cols.lot, time=cols.time)  # fmt: skip
    log.info("scoring %d partition(s) on Ray with %d worker(s)", len(parts), workers)
    with open_engine(spec):
        results = _run(config, raw_source, parts, spec)
    unsure = [f"{parts[r['index']].words()}: {r['unsure']}" for r in results if "unsure" in r]
    seen: dict[str, int] = {}
    for r in results if parts[0].own_part else ():  # a whole source's partitions read it all
        for lot in dict.fromkeys(r["lots"]):
            if seen.setdefault(lot, r["index"]) != r["index"]:
                unsure.append(f"lot {lot} is in {parts[seen[lot]].words()} and "
                              f"{parts[r['index']].words()}")  # fmt: skip
    if unsure:
        log.warning("scoring in this process instead of in partitions on Ray: %s", unsure[0])
        return _score_rows(config, predictor, source)
    for r in results:
        log.info("%s scored by worker %d (peak memory %.1f MiB)", parts[r["index"]].words(),
                 r["pid"], r["peak_kib"] / 1024)  # fmt: skip
    # files or rows: frames in partition order; a whole source: its frames' order in it
    key = (lambda r, n: (r["index"], n)) if parts[0].own_part else (lambda r, n: (0, n))
    numbered = [(key(r, n), f) for r in results for n, f in r["frames"]]
    frames = [f for _, f in sorted(numbered, key=lambda t: t[0])]
    problems = [p for r in results for p in r["problems"]]
    return collect_scores(predictor, frames, problems)


def _run(
    config: JobConfig, raw_source: Any, parts: list[Partition], spec: EngineSpec
) -> list[dict[str, Any]]:
    """Each partition's result, in partition order, from Ray Data actors."""
    import ray

    items = [{"partition": json.dumps(asdict(p))} for p in parts]
    workers = min(spec.workers or 1, len(parts))
    threads = spec.task_threads or 1
    with _quiet_ray_data():  # the job's own log says what runs; Ray Data's lines are noise
        try:
            ds = ray.data.from_items(items, override_num_blocks=len(items))
            scored = ds.map_batches(
                PartitionScorer,
                fn_constructor_kwargs={
                    "config": config,
                    "source": raw_source,
                    "bundle": str(Path(str(config.bundle)).resolve()),
                    "threads": threads,
                },
                batch_size=1,
                # one partition at a time per actor: the first actor up must not queue them all
                compute=ray.data.ActorPoolStrategy(size=workers, max_tasks_in_flight_per_actor=1),
                num_cpus=threads,
            )
            rows = scored.take_all()
        except Exception as e:  # an actor that failed: Ray's error, with the actor's own
            raise EngineError(f"score on Ray: a partition failed: {e}") from e
    results = sorted((row["result"] for row in rows), key=lambda r: int(r["index"]))
    if [r["index"] for r in results] != list(range(len(parts))):
        raise EngineError(f"score on Ray: {len(results)} of {len(parts)} partitions came back")
    return results


@contextmanager
def _quiet_ray_data() -> Iterator[None]:
    """Ray Data's progress bars and execution lines off while the block runs (on a
    scheduler's stderr they are dozens of lines per run), and its settings as they were
    afterwards: the process may run other Ray Data work of its own. Ray's core still prints
    its own C++ warnings (an actor's constructor arguments in the object store)."""
    import ray.data

    context = ray.data.DataContext.get_current()
    logger = logging.getLogger("ray.data")
    before = (context.enable_progress_bars, context.print_on_execution_start, logger.level)
    context.enable_progress_bars = False
    context.print_on_execution_start = False
    # ERROR: turning the bars off is itself announced with a WARNING ("Progress bars disabled")
    logger.setLevel(max(logging.ERROR, logger.getEffectiveLevel()))
    try:
        yield
    finally:
        context.enable_progress_bars, context.print_on_execution_start = before[:2]
        logger.setLevel(before[2])
