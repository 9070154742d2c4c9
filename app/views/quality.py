"""Quality & RUL: one lot's sensors and the sensor model's calibrated call or RUL interval.

The prediction is the row ``mfgtx score`` writes for the lot's window (the bundle's
predictor, :func:`mfgtx.load`); beside it, how far to trust it (the bundle's verdict against
its baselines), which set of the bundle's split the lot was in, and its known result. The
attention map and its deletion test come from the predictor's ``explain``, cached per lot and
window so that moving a control does not rerun them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import streamlit as st
from _bundles import bundles_of, load, no_bundle_message, pick_bundle
from _common import csv_download, data_key, guarded, when
from _figures import (
    attention_bars,
    deletion_bars,
    deletion_sentence,
    notice,
    sensor_figure,
    token_labels,
)
from _handoff import take
from _interval import shown
from _labels import known_label
from _recorded import recorded
from _settings import MAX_CSV_MB
from _tables import csv_format, frame_for, lot_windows, read_upload_csv
from _trust import set_sentence, show_trust

from mfgtx.calibration import describe_band
from mfgtx.kinds import probability_column

#: What the user picked for the bundle shown, cleared when another bundle is shown.
QUALITY_PICKS = ("quality_line", "quality_lot", "quality_as_of", "quality_threshold")


@st.cache_resource(max_entries=32, show_spinner="running the deletion test")
def _explained(bundle_id: str, source: str, lot: str, at: int, _predictor: Any, _windows: Any):
    """The attention maps and deletion test of window ``at`` of one lot (keyed by bundle,
    data fingerprint, lot and window; the predictor and windows follow from those)."""
    return _predictor.explain(_windows, window=at)


@st.cache_resource(max_entries=32, show_spinner=False)
def _lot_windows(bundle_id: str, source: str, lot: str, stride: int | None, _p: Any, _rows: Any):
    return lot_windows(_p, _rows, stride=stride)


@st.cache_resource(max_entries=64, show_spinner=False)
def _rows(bundle_id: str, source: str, lot: str, stride: int | None, at: int, _p: Any,
          _windows: Any) -> pd.DataFrame:  # fmt: skip
    """The output row of window ``at`` (read only: the what-if threshold only compares)."""
    return _p.rows(_windows, np.array([at]))


def _window_times(rows: pd.DataFrame, time: str, windows: Any, at: int) -> list[str]:
    """Each step of window ``at`` as a short time (HH:MM for timestamps, the cycle number)."""
    values = rows[time].to_numpy()
    start = int(windows.row_start[at]) - int(0 if windows.pad is None else windows.pad[at])
    out = []
    for s in range(start, start + windows.window):
        if s < 0 or s >= len(values):
            out.append("before the lot")
        elif pd.api.types.is_numeric_dtype(rows[time]):
            out.append(f"{float(values[s]):g}")
        else:
            out.append(pd.Timestamp(values[s]).strftime("%H:%M"))
    return out


def interval_words(predictor: Any, lo: int, hi: int) -> str:
    """The interval shown (columns ``_q<lo>`` .. ``_q<hi>``) in the library's words: the
    bundle's conformal interval, or the model's own quantiles for an older bundle, and what
    it held on the bundle's test lots (:func:`mfgtx.calibration.coverage.describe_band`)."""
    report = predictor.report
    held = report.intervals[0] if report is not None and report.intervals else None
    words = describe_band(predictor.intervals, (lo / 100, hi / 100), held)
    return f"{str(words)[:-1]}: nominally {hi - lo} in 100 true values fall inside it."


def _preselect(df: pd.DataFrame, lot_col: str, line_col: str | None, handed: dict) -> None:
    """Pick the lot the plant view opened (and its line) where the data holds it."""
    rows = df[df[lot_col].astype(str) == str(handed["lot"])]
    if rows.empty:
        st.info(f"Lot {handed['lot']} is not in the data folder's data; pick another lot.")
        return
    if line_col:
        st.session_state["quality_line"] = str(rows[line_col].iloc[0])
    st.session_state["quality_lot"] = str(handed["lot"])


