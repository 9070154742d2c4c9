"""Compare & promote: two bundles of one job side by side on the same lots, and the one the
plant view shows.

Each bundle's own figures (its standing against its baselines and its test metrics, as its
bundle records them), their predictions over time from the job's score history on the lots
both scored, and a table of the lots where they disagree (:mod:`mfgtx.history.compare`).
Promoting a bundle writes the job's row of ``history_promoted``
(:func:`mfgtx.history.promote.promote`): the plant view shows it from then on.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st
from _common import guarded, when
from _history import (
    RANGES,
    STAMP,
    PlantJob,
    bundle_label,
    cached_trend,
    job_label,
    plant_jobs,
    reader,
    shown_bundle,
    since,
    writer,
)
from _settings import app_config
from _trends import trend_figure
from _trust import show_trust

from mfgtx.history import (
    HistoryError,
    disagreements,
    last_scored,
    promote,
    side_by_side,
    trend_columns,
)
from mfgtx.metrics import plain_name


def figures(job: PlantJob, bundle_id: str) -> None:
    """The bundle's own figures: its standing and its test metrics (the model's row)."""
    found = job.found.get(bundle_id)
    if found is None:
        st.caption(f"Bundle {bundle_id[:12]} is not in the models folder: its own figures "
                   "are not shown.")  # fmt: skip
        return
    st.caption(f"Created {found.manifest.get('created_utc') or 'at an unrecorded time'}; "
               f"id {bundle_id[:12]}.")  # fmt: skip
    show_trust(found.manifest, details=False, lead="Standing.")
    rows = (found.manifest.get("metrics") or {}).get("rows") or []
    model = next((r for r in rows if r.get("kind") == "model"), None)
    if model:
        shown = [{"figure": plain_name(k), "value": v} for k, v in model["metrics"].items()]
        st.dataframe(pd.DataFrame(shown), hide_index=True)


def _promote(job: PlantJob, bundle_id: str, note: str) -> None:
    found = job.found.get(bundle_id)
    try:
        promote(writer(job.url), job.name, bundle_id,
                str(found.path) if found else None, note or None)  # fmt: skip
    except HistoryError as e:
        st.error(f"Not promoted: {e}")
        return
    st.session_state[STAMP] = st.session_state.get(STAMP, 0) + 1  # read the jobs again
    st.success(f"Promoted {bundle_label(job, bundle_id)}: the plant view shows it from now on.")


@guarded
def compare() -> None:
    st.title("Compare & promote")
    jobs = plant_jobs(app_config())
    if not jobs:
        st.info("No score history found yet: compare bundles once `mfgtx score` has run.")
        return
    labels = [job_label(j, jobs) for j in jobs]
    job = jobs[labels.index(st.selectbox("Job", labels, key="compare_job"))]
    ids = list(job.bundles)
    shown, promotion = shown_bundle(job)
    if promotion is not None:
        st.caption(f"Promoted: **{bundle_label(job, shown)}** since "
                   f"{when(promotion['promoted_at'])}.")  # fmt: skip
    else:
        st.caption("No bundle of this job is promoted: the plant view shows the one that "
                   "scored last.")  # fmt: skip
    if len(ids) < 2:
        st.info(f"Only {bundle_label(job, ids[0])} has scored for {job.name}: score the job "
                "with a second bundle to compare them.")  # fmt: skip
        if ids[0] != shown or promotion is None:
            note = st.text_input("Note (why this bundle)", key="compare_note")
            if st.button(f"Promote {bundle_label(job, ids[0])}", key="compare_promote_a"):
                _promote(job, ids[0], note)
        return
    names = {bundle_label(job, i): i for i in ids}
    left, right, span = st.columns(3)
    a = names[left.selectbox("Bundle A", list(names), index=0, key="compare_a")]
    b = names[right.selectbox("Bundle B", list(names), index=1, key="compare_b")]
    days = RANGES[span.selectbox("Over", list(RANGES), index=1, key="compare_range")]
    note = st.text_input("Note kept with a promotion (why this bundle)", key="compare_note")
    for side, bundle_id, col in (("a", a, left), ("b", b, right)):
        with col:
            st.subheader(bundle_label(job, bundle_id))
            figures(job, bundle_id)
            if promotion is not None and promotion["bundle_id"] == bundle_id:
                st.success("Promoted: the plant view shows it.")
            elif st.button(
                f"Promote {bundle_label(job, bundle_id)}", key=f"compare_promote_{side}"
            ):
                _promote(job, bundle_id, note)
    if a == b:
        st.info("Pick two different bundles to compare their predictions.")
        return
    frames = {}
    for bundle_id in (a, b):
        last = last_scored(reader(job.url), bundle_id)
        if last is None:
            st.info(f"{bundle_label(job, bundle_id)} has no scores yet.")
            return
        start = since(last, days)
        frames[bundle_id] = cached_trend(job.url, bundle_id, start, last, job.group_key, job.target)
    columns = [c for c in trend_columns(frames[a]) if c in frames[b]]
    if not columns:
        st.info("The two bundles have no prediction in common to compare.")
        return
    column = (
        st.selectbox("Prediction", columns, key="compare_column")
        if len(columns) > 1
        else columns[0]
    )
    both = side_by_side(frames[a], frames[b], column)
    st.subheader("Predictions over time, on the lots both scored")
    if both.empty:
        st.info("The two bundles scored no lot in common in this range.")
        return
    word = (job.group_key or job.lot_name).capitalize()
    for group, rows in both.groupby("group", sort=True):
        one = {bundle_label(job, a): _as_trend(rows, "a", column),
               bundle_label(job, b): _as_trend(rows, "b", column)}  # fmt: skip
        st.plotly_chart(trend_figure(one, column, f"{word} {group}: {column}",
                                     limit=job.limits.get(column), band=False),
                        key=f"compare_trend_{group}")  # fmt: skip
    apart = disagreements(both, column)
    st.subheader(f"Where they disagree: {len(apart)} of {len(both)} scored windows")
    if len(apart):
        st.dataframe(
            pd.DataFrame({
                job.lot_name: apart["lot"], "window end": apart["window_end"],
                word.lower(): apart["group"],
                f"A: {column}": apart[f"a_{column}"].round(3), "A decision": apart["a_decision"],
                f"B: {column}": apart[f"b_{column}"].round(3), "B decision": apart["b_decision"],
                "B - A": apart["difference"].round(3), "actual": apart["actual"],
                "why": apart["why"],
            }),
            hide_index=True,
        )  # fmt: skip


def _as_trend(rows: pd.DataFrame, side: str, column: str) -> pd.DataFrame:
    """One bundle's half of :func:`side_by_side` as a trend frame."""
    return pd.DataFrame({
        "time": rows["time"], "lot": rows["lot"], column: rows[f"{side}_{column}"],
        "low": rows[f"{side}_low"], "high": rows[f"{side}_high"],
        "actual": rows["actual"] if side == "a" else float("nan"),
    })  # fmt: skip


compare()
