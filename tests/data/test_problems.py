"""The collecting mode of read_table (Problems): every lot's problems listed, per column, and
the lot left out; the same rule as the raising mode (one rule, two callers)."""

from __future__ import annotations

import pandas as pd
import pytest

from mfgtx.data import ColumnMap, DataError, Problems, read_table

COLS = ColumnMap("lot", "t", sensors=("x", "y"), keys=("line",))


def _frame() -> pd.DataFrame:
    rows = []
    for lot in "ABCDEF":
        for k in range(4):
            rows.append({"lot": lot, "t": f"2026-03-0{k + 1}T06:00:00", "x": "1.5", "y": "2",
                         "line": "L1"})  # fmt: skip
    df = pd.DataFrame(rows)
    df.loc[1, "t"] = "2026-02-31T06:00:00"  # A: a date that does not exist
    df.loc[2, "x"] = "kaputt"  # A: and a text value in another column
    df.loc[3, "x"] = "nein"  # A: a second bad value of x: only the first is listed
    df.loc[5, "y"] = "n/a"  # B
    df.loc[6, "x"] = "zz"  # B: a bad x too: each lot's first bad value of a column is listed
    df.loc[10, "t"] = df.loc[9, "t"]  # C: two rows at one time
    df.loc[14, "line"] = "L2"  # D: a key that changes
    df.loc[20:23, ["x", "y"]] = None  # F: no sensor value at all
    extra = pd.DataFrame([{"lot": None, "t": "2026-03-09T06:00:00", "x": "1", "y": "1",
                           "line": "L1"}])  # fmt: skip
    df = pd.concat([df, extra], ignore_index=True)
    df["_file"], df["_line"] = "export.csv", range(2, 2 + len(df))
    return df


def test_every_lot_and_column_is_listed_and_left_out() -> None:
    problems = Problems()
    table = read_table(_frame(), COLS, problems=problems)
    assert table.lots == ["E"]
    listed = [(e.lot, e.column, e.line, e.problem) for e in problems.errors]
    assert ("A", "t", 3, "bad time") in listed
    assert ("A", "x", 4, "not a number") in listed  # the first bad value of x in A, not 5
    assert ("B", "y", 7, "not a number") in listed
    assert ("B", "x", 8, "not a number") in listed
    assert ("C", "t", 12, "time repeated") in listed
    assert ("D", "line", 16, "key changes in a lot") in listed
    assert ("F", None, 22, "no sensor value in a lot") in listed
    assert (None, "lot", 26, "no lot id") in listed
    assert len(listed) == 8 and problems.lots == set("ABCDF")
    assert problems.rows_without_lot == 1
    rows = problems.rows()
    assert set(rows[0]) == {"lot", "file", "line", "column", "reason"}
    assert all(r["file"] == "export.csv" for r in rows)


def test_without_a_collector_the_first_problem_is_raised() -> None:
    with pytest.raises(DataError, match="no lot id"):
        read_table(_frame(), COLS)


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("t", "31.02.2026 x", "bad time"),
        ("t", "2500-01-01T00:00:00", "bad time"),
        ("x", "abc", "not a number"),
        ("x", "inf", "not a number"),
        ("y", "1e300", "number too large"),
        ("t", None, "no time"),
    ],
)
def test_one_rule_raised_or_listed_says_the_same(column, value, problem) -> None:
    df = _frame().iloc[:8].copy()  # lots A and B, made good, then one bad value in B
    df.loc[1, "t"], df.loc[2, "x"], df.loc[3, "x"], df.loc[5, "y"], df.loc[6, "x"] = (
        "2026-03-02T06:00:00", "1", "1", "2", "1")  # fmt: skip
    df.loc[6, column] = value
    with pytest.raises(DataError) as raised:
        read_table(df, COLS)
    problems = Problems()
    table = read_table(df, COLS, problems=problems)
    assert table.lots == ["A"] and len(problems) == 1
    listed = problems.errors[0]
    assert str(listed) == str(raised.value) and listed.problem == problem
    assert (listed.lot, listed.line) == ("B", 8)


def test_a_problem_of_the_whole_input_is_raised_in_the_collecting_mode_too() -> None:
    df = _frame().drop(columns=["y"])
    with pytest.raises(DataError, match="missing column"):
        read_table(df, COLS, problems=Problems())
