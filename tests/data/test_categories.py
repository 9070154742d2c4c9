"""Category columns (:mod:`mfgtx.data.categories`): a grade's names read as stable codes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import mfgtx.data.categories as categories
from mfgtx.data import ColumnMap, DataError, make_windows, read_table
from mfgtx.data.categories import category_code, encode_categories


def _frame(grades: list[object]) -> pd.DataFrame:
    n = len(grades)
    return pd.DataFrame(
        {"lot": ["A"] * n, "t": np.arange(n), "temp": np.arange(n, dtype=float), "grade": grades}
    )


def test_a_name_gets_the_same_code_in_every_table() -> None:
    a, names_a = encode_categories(pd.Series(["S355", "S420", "S355"]))
    b, names_b = encode_categories(pd.Series(["S420", "S275"]))
    assert a[1] == b[0] == category_code("S420") and a[0] == a[2] != a[1]
    assert names_a[a[0]] == "S355" and names_b[b[1]] == "S275"
    assert all(float(np.float32(c)) == c for c in (*a, *b))  # exact in float32


def test_numbers_are_names_and_empty_cells_are_missing() -> None:
    codes, names = encode_categories(pd.Series([7, "7.0", " 7 ", 7.5, "", None, np.nan]))
    assert codes[0] == codes[1] == codes[2] == category_code("7")
    assert names[codes[3]] == "7.5" and np.isnan(codes[4:]).all()


def test_two_names_with_one_code_are_refused(monkeypatch) -> None:
    monkeypatch.setattr(categories, "category_code", lambda name: 1.0)
    with pytest.raises(ValueError, match="'S355' and 'S420' get the same code; rename one"):
        encode_categories(pd.Series(["S355", "S420"]), column="grade")


def test_read_table_reads_a_text_grade_as_codes_with_its_names() -> None:
    cols = ColumnMap("lot", "t", sensors=("temp", "grade"), categories=("grade",))
    table = read_table(_frame(["S355", "S355", "S420", None]), cols)
    grade = table.frame["grade"].to_numpy()
    assert grade[0] == category_code("S355") and np.isnan(grade[3])
    assert table.categories == {"grade": {category_code("S355"): "S355",
                                          category_code("S420"): "S420"}}  # fmt: skip
    assert table.columns.categories == ("grade",)
    windows = make_windows(table, 2)
    assert windows.categories == table.categories


def test_without_listed_sensors_the_category_is_read_beside_the_numbers() -> None:
    table = read_table(_frame(["S355", "S420"]), ColumnMap("lot", "t", categories=("grade",)))
    assert table.sensors == ("temp", "grade")
    plain = pytest.warns(UserWarning, match="non-numeric column")
    with plain:  # not declared a category: left out, with a warning
        assert read_table(_frame(["S355", "S420"]), ColumnMap("lot", "t")).sensors == ("temp",)


def test_a_category_missing_from_the_file_is_named() -> None:
    with pytest.raises(DataError, match=r"'grade' \(the regime column, data.regimes.column"):
        read_table(
            _frame(["S355"]).drop(columns="grade"), ColumnMap("lot", "t", categories="grade")
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"sensors": ("temp",), "categories": ("grade",)}, "must also be listed among the sens"),
        ({"layout": "long", "categories": ("grade",)}, "a long table"),
        ({"categories": ("lot",)}, "'lot' is mapped twice"),
    ],
)
def test_column_map_checks_its_categories(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        ColumnMap("lot", "t", **kwargs)


def test_chunks_merge_their_names_and_refuse_a_clash() -> None:
    from mfgtx.data import Windows

    cols = ColumnMap("lot", "t", sensors=("temp", "grade"), categories=("grade",))
    one = make_windows(read_table(_frame(["S355", "S420"]), cols), 2)
    other = _frame(["S275", "S275"]).assign(lot="B")
    two = make_windows(read_table(other, cols), 2)
    both = Windows.concat([one, two])
    assert sorted(both.categories["grade"].values()) == ["S275", "S355", "S420"]
    forged = make_windows(read_table(other.assign(lot="C"), cols), 2)
    forged = type(forged)(
        **{**forged.__dict__, "categories": {"grade": {category_code("S355"): "X"}}}
    )
    with pytest.raises(ValueError, match="'S355' and 'X' get the same code"):
        Windows.concat([one, forged])
