"""A split that purges whole lots says so; one that does not stays quiet."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfgtx.data import ColumnMap, make_windows, read_table
from mfgtx.split import LotTimeSplit, PurgeWarning

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def sample_windows():
    sensors = pd.read_csv(SAMPLE / "sensors.csv")
    quality = pd.read_csv(SAMPLE / "quality.csv")
    df = sensors.merge(quality[["lot", "passed", "inspected_at"]], on="lot")
    cols = ColumnMap(
        lot="lot", time="timestamp", keys="line", targets="passed", label_time="inspected_at"
    )
    return make_windows(read_table(df, cols), 120, stride=30)


def test_whole_lots_purged_on_concurrent_lines_are_named() -> None:
    windows = sample_windows()
    with pytest.warns(
        PurgeWarning, match=r"fold 0: every window of \d+ lot\(s\) was purged \(L\d-\d{4}"
    ) as caught:
        (sets,) = LotTimeSplit(test_size=0.25, val_size=0.2, gap="30min").split_sets(windows)
    named = re.search(r"was purged \(([^)]*)\)", str(caught[0].message)).group(1)
    lots = [lot for lot in named.replace(" ...", "").split(", ")]
    kept = set(windows.lot[np.concatenate([sets.train, sets.val])])
    assert lots
    for lot in lots:
        assert lot not in kept  # the named lot really lost every window
        assert (windows.lot[sets.purged] == lot).any()
    text = str(caught[0].message)  # plant words: no class or attribute names of the library
    assert "SplitSets" not in text and "purge_reasons" not in text, text
    assert "the audit lists why" in text, text
    from mfgtx.split import audit

    detail = audit(windows, sets, gap="30min").to_dict()
    shown = str(detail)
    assert "0 days 00:30:00" not in shown and "gap (30 min)" in shown, shown


def test_no_warning_when_no_lot_is_lost() -> None:
    t0 = pd.Timestamp("2026-01-01T00:00:00Z")
    rows = [
        {"lot": f"A{k}", "t": t0 + pd.Timedelta(hours=10 * k + i), "s": float(i)}
        for k in range(6)
        for i in range(8)
    ]
    windows = make_windows(read_table(pd.DataFrame(rows), ColumnMap("lot", "t")), 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(LotTimeSplit(test_size=2, gap="1h").split_sets(windows))
