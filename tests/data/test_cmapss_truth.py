"""NASA's official C-MAPSS test engines: the truth table from the RUL file, in unit order."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.datasets import cmapss_test_truth, read_cmapss, read_cmapss_rul


def write_tiny(folder: Path, rul_lines: str, gz: bool = False) -> tuple[Path, Path]:
    """Three test engines of 4, 2 and 5 cycles in NASA's layout (26 columns, trailing spaces)."""
    rows = []
    for unit, cycles in ((1, 4), (2, 2), (3, 5)):
        for c in range(1, cycles + 1):
            values = [unit, c, 0.001, -0.0003, 100.0] + [500.0 + unit + c / 10] * 21
            rows.append(" ".join(str(v) for v in values) + "  ")
    test_text, suffix = "\n".join(rows) + "\n", ".txt.gz" if gz else ".txt"
    test, rul = folder / f"test_FD009{suffix}", folder / f"RUL_FD009{suffix}"
    for path, text in ((test, test_text), (rul, rul_lines)):
        if gz:
            path.write_bytes(gzip.compress(text.encode()))
        else:
            path.write_text(text)
    return test, rul


@pytest.mark.parametrize("gz", [False, True])
def test_tiny_synthetic_files_give_the_last_cycle_and_its_rul(tmp_path: Path, gz: bool) -> None:
    test, rul = write_tiny(tmp_path, "112 \n7\n140  \n\n", gz=gz)
    assert read_cmapss_rul(rul).tolist() == [112, 7, 140]
    truth = cmapss_test_truth(read_cmapss(test), rul)
    assert truth.columns.tolist() == ["unit", "last_cycle", "rul", "rul_raw"]
    assert truth["unit"].tolist() == [1, 2, 3]
    assert truth["last_cycle"].tolist() == [4, 2, 5]
    assert truth["rul"].tolist() == truth["rul_raw"].tolist() == [112, 7, 140]
    capped = cmapss_test_truth(read_cmapss(test), rul, rul_cap=125)
    assert capped["rul"].tolist() == [112, 7, 125] and capped["rul_raw"].tolist() == [112, 7, 140]


def test_unit_order_is_by_id_whatever_the_row_order() -> None:
    shuffled = pd.DataFrame({"unit": [2, 2, 1, 1, 1], "cycle": [1, 2, 1, 2, 3]})
    truth = cmapss_test_truth(shuffled, [30, 40])
    assert truth[["unit", "last_cycle", "rul"]].values.tolist() == [[1, 3, 30], [2, 2, 40]]


def test_counts_that_differ_are_an_error_naming_both(tmp_path: Path) -> None:
    test, rul = write_tiny(tmp_path, "112\n7\n")
    with pytest.raises(
        ValueError, match=r"the test data has 3 units but .*RUL_FD009\.txt has 2 values"
    ):
        cmapss_test_truth(read_cmapss(test), rul)
    with pytest.raises(ValueError, match="the test data has 3 units but the RUL file has 4"):
        cmapss_test_truth(read_cmapss(test), [1, 2, 3, 4])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("112\n7.5\n3\n", r"line 2: expected one whole number of cycles >= 0, found '7\.5'"),
        ("112\n\n-3\n", r"line 3: .* found '-3'"),
        ("112 98\n", r"line 1: .* found '112 98'"),
        ("nan\n", r"line 1: .* found 'nan'"),
        ("\n \n", "no RUL values"),
    ],
)
def test_bad_rul_lines_name_the_line(tmp_path: Path, text: str, match: str) -> None:
    p = tmp_path / "RUL_FD009.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        read_cmapss_rul(p)


def test_fd001_official_test_set(datasets_dir: Path) -> None:
    folder = datasets_dir / "cmapss_fd001"
    if not folder.is_dir():
        pytest.skip(f"{folder} not found")
    test = read_cmapss(folder / "test_FD001.txt.gz")
    truth = cmapss_test_truth(test, folder / "RUL_FD001.txt.gz", rul_cap=125)
    assert len(truth) == 100 and truth["unit"].tolist() == list(range(1, 101))
    assert (truth["rul_raw"].min(), truth["rul_raw"].max()) == (7, 145)  # as the README says
    assert (truth["last_cycle"].min(), truth["last_cycle"].max()) == (31, 303)
    assert truth["last_cycle"].sum() == len(test) == 13_096  # cycles run 1..last per unit
    assert truth["rul"].max() == 125 and (truth["rul"] <= truth["rul_raw"]).all()
    assert np.array_equal(truth["rul_raw"].to_numpy()[:3], [112, 98, 69])
