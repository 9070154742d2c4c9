"""Every number beside a prediction agrees with the verdict: the trust box is the library's one
standing in its level's colour, intervals stay within the target's range, the deletion
sentence reads its own bars, and the data's age is its newest reading's."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from datetime import UTC, datetime
from types import SimpleNamespace

import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from mfgtx.baselines import Difference, EvaluationReport, ReportRow, standing_of
from mfgtx.baselines import standing as rule

from .conftest import ROOT

sys.path.insert(0, str(ROOT / "app"))
from _figures import deletion_bars, deletion_reading, deletion_sentence
from _freshness import data_age, newest_reading
from _interval import shown
from _trust import trust_of


def _metrics(model: float, low: float | None, high: float | None) -> dict:
    """A stored report: the Transformer's RMSE against a ridge baseline's 12.0."""
    rows = (
        ReportRow("SensorEncoder", "model", {"rmse": model}),
        ReportRow("Ridge", "baseline", {"rmse": 12.0}),
    )
    diffs = (
        ()
        if low is None
        else (Difference("SensorEncoder", "Ridge", "rmse", model - 12.0, low, high, 0.95, 9),)
    )
    report = EvaluationReport("regression", 40, rows, "rmse", differences=diffs)
    return {**report.to_dict(), "verdict": "SensorEncoder beats every baseline on rmse"}


LEVELS = {
    "use": _metrics(10.0, -3.0, -1.0),
    "care": _metrics(11.9, -0.5, 0.4),
    "do_not_rely": _metrics(14.0, 1.0, 3.0),
    "unknown": None,
}

PAGE = """
import json
import sys

sys.path.insert(0, APP)
from _trust import show_trust

for metrics in json.loads(METRICS):
    show_trust({"metrics": metrics})
"""


def test_each_level_has_its_own_colour_and_the_librarys_words() -> None:
    script = PAGE.replace("APP", repr(str(ROOT / "app")))
    script = script.replace("METRICS", repr(json.dumps(list(LEVELS.values()))))
    at = AppTest.from_string(script, default_timeout=60).run()
    assert not at.exception, at.exception
    boxes = {
        "use": [e.value for e in at.success],
        "care": [e.value for e in at.warning],
        "do_not_rely": [e.value for e in at.error],
        "unknown": [e.value for e in at.info],
    }
    for level, metrics in LEVELS.items():
        (text,) = boxes[level]  # one box per level, in that level's colour only
        assert text.endswith(standing_of(metrics).headline), (level, text)
        assert "SensorEncoder" not in text  # never the stored verdict nor a class name
    assert boxes["do_not_rely"][0].count("Do not rely on it.") == 1


def test_the_trust_box_report_and_stored_verdict_come_from_one_function(monkeypatch) -> None:
    metrics = LEVELS["care"]
    report = EvaluationReport.from_dict(metrics)
    assert trust_of({"metrics": metrics}).headline == report.verdict == report.standing().headline
    forced = rule.Standing("use", "Forced by the test.")
    monkeypatch.setattr(rule, "standing", lambda r, m=None: forced)
    assert trust_of({"metrics": metrics}).level == "use"
    assert (
        trust_of({"metrics": metrics}).headline == report.verdict == "Use it. Forced by the test."
    )


def test_an_rul_interval_is_clipped_at_zero_and_says_so() -> None:
    spec = SimpleNamespace(clip=None, targets=("rul_cycles",))
    out = shown(spec, "rul_cycles", 20.0, -3.3, 38.2)  # the regimes model's interval
    assert (out.point, out.low, out.high) == (20.0, 0.0, 38.2)
    assert "clipped at 0" in out.note and "(-3.3)" in out.note
    assert shown(spec, "rul_cycles", 20.0, 1.0, 38.2).note == ""  # nothing to clip
    recorded = SimpleNamespace(clip=((5.0, 150.0),), targets=("life",))
    out = shown(recorded, "life", 160.0, 2.0, 170.0)  # the bundle's own range first
    assert (out.point, out.low, out.high) == (150.0, 5.0, 150.0) and "5 to 150" in out.note
    free = shown(SimpleNamespace(clip=None, targets=("temp",)), "temp", -5.0, -6.0, 1.0)
    assert (free.point, free.low, free.high, free.note) == (-5.0, -6.0, 1.0, "")
    assert math.isnan(shown(spec, "rul_cycles", 3.0).low)  # no interval: none invented


def _deletion(attended: float, random: list[float]) -> SimpleNamespace:
    change = torch.tensor(random)[:, None]  # (R, B=1)
    return SimpleNamespace(
        fraction=0.1, unit="patches", attended=attended, random_change=change,
        random_mean=float(change.mean()), random_std=float(change.mean(1).std()),
    )  # fmt: skip


@pytest.mark.parametrize(
    ("attended", "random", "reading"),
    [
        (0.05, [0.0, 0.0, 0.0, 0.05, 0.0], "unclear"),  # 5x the mean, within the spread
        (0.30, [0.01, 0.02, 0.01, 0.02, 0.01], "more"),
        (0.01, [0.02, 0.03, 0.02, 0.01, 0.02], "not_more"),
    ],
)
def test_the_deletion_sentence_reads_its_own_bars(attended, random, reading) -> None:
    result = _deletion(attended, random)
    kw = {"scale": 100.0, "unit": "percentage points", "watched": "P(defect)"}
    fig = deletion_bars(result, **kw)
    text = deletion_sentence(result, **kw)
    red, grey = fig.data[0].y
    whisker = fig.data[0].error_y.array[1]
    assert deletion_reading(result, scale=100.0).reading == reading
    assert fig.layout.meta["reading"] == reading
    assert ("rises above the random bar's whisker" in text) == (red > grey + whisker)
    assert ("matters no more than" in text) == (red <= grey)
    if reading == "unclear":  # the old text said "no more than random" beside a 5x bar
        assert f"{red / grey:.1f} times the random mean" in text and red / grey > 4.9


def test_the_data_age_is_the_newest_readings_not_the_files(tmp_path) -> None:
    path = tmp_path / "sensors.csv"
    pd.DataFrame(
        {
            "lot": ["A", "A", "B"],
            "timestamp": ["2026-03-01T08:00:00+00:00", "2026-04-01T09:30:00+00:00", "bad"],
            "cycle": [1, 2, 3],
        }
    ).to_csv(path, index=False)
    os.utime(path, (time.time(), time.time()))  # copied today
    newest = newest_reading(str(path), "timestamp", path.stat().st_mtime, path.stat().st_size)
    assert newest == pd.Timestamp("2026-04-01T09:30:00", tz="UTC")
    now = datetime(2026, 12, 1, 9, 30, tzinfo=UTC)
    assert data_age(newest, now) == 244.0  # eight months, though the file is minutes old
    assert newest_reading(str(path), "cycle", 0.0, 0) is None  # cycle numbers are no date
    assert data_age(None, now) is None
