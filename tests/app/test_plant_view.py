"""AppTests of the plant view and of Compare & promote, on a generated score history.

The history is :func:`mfgtx.history.example.example_history`'s (what hourly ``mfgtx score``
runs leave), written for the tiny trained bundle of ``models_dir`` and a second bundle of the
same job, so that a lot opens on the Quality page with that bundle.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from mfgtx.artifacts import find_bundles
from mfgtx.history import example_history, example_job, open_history, promoted, read_history

from .conftest import MAIN

OTHER = "0" * 63 + "b"  # a second bundle of the job, not in the models folder
END = "2026-03-04T12:00:00Z"


def plant_history(folder: Path, bundle_id: str, *, days: float = 0.5) -> Path:
    """A job file and its history with ``days`` of hourly scores of lines L1..L3 by
    ``bundle_id`` and by :data:`OTHER`; the history's path."""
    history = folder / "history.db"
    job = example_job(folder / "line_quality.yaml", name="line_quality", history=str(history))
    engine = sa.create_engine(f"sqlite:///{history}")
    store = open_history(engine, "history.db")
    example_history(  # scored a minute before the other: not the one that scored last
        store, bundle_id=OTHER, job_file=str(job), days=days, end=END, seed=1, lag_minutes=4
    )
    example_history(store, bundle_id=bundle_id, job_file=str(job), days=days, end=END)
    engine.dispose()
    return history


