"""Plant: every line of a job at a glance, from its score history.

Per line (the job's first key, ``line``; a job without keys: per lot, an RUL job's machine):
the job's open alerts (score and watch), the latest lots with their verdict (a limit crossed,
flagged bad, input to check, ok), and the trend of each prediction over the chosen time range
with its interval band, the actuals where they arrived and the limit lines of the job file's
``limits:``. A lot opens on its lot page.

The jobs with the most open alerts come first. The job shows its promoted bundle (Compare &
promote), else the one that scored last. The lines part refreshes on its own every
:data:`REFRESH_S` seconds (``st.fragment``), reading only the range shown:
:mod:`mfgtx.history.plant` queries by time, never the whole history.
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

from mfgtx.alerts import alerts
from mfgtx.history import ALL, LEVELS, NOT_RECORDED, last_scored, latest_lots, trend_columns

REFRESH_S = 60  # the lines part reruns on its own this often
LATEST = 8  # lots listed per line
MAX_GROUPS = 12  # lines (or machines) drawn; the worst first
MAX_ALERTS = 50  # open alerts listed


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
    open_alerts(job)
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
    if NOT_RECORDED in groups:
        st.caption(f"Some scores record no {word.lower()} (the score output had no "
                   f"{job.group_key} column): they are drawn together.")  # fmt: skip
    banded = frame["low"].notna().any()
    band_column = next((c for c in columns if not c.startswith("p_")), None) if banded else None
    found = job.found.get(bundle_id)
    kind = job.bundles.get(bundle_id, "")
    for group in groups[:MAX_GROUPS]:
        rows = frame[frame["group"] == group]
        mine = latest[latest["group"] == group]
        st.subheader(f"{word} {_name(group)}")
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
            trends(job, rows, columns, band_column, f"{word} {_name(group)}", group)


def trends(job: PlantJob, rows: pd.DataFrame, columns: list[str], band_column: str | None,
           title: str, group: str) -> None:  # fmt: skip
    """One trend per prediction (per sensor of a forecaster), with the job's limit of the
    prediction (or of the sensor) and the actuals on the first."""
    series = [s for s in dict.fromkeys(rows["series"]) if s is not None] or [None]
    for i, column in enumerate(columns):
        for one in series:
            part = rows if one is None else rows[rows["series"] == one]
            named = column if one is None else f"{one} ({column})"
            limit = job.limits.get(str(one)) if one is not None else None
            st.plotly_chart(
                trend_figure(
                    {"": part if i == 0 else part.assign(actual=float("nan"))}, column,
                    f"{title}: {named}", limit=limit or job.limits.get(column),
                    band=column == band_column,
                ),
                key=f"plant_trend_{group}_{column}_{one}",
            )  # fmt: skip


def _open(job: PlantJob, limit: int) -> pd.DataFrame:
    """The job's open alerts (its score runs' and its watch's), newest first."""
    sources = (f"score:{job.name}", f"watch:{job.name}")
    return alerts(reader(job.url), state="open", sources=sources, limit=limit)


def open_alerts(job: PlantJob) -> None:
    """The job's open alerts (its score runs' and its watch's), newest first, with their
    delivery: what reached the plant's targets and what did not."""
    table = _open(job, MAX_ALERTS)
    if table.empty:
        st.markdown(":green[:material/check_circle:] No open alerts.")
        return
    more = f" (the latest {MAX_ALERTS})" if len(table) == MAX_ALERTS else ""
    st.markdown(f":red[:material/notifications_active:] **{len(table)} open "
                f"alert{'s' if len(table) != 1 else ''}**{more}")  # fmt: skip
    shown = table.assign(
        opened=table["opened_at"].map(when), by=table["source"].str.split(":").str[0]
    )
    st.dataframe(
        shown[["opened", "subject", "message", "by", "delivery"]], hide_index=True,
        column_config={"message": st.column_config.TextColumn(width="large")},
    )  # fmt: skip


def _name(group: str) -> str:
    """A group as a heading names it (the scores of all images, a line not recorded)."""
    return {ALL: "(all scored)", NOT_RECORDED: "not recorded in the scores"}.get(group, group)


def at_a_glance(latest: pd.DataFrame, groups: list, word: str) -> None:
    """One line per group drawn: its worst verdict's colour, and how many latest lots need
    what; the groups beyond :data:`MAX_GROUPS` counted by their worst verdict."""
    for group in groups[:MAX_GROUPS]:
        mine = latest[latest["group"] == group]
        counts = mine["level"].value_counts()
        worst = min(counts.index, key=LEVELS.index)
        parts = [f"{counts[lv]} {LEVEL_WORDS[lv]}" for lv in LEVELS if lv in counts]
        mark, colour, words = LEVEL_MARKS[worst], LEVEL_COLOURS[worst], LEVEL_WORDS[worst]
        st.markdown(f":{colour}[{mark}] **{word} {_name(group)}**: :{colour}[{words}] "
                    f"(latest {len(mine)}: {', '.join(parts)})")  # fmt: skip
    rest = latest[latest["group"].isin(groups[MAX_GROUPS:])]
    if len(rest):
        worst = rest.groupby("group")["level"].agg(lambda s: min(s, key=LEVELS.index))
        counts = worst.value_counts()
        parts = [f"{counts[lv]} {LEVEL_WORDS[lv]}" for lv in LEVELS if lv in counts]
        st.markdown(f"The other {len(worst)} {word.lower()}s, by their worst verdict: "
                    f"{', '.join(parts)}.")  # fmt: skip


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
    jobs = sorted(jobs, key=lambda j: (-len(_open(j, MAX_ALERTS)), j.name))  # alerts first
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
