"""Ranges of a SQL table's rows (``score --engine ray``'s partitions of a table) cut the very
frames and problems of the whole read, with no Ray: lots over several chunks, a lot too
large to hold across a cut, whole numbers and texts as lots; and where the table's order is
not total, no ranges at all."""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import DataError
from mfgtx.jobfile.config import SourceSection
from mfgtx.jobfile.sources import iter_lot_frames, read_chunks, sql_ranges
from mfgtx.jobfile.sql_rows import SqlRows, on_grid
from mfgtx.jobs._ray_score import Partition, partition_frames


def _table(path: Path, *, text_lots: bool, seed: int = 0, sizes=None) -> str:
    """A table of 40 lots of 1 to 60 rows (one of 90), or of ``sizes`` rows, its rows stored
    out of order."""
    rng = np.random.default_rng(seed)
    if sizes is None:
        sizes = rng.integers(1, 60, 40)
        sizes[17] = 90  # over max_lot_rows below
    frames = []
    for k, n in enumerate(sizes):
        lot = f"L-{k:03d}" if text_lots else 1000 + 7 * k
        frames.append(pd.DataFrame({"lot": lot, "t": np.arange(n) * 60.0,
                                    "x": rng.normal(size=n).round(3)}))  # fmt: skip
    rows = pd.concat(frames, ignore_index=True).sample(frac=1.0, random_state=seed)
    with sqlite3.connect(path) as db:
        rows.to_sql("sensors", db, index=False)
    return f"sqlite:///{path}"


def _whole_and_ranges(source: SourceSection, parts: int):
    whole_problems: list[dict[str, object]] = []
    whole = list(iter_lot_frames(source, "lot", "t", problems=whole_problems))
    ranges = sql_ranges(source, "lot", "t", parts, most_rows=10**9)
    assert ranges is not None and len(ranges) >= 2
    frames, problems = [], []
    for k, rows in enumerate(ranges):
        part = Partition(k, last=k == len(ranges) - 1, rows=rows)
        mine: list[dict[str, object]] = []
        frames += [f for _, f in partition_frames(part, source, "lot", "t", segment=None,
                                                  time_format=None, problems=mine)]  # fmt: skip
        problems += mine
    return (whole, whole_problems), (frames, problems), ranges


@pytest.mark.parametrize("text_lots", [False, True])
@pytest.mark.parametrize(("chunk_rows", "parts"), [(7, 2), (25, 3), (64, 5), (300, 4)])
def test_ranges_cut_the_frames_and_problems_of_the_whole_read(
    tmp_path, text_lots, chunk_rows, parts
) -> None:
    url = _table(tmp_path / "plant.db", text_lots=text_lots)
    source = SourceSection(url=url, table="sensors", chunk_rows=chunk_rows, max_lot_rows=80)
    (whole, whole_problems), (frames, problems), ranges = _whole_and_ranges(source, parts)
    assert ranges[0].start == 0 and ranges[-1].stop == sum(map(len, whole)) + 90
    assert len(frames) == len(whole)
    for mine, theirs in zip(frames, whole, strict=True):
        pd.testing.assert_frame_equal(mine, theirs)
    # the lot too large to hold is listed once, as the whole read lists it
    assert problems == whole_problems and len(problems) == 1
    assert "has more than 80 rows" in str(problems[0]["reason"])


def test_a_lot_too_large_where_a_range_ends_is_listed_by_the_next_range_only(tmp_path) -> None:
    # 40 lots of 20 rows but lot 10 of 200, rows 200 to 399: a quarter of the table's 980
    # rows is row 245, so with chunks of 25 the first range ends at row 250, in lot 10, and
    # has read 50 of its rows: too many, as the whole read finds at that chunk's end too
    url = _table(tmp_path / "plant.db", text_lots=False, sizes=[20] * 10 + [200] + [20] * 29)
    source = SourceSection(url=url, table="sensors", chunk_rows=25, max_lot_rows=30)
    (whole, whole_problems), (frames, problems), ranges = _whole_and_ranges(source, 4)
    assert (ranges[0].leave, ranges[0].stop, ranges[0].high) == (200, 250, 1070)
    assert problems == whole_problems and len(problems) == 1 and problems[0]["line"] == 200
    for mine, theirs in zip(frames, whole, strict=True):
        pd.testing.assert_frame_equal(mine, theirs)


