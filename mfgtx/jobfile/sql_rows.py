"""A SQL table's rows in lot-complete ranges that cut the very frames of the whole read.

:func:`~mfgtx.jobfile.sources.iter_lot_frames` reads a table ``ORDER BY lot, time`` in
chunks of ``chunk_rows`` rows and, after each chunk, passes on every lot but the last, which
it carries into the next chunk. So the frames it cuts depend on where the chunks end, and a
reader of part of the table cuts the same frames only if it starts where a carried lot
starts and ends its chunks where the whole read does. :func:`plan_rows` finds such places
from the table's lots and their row counts (one ``GROUP BY`` query, read some thousands of
lots at a time: no row itself is read), and :class:`SqlRows` describes one range: a
partition of ``score --engine ray`` reads ``WHERE lot BETWEEN low AND high ORDER BY lot,
time LIMIT stop - start`` and cuts its chunks at the multiples of ``chunk_rows`` of the
whole table (:func:`on_grid`).

That is exact only where ``ORDER BY lot, time`` is a total order: :func:`plan_rows` answers
``None`` (read the table whole) where a lot is NULL, a lot holds two rows at one time or a
row without one, or a lot is neither a whole number nor a text (the plan travels as JSON,
which carries those two exactly). A range reads the table when its partition runs: one that
finds another number of rows than the plan counted is an error (the table changed).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["SqlRows", "on_grid", "plan_rows"]

log = logging.getLogger(__name__)

#: Lots read at a time from the ``GROUP BY`` query of :func:`plan_rows`.
_LOTS_AT_A_TIME = 10_000


@dataclass(frozen=True)
class SqlRows:
    """Rows ``start`` up to ``stop`` of a table read ``ORDER BY lot, time``: its lots ``low``
    through ``high`` (``low`` ``None``: from the table's first), at most ``stop - start`` of
    their rows. The lot that begins at row ``leave`` is the next range's (read here only
    to carry it as the whole read does); ``leave`` is ``stop`` in the table's last range.

    Example:
        >>> SqlRows(start=650, stop=1400, low="L-07", high="L-12", leave=1310).count
        750
    """

    start: int
    stop: int
    low: int | str | None
    high: int | str
    leave: int

    @property
    def count(self) -> int:
        return self.stop - self.start


class _NotExact(Exception):
    """The table's order or lots do not allow exact ranges."""


def plan_rows(
    engine: Any, table: Any, lot: str, time: str, chunk_rows: int, parts: int, most_rows: int
) -> list[SqlRows] | None:
    """At least ``parts`` ranges of ``table`` (an SQLAlchemy ``FROM`` clause), more where
    the table has more than ``parts * most_rows`` rows, each ending at the first chunk end
    inside a lot past ``total * k / n`` rows; ``None`` where ranges cannot cut the whole
    read's frames exactly (see the module docstring) or the table ends before a second
    range could begin.
    """
    import sqlalchemy as sa

    lot_c: sa.ColumnClause[Any] = sa.column(lot)
    time_c: sa.ColumnClause[Any] = sa.column(time)
    counts = (
        sa.select(
            lot_c.label("lot"),
            sa.func.count().label("n"),
            sa.func.count(sa.distinct(time_c)).label("times"),
        )
        .select_from(table)
        .group_by(lot_c)
        .order_by(lot_c)
        .execution_options(stream_results=True)  # a server-side cursor: lots at a time
    )
    with engine.connect() as conn:
        total = int(conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one())
        parts = max(parts, -(-total // most_rows))
        if parts < 2 or total <= chunk_rows:
            return None
        try:
            lots = _lots(pd.read_sql(counts, conn, chunksize=_LOTS_AT_A_TIME))
            cuts, last = _cuts(lots, total, chunk_rows, parts)
        except _NotExact as e:
            log.info("the table is read whole by each partition: %s", e)
            return None
    if not cuts:
        return None
    starts = [(0, None), *((start, value) for start, value, _ in cuts)]
    ends = [*((start, value, end) for start, value, end in cuts), (total, last, total)]
    return [
        SqlRows(start=start, stop=end, low=low, high=high, leave=leave)
        for (start, low), (leave, high, end) in zip(starts, ends, strict=True)
    ]


def _lots(frames: Iterable[pd.DataFrame]) -> Iterator[tuple[int | str, int]]:
    """``(lot, rows)`` in the table's order; :class:`_NotExact` for a lot that breaks it."""
    for frame in frames:
        for value, n, times in frame.itertuples(index=False, name=None):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, str)):
                raise _NotExact(f"a lot is {value!r} ({type(value).__name__})")
            if int(times) != int(n):
                raise _NotExact(f"lot {value} has {n} rows at {times} distinct times")
            yield (int(value) if not isinstance(value, str) else value), int(n)


def _cuts(
    lots: Iterable[tuple[int | str, int]], total: int, size: int, parts: int
) -> tuple[list[tuple[int, int | str, int]], int | str]:
    """``(first row of the lot, the lot, the chunk end inside it)`` for each cut, and the
    table's last lot. A cut is a lot holding a chunk's last row: the whole read carries it
    from that chunk into the next, so the next range begins with it."""
    cuts: list[tuple[int, int | str, int]] = []
    k, at = 1, 0
    last: int | str = ""
    for value, n in lots:
        last = value
        first_end, last_end = (at // size + 1) * size, ((at + n) // size) * size
        target = k * total / parts
        if k < parts and first_end <= last_end < total and last_end >= target:
            end = max(first_end, math.ceil(target / size) * size)
            cuts.append((at, value, end))
            while k < parts and k * total / parts <= end:
                k += 1
        at += n
    if at != total:
        raise _NotExact(f"the table changed while it was counted ({total} rows, then {at})")
    return cuts, last


def on_grid(chunks: Iterable[pd.DataFrame], start: int, size: int) -> Iterator[pd.DataFrame]:
    """``chunks``, the rows from row ``start`` of a table on, cut again where the whole
    read's chunks end: at the multiples of ``size``. Holds at most a chunk and a read."""
    held: pd.DataFrame | None = None
    at = start  # the table row of held's first
    for chunk in chunks:
        held = chunk if held is None else pd.concat([held, chunk], ignore_index=True)
        while held is not None and len(held) >= (cut := (at // size + 1) * size - at):
            yield held.iloc[:cut].reset_index(drop=True)
            rest = held.iloc[cut:].reset_index(drop=True)
            held, at = (rest if len(rest) else None), at + cut
    if held is not None:
        yield held
