"""The findings of a score run: a lot's latest window decides; limits by prediction column."""

from __future__ import annotations

import pandas as pd

from mfgtx.alerts import score_findings
from mfgtx.jobfile.limits import Limit


def _rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "line": ["L3", "L3", "L3", "L1"],
            "lot": ["L3-017", "L3-017", "L3-018", "L1-002"],
            "window_end": [
                "2026-03-02T10:00",
                "2026-03-02T09:00",
                "2026-03-02T10:00",
                "2026-03-02T10:00",
            ],
            "p_bad": [0.91, 0.2, 0.3, 0.6],
            "decision": ["bad", "good", "good", "bad"],
        }
    )


def test_a_lot_is_flagged_by_its_latest_window_and_named_with_its_line() -> None:
    rows = _rows()
    found, checked = score_findings(rows, extra_keys=["line"])
    assert checked == ["line L3, lot L3-017", "line L3, lot L3-018", "line L1, lot L1-002"]
    assert [(f.subject, f.reason) for f in found] == [
        ("line L3, lot L3-017", "flagged"),
        ("line L1, lot L1-002", "flagged"),
    ]
    assert found[0].message == "decided bad, p_bad 0.91 (window ending 2026-03-02T10:00)"
    # the same lot whose latest window is good is not flagged, whatever came before
    later = rows.assign(window_end=["2026-03-02T08:00", *rows["window_end"][1:]])
    found, _ = score_findings(later, extra_keys=["line"])
    assert [f.subject for f in found] == ["line L1, lot L1-002"]


def test_a_prediction_beyond_its_limit_is_a_finding_and_other_columns_are_not() -> None:
    limits = {"p_bad": Limit(alarm_above=0.5), "Massetemp_°C": Limit(spec=(230, 240))}
    found, _ = score_findings(_rows(), lot_name="batch", limits=limits)
    limit = [(f.subject, f.message) for f in found if f.reason == "limit:p_bad"]
    assert limit == [
        (
            "batch L3-017",
            "p_bad 0.91 is above the alarm limit 0.5 (window ending 2026-03-02T10:00)",
        ),
        ("batch L1-002", "p_bad 0.6 is above the alarm limit 0.5 (window ending 2026-03-02T10:00)"),
    ]
    assert {f.reason for f in found} == {"flagged", "limit:p_bad"}


def test_rows_without_lots_find_nothing() -> None:
    assert score_findings(pd.DataFrame({"image": ["a.png"], "decision": ["bad"]})) == ([], [])
