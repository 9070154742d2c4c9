"""Watch: the latest ``mfgtx watch`` of every bundle, read from the history: its verdict,
what it found, each sensor against its training data and the model against its test figures.

The histories are the plant view's (those the bundles' jobs name, and ``MFGTX_HISTORY``, a
SQLite file or a database URL), and a ``history.db`` beside the models folder
(``<models>/../results/history.db``, ``<models>/history.db`` or ``<models>/../history.db``).
They are read only; the page never creates or upgrades one.
"""

from __future__ import annotations

import os

import pandas as pd
import streamlit as st
from _common import guarded
from _history import plant_jobs
from _settings import app_config

from mfgtx.history import HistoryError, history_where, latest_watches, read_history
from mfgtx.jobfile import read_engine

VERDICT_WORDS = {
    "valid": "still valid",
    "not_valid": "NOT valid",
    "unknown": "unknown (nothing to judge yet)",
}


def _history_urls() -> list[str]:
    """Every history to read: ``MFGTX_HISTORY``, the plant view's, one beside the models."""
    urls = []
    named = os.environ.get("MFGTX_HISTORY")
    if named:
        urls.append(named if "://" in named else f"sqlite:///{named}")
    cfg = app_config()
    urls += [job.url for job in plant_jobs(cfg)]
    models = cfg.models_dir
    for candidate in (
        models.parent / "results" / "history.db",
        models / "history.db",
        models.parent / "history.db",
    ):
        if candidate.is_file():
            urls.append(f"sqlite:///{candidate.resolve()}")
    return list(dict.fromkeys(urls))


@st.cache_data(ttl=30, show_spinner=False)
def _latest(url: str) -> pd.DataFrame:
    engine = read_engine(url)
    try:
        return latest_watches(read_history(engine, url))
    finally:
        engine.dispose()


@guarded
def page() -> None:
    st.title("Watch")
    st.caption(
        "Whether each model still holds: its recent inputs against its training data, and its "
        "error where the truth has arrived against its own test figures (`mfgtx watch JOB`)."
    )
    urls = _history_urls()
    if not urls:
        st.info(
            "No history found beside the models folder. Run `mfgtx score JOB` and then "
            "`mfgtx watch JOB`, or set MFGTX_HISTORY to the history file."
        )
        return
    parts = []
    for url in urls:
        try:
            parts.append(_latest(url))
        except (HistoryError, ValueError) as e:
            st.warning(f"The history {history_where(url)} cannot be read: {e}")
    latest = pd.concat([p for p in parts if not p.empty] or parts or [pd.DataFrame()])
    if latest.empty:
        where = ", ".join(history_where(u) for u in urls)
        st.info(f"No watch recorded in {where} yet: run `mfgtx watch JOB`.")
        return
    latest = latest.reset_index(drop=True)
    names = [
        _subject(f) or str(b)[:12]
        for f, b in zip(latest["findings"], latest["bundle_id"], strict=True)
    ]
    st.dataframe(
        pd.DataFrame(
            {
                "model": names,
                "verdict": [VERDICT_WORDS.get(v, v) for v in latest["verdict"]],
                "checked at": latest["checked_at"],
                "why": latest["summary"],
            }
        ),
        hide_index=True,
    )
    pick = st.selectbox("Model", range(len(names)), format_func=lambda i: names[i])
    row = latest.iloc[int(pick or 0)]
    findings = list(row["findings"])
    st.subheader(f"{names[int(pick or 0)]}: {VERDICT_WORDS.get(row['verdict'], row['verdict'])}")
    st.write(row["summary"])
    found = [f for f in findings if f.get("reason") not in ("sensor", "model")]
    if found:
        st.markdown("**Findings**")
        st.dataframe(pd.DataFrame(found)[["reason", "message"]], hide_index=True)
    sensors = [
        {**f, "problems": ", ".join(f.get("problems") or []) or "ok"}
        for f in findings
        if f.get("reason") == "sensor"
    ]
    if sensors:
        st.markdown("**Inputs against the training data**")
        st.dataframe(
            pd.DataFrame(sensors)
            .reindex(  # drift_limit, lots, group: recorded since the watch judges lot by lot
                columns=[
                    "sensor",
                    "group",
                    "regime",
                    "rows",
                    "lots",
                    "missing",
                    "outside",
                    "distance",
                    "drift_limit",
                    "problems",
                ]
            )
            .rename(
                columns={
                    "outside": "outside training range",
                    "distance": "distance (spreads)",
                    "drift_limit": "drift limit (spreads)",
                    "lots": "lots compared",
                    "group": "worst line",
                }
            ),
            hide_index=True,
        )
    model = [f for f in findings if f.get("reason") == "model"]
    if model:
        st.markdown("**The model where the truth arrived**")
        st.write(model[0].get("message", ""))


def _subject(findings: list[dict]) -> str | None:
    for f in findings:
        if f.get("subject"):
            return str(f["subject"])
    return None


page()
