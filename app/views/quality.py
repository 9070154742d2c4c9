"""Quality & RUL: one lot's sensors and the SensorEncoder's calibrated call or RUL interval."""

from __future__ import annotations

import numpy as np
import streamlit as st
from _common import (
    MAX_CSV_MB,
    SENSOR_CLASS,
    UNITS,
    bundles_of,
    frame_for,
    guarded,
    last_windows,
    load,
    no_bundle_message,
    pick_bundle,
    predict_lots,
    read_upload_csv,
    sensor_figure,
)

from mfgtx.explain import attention_figure, attention_maps, deletion_figure, deletion_test
from mfgtx.jobs.score import bundle_columns


@guarded
def quality() -> None:
    st.title("Quality & RUL")
    cfg, infos = bundles_of(SENSOR_CLASS)
    if not infos:
        no_bundle_message(
            "SensorEncoder",
            cfg.models_dir,
            "mfgtx train sensor pipelines/configs/sample_quality.yaml",
        )
        return
    bundle = load(pick_bundle(infos, "quality_bundle"))
    cmap = bundle_columns(bundle, targets=True)
    upload = st.file_uploader(
        "Or upload a sensor CSV (same columns as the bundle's data)",
        "csv",
        max_upload_size=MAX_CSV_MB,
    )
    df = None
    if upload is not None:
        df, problem = read_upload_csv(upload, bundle_columns(bundle))  # new data: no labels yet
        if problem:
            st.error(f"Upload refused: {problem}")
    if df is None:
        df = frame_for(cmap, cfg.data_dir, need_targets=False)
    line_col = cmap.keys[0] if cmap.keys else None
    lines = sorted(df[line_col].astype(str).unique()) if line_col else []
    line = st.selectbox("Line", lines, key="quality_line") if lines else None
    lots_df = df if line is None else df[df[line_col].astype(str) == line]
    lot = st.selectbox("Lot", list(dict.fromkeys(lots_df[cmap.lot].astype(str))), key="quality_lot")
    rows = lots_df[lots_df[cmap.lot].astype(str) == lot]
    sensors = list(cmap.sensors)
    st.plotly_chart(sensor_figure(rows, cmap.time, sensors, f"Sensors of lot {lot}"))

    task = bundle.config.task
    stride = None if task == "classification" else max(1, bundle.config.max_len // 4)
    windows, last = last_windows(bundle, rows, with_targets=False, stride=stride)
    if last.size == 0:
        st.warning(f"Lot {lot} is shorter than the model's window of {bundle.config.max_len} rows.")
        return
    at = int(last[-1])
    if task != "classification" and len(windows) > 1:  # RUL: predict as of any window end
        ends = [str(e) for e in windows.end]
        at = ends.index(st.select_slider("Predict as of", ends, ends[-1], key="quality_as_of"))
    pred = predict_lots(bundle, windows, np.array([at]))
    st.subheader("Prediction")
    st.caption(f"From the model's window of {bundle.config.max_len} rows ending {windows.end[at]}.")
    if task == "classification":
        choice = bundle.calibration.threshold if bundle.calibration else None
        default = float(choice.threshold) if choice is not None else 0.5
        p = float(pred.score[0])
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
        target = 1
    else:
        unit = UNITS.get(cmap.targets[0], "") if cmap.targets else ""
        value = f"{pred.score[0]:.1f} {unit}"
        if pred.low is not None:
            qs = bundle.config.quantiles
            value += f" (interval {pred.low[0]:.1f} to {pred.high[0]:.1f}, q{qs[0]:g}-q{qs[-1]:g})"
        st.metric(f"Predicted {cmap.targets[0] if cmap.targets else 'value'}", value)
        target = None

    st.subheader("Attention (non-causal diagnostic) and deletion test")
    maps = attention_maps(bundle.model, pred.x, mask=pred.observed)
    st.plotly_chart(attention_figure(maps, 0))
    check = deletion_test(
        bundle.model, pred.x, maps, mask=pred.observed, fraction=0.1, target=target
    )
    st.plotly_chart(deletion_figure(check))
    st.caption(check.sentence())
    if not np.isfinite(pred.score).all():
        st.warning("The prediction is not a finite number; check the input data.")


quality()
