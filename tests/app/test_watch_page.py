"""The Watch page: the latest watch of each bundle from the history, its findings, its
sensors; a plain note where there is no history or no watch yet."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from streamlit.testing.v1 import AppTest

from mfgtx.history import open_history, record_watch

from .conftest import MAIN

PAGE = "views/watch.py"


@pytest.fixture(autouse=True)
def _loopback():
    """Served on loopback, as app/.streamlit/config.toml binds it (no sign-in needed)."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    yield
    config.set_option("server.address", before)


def _page(monkeypatch, tmp_path, history) -> AppTest:
    import streamlit as st

    monkeypatch.setenv("MFGTX_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("MFGTX_HISTORY", str(history))
    st.cache_data.clear()
    at = AppTest.from_file(str(MAIN), default_timeout=60).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    return at


def test_the_latest_watch_of_each_bundle_is_shown_with_its_findings(monkeypatch, tmp_path):
    db = tmp_path / "history.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    store = open_history(engine, "history.db")
    record_watch(
        store,
        bundle_id="a" * 64,
        verdict="valid",
        summary="still valid: earlier",
        findings=[],
        checked_at="2026-12-01T00:00:00.000000Z",
    )
    findings = [
        {
            "subject": "line3 quality",
            "reason": "drift:temperature_c",
            "message": "temperature_c: recent readings lie 2.0 training spreads from training",
        },
        {"subject": "line3 quality", "reason": "not_valid", "message": "not valid: drift"},
        {
            "subject": "line3 quality",
            "reason": "sensor",
            "sensor": "temperature_c",
            "regime": None,
            "rows": 600,
            "missing": 0.0,
            "outside": 0.3,
            "distance": 2.0,
            "problems": ["drift", "range"],
        },
        {"subject": "line3 quality", "reason": "model", "message": "no history to judge it on"},
    ]
    record_watch(
        store,
        bundle_id="a" * 64,
        verdict="not_valid",
        summary="not valid: drift",
        findings=findings,
        checked_at="2026-12-02T00:00:00.000000Z",
    )
    engine.dispose()
    at = _page(monkeypatch, tmp_path, db)
    table = at.dataframe[0].value
    assert table["model"].tolist() == ["line3 quality"]
    assert table["verdict"].tolist() == ["NOT valid"]
    assert table["why"].tolist() == ["not valid: drift"]
    found = at.dataframe[1].value
    assert found["reason"].tolist() == ["drift:temperature_c", "not_valid"]
    sensors = at.dataframe[2].value
    assert sensors["sensor"].tolist() == ["temperature_c"]
    assert sensors["problems"].tolist() == ["drift, range"]


def test_no_history_and_no_watch_are_said_plainly(monkeypatch, tmp_path):
    at = _page(monkeypatch, tmp_path, tmp_path / "none.db")
    assert any("cannot be read" in w.value for w in at.warning)
    db = tmp_path / "history.db"
    engine = sa.create_engine(f"sqlite:///{db}")
    store = open_history(engine, "history.db")
    run = store.start_run(bundle_id="b", kind="sensor")
    store.fail_run(run, "stopped")
    engine.dispose()
    at = _page(monkeypatch, tmp_path, db)
    assert any("No watch recorded" in i.value for i in at.info)