@guarded
def quality() -> None:
    st.title("Quality & RUL")
    cfg, infos = bundles_of("sensor")
    if not infos:
        no_bundle_message(
            "sensor (lot quality or RUL)",
            cfg.models_dir,
            "mfgtx train sensor pipelines/configs/sample_quality.yaml",
        )
        return
    handed = take("quality")  # a lot opened from the plant view
    if handed and handed["bundle"] in [b.path.name for b in infos]:
        st.session_state["quality_bundle"] = handed["bundle"]
    info = pick_bundle(infos, "quality_bundle", owns=QUALITY_PICKS)
    predictor = load(info)
    spec = predictor.input_spec
    cmap = predictor.columns
    units = recorded(info.manifest).units  # as the bundle's job file gives them
    upload = st.file_uploader(
        "Or upload a sensor CSV (same columns as the bundle's data)",
        "csv",
        max_upload_size=MAX_CSV_MB,
        key="quality_upload",
    )
    uploaded = upload is not None
    if uploaded:
        fmt = csv_format(info.manifest, "quality_csv", predictor)
        df, problem = read_upload_csv(upload, predictor, fmt)  # new data: no labels yet
        if problem:
            st.error(f"Upload refused: {problem}")
            st.info("Nothing is drawn for a refused file. Fix it and upload it again, or "
                    "remove it (the ✕ beside its name) to see the data folder's lots.")  # fmt: skip
            return
    else:
        df = frame_for(cmap, cfg.data_dir, info.manifest)
    source = data_key(df)
    line_col = cmap.keys[0] if cmap.keys else None
    lines = sorted(df[line_col].astype(str).unique()) if line_col else []
    if handed and handed["bundle"] == info.path.name:
        _preselect(df, cmap.lot, line_col, handed)
    line = st.selectbox("Line", lines, key="quality_line") if lines else None
    lots_df = df if line is None else df[df[line_col].astype(str) == line]
    lot = st.selectbox("Lot", list(dict.fromkeys(lots_df[cmap.lot].astype(str))), key="quality_lot")
    rows = lots_df[lots_df[cmap.lot].astype(str) == lot].reset_index(drop=True)
    sensors = list(cmap.sensors or ())

    task = spec.task
    window = spec.windowing.window
    need = spec.windowing.min_rows or window
    if len(rows) < need:
        st.plotly_chart(sensor_figure(rows, cmap.time, sensors, f"Sensors of lot {lot}", units))
        st.warning(
            f"Lot {lot} has {len(rows)} readings; this model reads the last {need} of a lot, "
            "so it makes no prediction for it yet."
        )
        return
    stride = None if task == "classification" else max(1, window // 4)
    windows = _lot_windows(info.bundle_id, source, lot, stride, predictor, rows)
    at = len(windows) - 1
    if task != "classification" and len(windows) > 1:  # RUL: predict as of any window end
        ends = [when(e, cmap.time) for e in windows.end]
        picked = st.select_slider("Predict as of", ends, ends[-1], key="quality_as_of")
        at = ends.index(picked)

    st.subheader("Prediction")
    show_trust(info.manifest)
    rows_out = _rows(info.bundle_id, source, lot, stride, at, predictor, windows)
    row = rows_out.iloc[0]
    st.caption(
        f"From the model's window of {window} readings ending {when(windows.end[at], cmap.time)}."
    )
    if task == "classification":
        choice = predictor.calibration.threshold if predictor.calibration else None
        default = float(choice.threshold) if choice is not None else 0.5
        p = float(row[probability_column(predictor.class_names[1])])
        st.metric("Calibrated probability of a bad lot", f"{p:.1%}")
        what_if = st.slider(
            "Operating threshold (what-if only; the bundle's threshold is not changed)",
            0.0,
            1.0,
            default,
            0.01,
            key="quality_threshold",
        )
        flagged = p > what_if
        st.markdown(
            f"Decision at {what_if:.2f}: **{'flag for inspection' if flagged else 'pass'}** "
            f"(bundle threshold {default:.3f}"
            + (
                f", chosen for a missed bad lot costing {choice.cost_ratio:g} false alarms)"
                if choice is not None
                else ")"
            )
        )
        score = p
    else:
        target = spec.targets[0]
        unit = units.get(target, "")
        qs = sorted(c for c in row.index if c.startswith(f"{target}_q"))
        bounds = (float(row[qs[0]]), float(row[qs[-1]])) if len(qs) >= 2 else ()
        out = shown(spec, target, float(row[target]), *bounds)  # within the target's range
        score = out.point
        value = f"{score:.1f} {unit}".rstrip()
        if bounds:
            lo, hi = (int(q.rsplit("_q", 1)[1]) for q in (qs[0], qs[-1]))
            value += f" (interval {out.low:.1f} to {out.high:.1f})"
            st.metric(f"Predicted {target}", value)
            st.caption(interval_words(predictor, lo, hi))
            if not out.low <= score <= out.high:  # the point and quantile heads disagree
                st.warning(
                    f"The point prediction {score:.1f} {unit} lies outside its own interval: "
                    "the model's point and interval outputs disagree here, so trust neither "
                    "for this lot; retrain with more epochs or data."
                )
        else:
            st.metric(f"Predicted {target}", value)
        if out.note:
            st.caption(out.note)
    st.markdown(set_sentence(info.manifest, lot))  # by lot id, uploaded or not
    if uploaded:
        st.caption("Uploaded data: its lot's inspection result is not looked up here.")
    else:
        st.caption(known_label(info, lot, windows.end[at] if task != "classification" else None))
    if not np.isfinite(score):
        st.warning("The prediction is not a finite number; check the lot's readings.")
    csv_download(
        rows_out, "Download this prediction (CSV)", f"{info.path.name}_{lot}.csv", "quality_dl"
    )

    st.plotly_chart(sensor_figure(rows, cmap.time, sensors, f"Sensors of lot {lot}", units))

    st.subheader("Attention and deletion test")
    notice()
    explained = _explained(info.bundle_id, source, lot, at, predictor, windows)
    times = _window_times(rows, cmap.time, windows, at)
    labels = token_labels(explained.maps, predictor.channel_names, times, units)
    axis = "sensor" if explained.maps.axis == "sensor" else "readings of the window (time)"
    left, right = st.columns(2)
    left.plotly_chart(attention_bars(explained.maps, labels, axis_title=axis))
    if task == "classification":
        scale, unit, watched = 100.0, "percentage points", "P(bad lot)"
    else:
        target = spec.targets[0]
        scale, unit, watched = 1.0, units.get(target, "") or target, f"the predicted {target}"
    right.plotly_chart(deletion_bars(explained.deletion, scale=scale, unit=unit, watched=watched))
    st.caption(deletion_sentence(explained.deletion, scale=scale, unit=unit, watched=watched))


quality()