@pytest.fixture
def plant_env(app_env: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> dict:
    found, _ = find_bundles(app_env)
    bundle = next(b for b in found if b.path.name == "sample_quality")
    history = plant_history(tmp_path, bundle.bundle_id)
    monkeypatch.setenv("MFGTX_HISTORY", str(history))
    monkeypatch.setenv("MFGTX_APP_NO_AUTH", "1")
    return {"history": history, "bundle": bundle}


def _charts(at: AppTest) -> list[dict]:
    return [json.loads(c.proto.spec) for c in at.get("plotly_chart")]


def _values(array) -> list:
    """A trace's values as plotly writes them: a list, or typed binary (``bdata``)."""
    if isinstance(array, dict):
        import base64

        import numpy as np

        return np.frombuffer(base64.b64decode(array["bdata"]), array["dtype"]).tolist()
    return list(array)


def _texts(elements) -> list[str]:
    return [str(e.value) for e in elements]


def test_the_plant_view_is_the_first_page_with_a_trend_per_line(plant_env) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    assert not at.exception, at.exception
    assert _texts(at.title) == ["Plant"]
    assert sorted(_texts(at.subheader)) == ["Line L1", "Line L2", "Line L3"]
    charts = _charts(at)
    assert len(charts) == 3  # one prediction (p_bad) per line
    for chart in charts:
        line = chart["layout"]["title"]["text"].split(":")[0].removeprefix("Line ")
        predicted = next(t for t in chart["data"] if t["name"] == "predicted p_bad")
        assert len(_values(predicted["y"])) == 12  # twelve hours of scores: every lot of the line
        assert {lot[0].split("-")[0] for lot in predicted["customdata"]} == {line}
        actual = [t for t in chart["data"] if t["name"] in ("actual: bad", "actual: good")]
        inspected = [v for t in actual for v in _values(t["y"])]
        assert 0 < len(inspected) < 12  # the latest lots are not inspected yet
        assert set(inspected) <= {0.0, 1.0}
    # the latest lots of each line with their verdict at a glance
    glance = [t for t in _texts(at.markdown) if "**Line " in t]
    assert len(glance) == 3 and all("latest 8" in t for t in glance), glance
    tables = [df.value for df in at.dataframe]
    assert len(tables) == 3 and all(len(t) == 8 and "verdict" in t for t in tables)
    assert any("bundle that scored last" in t for t in _texts(at.caption))


def test_a_limit_of_the_job_file_is_drawn_on_its_trend(plant_env) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    for chart in _charts(at):
        shapes = chart["layout"].get("shapes", [])
        assert [s["y0"] for s in shapes] == [0.8], shapes  # limits: {p_bad: {alarm_above: 0.8}}
        notes = [a["text"] for a in chart["layout"].get("annotations", [])]
        assert "alarm above 0.8" in notes


def test_the_time_range_control_reads_another_range(plant_env) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.selectbox(key="plant_range").set_value("last 24 hours").run()
    assert not at.exception
    assert all(len(_values(c["data"][0]["y"])) == 12 for c in _charts(at))
    at.selectbox(key="plant_range").set_value("last 90 days").run()
    assert not at.exception and len(_charts(at)) == 3


def test_a_lot_opens_on_the_quality_page_with_its_bundle_and_line(plant_env) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.selectbox(key="plant_lot_L2").set_value("L2-0007").run()
    at.button(key="plant_open_L2").click().run()
    assert not at.exception, at.exception
    assert _texts(at.title) == ["Quality & RUL"]
    assert at.selectbox(key="quality_bundle").value == "sample_quality"
    assert at.selectbox(key="quality_line").value == "L2"
    assert at.selectbox(key="quality_lot").value == "L2-0007"
    assert any("L2-0007" in t for t in _texts(at.caption) + _texts(at.markdown))


def test_compare_shows_both_bundles_and_promote_changes_the_plant_view(plant_env) -> None:
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    at.switch_page("views/compare.py").run()
    assert not at.exception, at.exception
    assert _texts(at.title) == ["Compare & promote"]
    labels = at.selectbox(key="compare_a").options
    assert set(labels) == {"sample_quality", f"bundle {OTHER[:12]}"}
    at.selectbox(key="compare_a").set_value("sample_quality").run()
    at.selectbox(key="compare_b").set_value(f"bundle {OTHER[:12]}").run()
    charts = _charts(at)
    assert len(charts) == 3
    for chart in charts:  # both bundles' predictions on the same lots
        names = [t["name"] for t in chart["data"] if t["name"].endswith(": p_bad")]
        assert names == ["sample_quality: p_bad", f"bundle {OTHER[:12]}: p_bad"]
    disagree = [df.value for df in at.dataframe if "why" in df.value]
    assert len(disagree) == 1 and len(disagree[0]) > 0  # two seeds: some lots differ
    assert all(abs(d) > 0.1 or "decisions differ" in w
               for d, w in zip(disagree[0]["B - A"], disagree[0]["why"], strict=True))  # fmt: skip

    at.text_input(key="compare_note").input("better on line 3").run()
    at.button(key="compare_promote_b").click().run()
    assert not at.exception, at.exception
    assert any("Promoted" in t for t in _texts(at.success))
    engine = sa.create_engine(f"sqlite:///{plant_env['history']}")
    row = promoted(read_history(engine, "history.db"), "line_quality")
    engine.dispose()
    assert row is not None and row["bundle_id"] == OTHER and row["note"] == "better on line 3"

    at.switch_page("views/plant.py").run()  # the plant view now shows the promoted bundle
    assert any(f"promoted bundle **bundle {OTHER[:12]}**" in t for t in _texts(at.caption))
    assert not at.button  # the promoted bundle is not in the models folder: no lot page


def test_an_rul_job_trends_each_machine_with_its_band_and_alarm_and_opens_it(
    app_env, rul_models_dir, monkeypatch, tmp_path
) -> None:
    bundle = find_bundles(rul_models_dir)[0][0]
    history = tmp_path / "history.db"
    job = example_job(tmp_path / "fleet.yaml", name="fleet", history=str(history),
                      task="regression")  # fmt: skip
    engine = sa.create_engine(f"sqlite:///{history}")
    example_history(open_history(engine, "history.db"), bundle_id=bundle.bundle_id,
                    job_file=str(job), task="regression", lines=("M01", "M02"), days=2,
                    end=END)  # fmt: skip
    engine.dispose()
    monkeypatch.setenv("MFGTX_MODELS_DIR", str(rul_models_dir))
    monkeypatch.setenv("MFGTX_HISTORY", str(history))
    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    assert not at.exception, at.exception
    assert sorted(_texts(at.subheader)) == ["Machine M01", "Machine M02"]
    for chart in _charts(at):
        names = [t["name"] for t in chart["data"]]
        assert names[:2] == ["interval", "predicted rul_cycles"] and "actual" in names
        assert [s["y0"] for s in chart["layout"]["shapes"]] == [30]  # alarm below 30 cycles
    at.selectbox(key="plant_lot_M02").set_value("M02").run()
    at.button(key="plant_open_M02").click().run()
    assert not at.exception, at.exception
    assert _texts(at.title) == ["Quality & RUL"]
    assert at.selectbox(key="quality_lot").value == "M02"


def test_the_plant_view_lists_the_jobs_open_alerts_and_not_another_jobs(plant_env) -> None:
    """Open alerts of the job (its score runs' and its watch's) are listed with their
    delivery; a cleared one and another job's sharing the history are not."""
    from mfgtx.alerts import Finding, notify
    from mfgtx.jobfile.alerts import AlertsSection

    engine = sa.create_engine(f"sqlite:///{plant_env['history']}")
    store = open_history(engine, "history.db")
    record_only = AlertsSection(to=())
    drift = Finding("line_quality", "drift:temperature_c", "2.1 spreads from training")
    flagged = Finding("line L2, lot L2-0007", "flagged", "decided bad, p_bad 0.91")
    gone = Finding("line L1, lot L1-0003", "flagged", "decided bad, p_bad 0.85")
    notify(store, record_only, [drift], source="watch:line_quality", checked_subjects=[])
    notify(store, record_only, [flagged, gone], source="score:line_quality", checked_subjects=[])
    notify(store, record_only, [flagged], source="score:line_quality",
           checked_subjects=[gone.subject])  # fmt: skip  # L1-0003 rescored: cleared
    other = Finding("machine M01", "limit:rul_cycles", "22 is below the alarm limit 30")
    notify(store, record_only, [other], source="score:fleet", checked_subjects=[])
    engine.dispose()

    at = AppTest.from_file(str(MAIN), default_timeout=180).run()
    assert not at.exception, at.exception
    assert any("2 open alerts" in m for m in _texts(at.markdown))
    (table,) = [d.value for d in at.dataframe if "delivery" in d.value.columns]
    assert sorted(table["subject"]) == ["line L2, lot L2-0007", "line_quality"]
    assert set(table["by"]) == {"score", "watch"} and set(table["delivery"]) == {"pending"}