def test_a_range_begins_with_the_lot_the_whole_read_carries_over(tmp_path) -> None:
    url = _table(tmp_path / "plant.db", text_lots=False, seed=3)
    source = SourceSection(url=url, table="sensors", chunk_rows=25, max_lot_rows=10**6)
    ranges = sql_ranges(source, "lot", "t", 4, most_rows=10**9)
    assert ranges is not None
    for before, after in itertools.pairwise(ranges):
        assert after.start == before.leave < before.stop  # the next range's first lot
        assert after.low == before.high
        assert before.stop % 25 == 0  # where a chunk of the whole read ends
        chunk = next(read_chunks(source, ("lot", "t"), rows=after))
        assert chunk["_line"].iloc[0] == after.start and chunk["lot"].iloc[0] == after.low


def test_most_rows_makes_more_ranges(tmp_path) -> None:
    url = _table(tmp_path / "plant.db", text_lots=True)
    source = SourceSection(url=url, table="sensors", chunk_rows=10)
    few = sql_ranges(source, "lot", "t", 2, most_rows=10**9)
    many = sql_ranges(source, "lot", "t", 2, most_rows=200)
    assert few is not None and many is not None and len(many) > len(few) == 2


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("INSERT INTO sensors SELECT lot, t, x + 1 FROM sensors LIMIT 1", "a time twice"),
        ("INSERT INTO sensors VALUES (NULL, 0.0, 1.0)", "a lot without a value"),
        ("INSERT INTO sensors VALUES (1003, NULL, 1.0)", "a row without a time"),
        ("INSERT INTO sensors VALUES (2.5, 0.0, 1.0)", "a lot not a whole number"),
    ],
)
def test_no_ranges_where_the_order_is_not_total_or_a_lot_cannot_travel(
    tmp_path, change, why
) -> None:
    url = _table(tmp_path / "plant.db", text_lots=False)
    source = SourceSection(url=url, table="sensors", chunk_rows=10)
    assert sql_ranges(source, "lot", "t", 4, most_rows=10**9) is not None
    with sqlite3.connect(tmp_path / "plant.db") as db:
        db.execute(change)
    assert sql_ranges(source, "lot", "t", 4, most_rows=10**9) is None, why


def test_no_ranges_for_a_query_or_a_table_of_one_chunk(tmp_path) -> None:
    url = _table(tmp_path / "plant.db", text_lots=False)
    query = SourceSection(url=url, query="SELECT * FROM sensors ORDER BY lot, t", chunk_rows=10)
    assert sql_ranges(query, "lot", "t", 4, most_rows=10**9) is None
    big = SourceSection(url=url, table="sensors", chunk_rows=10**6)
    assert sql_ranges(big, "lot", "t", 4, most_rows=10**9) is None


def test_a_table_that_changed_after_the_plan_is_an_error(tmp_path) -> None:
    url = _table(tmp_path / "plant.db", text_lots=False)
    source = SourceSection(url=url, table="sensors", chunk_rows=10)
    ranges = sql_ranges(source, "lot", "t", 3, most_rows=10**9)
    assert ranges is not None
    with sqlite3.connect(tmp_path / "plant.db") as db:
        db.execute(f"DELETE FROM sensors WHERE lot = {ranges[1].high}")
    with pytest.raises(DataError, match="the table changed while it was scored"):
        list(read_chunks(source, ("lot", "t"), rows=ranges[1]))


def test_on_grid_cuts_where_the_whole_reads_chunks_end() -> None:
    rows = pd.DataFrame({"v": range(13, 50)})  # table rows 13 ... 49
    reads = [rows.iloc[a : a + 9] for a in range(0, len(rows), 9)]  # read 9 at a time
    cut = list(on_grid(reads, 13, 10))
    assert [len(c) for c in cut] == [7, 10, 10, 10]  # rows 13-19, 20-29, 30-39, 40-49
    pd.testing.assert_frame_equal(pd.concat(cut, ignore_index=True), rows)
    assert SqlRows(start=13, stop=50, low=1, high=4, leave=45).count == 37
