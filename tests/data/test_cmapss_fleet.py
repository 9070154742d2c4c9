"""cmapss_fleet: engines on one made-up clock, in unit order or a given order."""

from __future__ import annotations

import pandas as pd
import pytest

from mfgtx.datasets import cmapss_fleet


def engines() -> pd.DataFrame:
    # three engines of 2, 3 and 1 cycles
    return pd.DataFrame({"unit": [1, 1, 2, 2, 2, 3], "cycle": [1, 2, 1, 2, 3, 1]})


def hours(df: pd.DataFrame) -> list[int]:
    return ((df["time"] - pd.Timestamp("2000-01-01", tz="UTC")) / pd.Timedelta("1h")).tolist()


def test_order_places_engines_one_after_another_and_keeps_rul() -> None:
    plain = cmapss_fleet(engines(), rul_cap=1)
    assert hours(plain) == [0, 1, 2, 3, 4, 5]
    moved = cmapss_fleet(engines(), rul_cap=1, order=[3, 1, 2])
    assert hours(moved) == [1, 2, 3, 4, 5, 0]
    assert moved["rul"].tolist() == plain["rul"].tolist() == [1, 0, 1, 1, 0, 0]
    # every cycle's label is known when its engine fails, on the new clock
    assert hours(moved.rename(columns={"time": "x", "failed_at": "time"})) == [2, 2, 5, 5, 5, 0]


@pytest.mark.parametrize(
    ("order", "named"),
    [([1, 2], "missing [3]"), ([1, 2, 3, 4], "not in the data [4]"), ([1, 2, 2, 3], "1 repeated")],
)
def test_order_must_name_every_unit_once(order: list[int], named: str) -> None:
    with pytest.raises(ValueError, match=named.replace("[", r"\[").replace("]", r"\]")):
        cmapss_fleet(engines(), order=order)
