"""Plant: every line of a job at a glance, from its score history.

Per line (the job's first key, ``line``; a job without keys: per lot, an RUL job's machine):
the latest lots with their verdict (a limit crossed, flagged bad, input to check, ok), and the
trend of each prediction over the chosen time range with its interval band, the actuals where
they arrived and the limit lines of the job file's ``limits:``. A lot opens on its lot page.

The job shows its promoted bundle (Compare & promote), else the one that scored last. The
lines part refreshes on its own every :data:`REFRESH_S` seconds (``st.fragment``), reading
only the range shown: :mod:`mfgtx.history.plant` queries by time, never the whole history.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from _common import guarded, when
from _handoff import LOT_PAGES, open_lot
from _history import (
    RANGES,
    PlantJob,
    bundle_label,
    cached_trend,
    job_label,
    plant_jobs,
    reader,
    shown_bundle,
    since,
)
from _settings import app_config
from _trends import LEVEL_COLOURS, LEVEL_MARKS, LEVEL_WORDS, trend_figure, verdict_table
from _trust import show_trust

from mfgtx.history import LEVELS, last_scored, latest_lots, trend_columns

REFRESH_S = 60  # the lines part reruns on its own this often
LATEST = 8  # lots listed per line
MAX_GROUPS = 12  # lines (or machines) drawn; the worst first


def _group_word(job: PlantJob) -> str:
    return (job.group_key or job.lot_name).replace("_", " ").capitalize()


@st.fragment(run_every=REFRESH_S)
def lines(job: PlantJob, bundle_id: str, days: float) -> None:
    """Each line's latest lots and trends (reruns on its own every :data:`REFRESH_S` s)."""
    last = last_scored(reader(job.url), bundle_id)
    if last is None:
        st.info(f"{bundle_label(job, bundle_id)} has no scores in {job.where} yet.")
        return
    frame = cached_trend(job.url, bundle_id, since(last, days), last, job.group_key, job.target)
    st.caption(f"Latest score {when(last)}; this part refreshes every {REFRESH_S} s.")
    if frame.empty:
        st.info("No scores in this time range.")
        return
    columns = trend_columns(frame)
    latest = latest_lots(frame, n=LATEST, limits=job.limits)
    word = _group_word(job)
    worst = latest.groupby("group")["level"].agg(lambda s: min(LEVELS.index(x) for x in s))
    groups = sorted(worst.index, key=lambda g: (int(worst[g]), g))
    at_a_glance(latest, groups, word)
    if len(groups) > MAX_GROUPS:
        st.caption(f"The {MAX_GROUPS} {word.lower()}s that need attention most are drawn, "
                   f"of {len(groups)}.")  # fmt: skip
    banded = frame["low"].notna().any()
    band_column = next((c for c in columns if not c.startswith("p_")), None) if banded else None
    found = job.found.get(bundle_id)
    kind = job.bundles.get(bundle_id, "")
    for group in groups[:MAX_GROUPS]:
        rows = frame[frame["group"] == group]
        mine = latest[latest["group"] == group]
        st.subheader(f"{word} {group}")
        left, right = st.columns([2, 3])
        with left:
            st.dataframe(
                verdict_table(mine, columns, job.lot_name), hide_index=True,
                column_config={"verdict": st.column_config.TextColumn(width="large")},
            )  # fmt: skip
            if found is not None and kind in LOT_PAGES:
                lot = st.selectbox(f"Open a {job.lot_name}", list(mine["lot"]),
                                   key=f"plant_lot_{group}")  # fmt: skip
                if st.button(f"Open {job.lot_name} page", key=f"plant_open_{group}"):
                    line = group if job.group_key else None
                    open_lot(kind, found.path.name, str(lot), line)
        with right:
            for i, column in enumerate(columns):
                st.plotly_chart(
                    trend_figure(
                        {"": rows if i == 0 else rows.assign(actual=float("nan"))},
                        column, f"{word} {group}: {column}", limit=job.limits.get(column),
                        band=column == band_column,
                    ),
                    key=f"plant_trend_{group}_{column}",
                )  # fmt: skip


def at_a_glance(latest: pd.DataFrame, groups: list, word: str) -> None:
    """One line per group: its worst verdict's colour, and how many latest lots need what."""
    for group in groups:
        mine = latest[latest["group"] == group]
        counts = mine["level"].value_counts()
        worst = min(counts.index, key=LEVELS.index)
        parts = [f"{counts[lv]} {LEVEL_WORDS[lv]}" for lv in LEVELS if lv in counts]
        mark, colour, words = LEVEL_MARKS[worst], LEVEL_COLOURS[worst], LEVEL_WORDS[worst]
        st.markdown(f":{colour}[{mark}] **{word} {group}**: :{colour}[{words}] "
                    f"(latest {len(mine)}: {', '.join(parts)})")  # fmt: skip


@guarded
def plant() -> None:
    st.title("Plant")
    cfg = app_config()
    jobs = plant_jobs(cfg)
    if not jobs:
        st.info(
            "No score history found yet: the plant view shows what `mfgtx score JOB` records "
            f"(the bundles in {cfg.models_dir} name their jobs' histories; or set "
            "MFGTX_HISTORY). Run `mfgtx demo` to see it filled."
        )
        return
    labels = [job_label(j, jobs) for j in jobs]
    left, right = st.columns(2)
    picked = left.selectbox("Job", labels, key="plant_job")
    job = jobs[labels.index(picked)]
    days = RANGES[right.selectbox("Trend over", list(RANGES), index=1, key="plant_range")]
    bundle_id, promotion = shown_bundle(job)
    label = bundle_label(job, bundle_id)
    if promotion is not None:
        note = f": {promotion['note']}" if promotion.get("note") else ""
        st.caption(f"Showing the promoted bundle **{label}** (promoted "
                   f"{when(promotion['promoted_at'])}{note}); history {job.where}.")  # fmt: skip
    else:
        st.caption(f"Showing **{label}**, the bundle that scored last (none is promoted: "
                   f"promote one on Compare & promote); history {job.where}.")  # fmt: skip
    if bundle_id in job.found:
        show_trust(job.found[bundle_id].manifest, details=False, lead="Model.")
    lines(job, bundle_id, days)


plant()
