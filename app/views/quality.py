"""Quality & RUL: one lot's sensors and the sensor model's calibrated call or RUL interval.

The prediction is the row ``mfgtx score`` writes for the lot's window (the bundle's
predictor, :func:`mfgtx.load`); the attention map and its deletion test come from the
predictor's ``explain``.
"""

from __future__ import annotations

import numpy as np
import streamlit as st
from _common import (
    MAX_CSV_MB,
    UNITS,
    bundles_of,
    frame_for,
    guarded,
    load,
    lot_windows,
    no_bundle_message,
    pick_bundle,
    read_upload_csv,
    sensor_figure,
)

from mfgtx.explain import attention_figure, deletion_figure


@guarded
def quality() -> None:
    st.title("Quality & RUL")
    cfg, infos = bundles_of("sensor")
    if not infos:
        no_bundle_message(
            "SensorEncoder",
            cfg.models_dir,
            "mfgtx train sensor pipelines/configs/sample_quality.yaml",
        )
        return
    predictor = load(pick_bundle(infos, "quality_bundle"))
    spec = predictor.input_spec
    cmap = predictor.columns
    upload = st.file_uploader(
        "Or upload a sensor CSV (same columns as the bundle's data)",
        "csv",
        max_upload_size=MAX_CSV_MB,
    )
    df = None
    if upload is not None:
        df, problem = read_upload_csv(upload, predictor)  # new data: no labels yet
        if problem:
            st.error(f"Upload refused: {problem}")
    if df is None:
        df = frame_for(cmap, cfg.data_dir)
    line_col = cmap.keys[0] if cmap.keys else None
    lines = sorted(df[line_col].astype(str).unique()) if line_col else []
    line = st.selectbox("Line", lines, key="quality_line") if lines else None
    lots_df = df if line is None else df[df[line_col].astype(str) == line]
    lot = st.selectbox("Lot", list(dict.fromkeys(lots_df[cmap.lot].astype(str))), key="quality_lot")
    rows = lots_df[lots_df[cmap.lot].astype(str) == lot]
    sensors = list(cmap.sensors or ())
    st.plotly_chart(sensor_figure(rows, cmap.time, sensors, f"Sensors of lot {lot}"))

    task = spec.task
    window = spec.windowing.window
    stride = None if task == "classification" else max(1, window // 4)
    windows = lot_windows(predictor, rows.reset_index(drop=True), stride=stride)
    if len(windows) == 0:
        st.warning(f"Lot {lot} is shorter than the model's window of {window} rows.")
        return
    at = len(windows) - 1
    if task != "classification" and len(windows) > 1:  # RUL: predict as of any window end
        ends = [str(e) for e in windows.end]
        at = ends.index(st.select_slider("Predict as of", ends, ends[-1], key="quality_as_of"))
    row = predictor.rows(windows, np.array([at])).iloc[0]
    st.subheader("Prediction")
    st.caption(f"From the model's window of {window} rows ending {row['window_end']}.")
    if task == "classification":
        choice = predictor.calibration.threshold if predictor.calibration else None
        default = float(choice.threshold) if choice is not None else 0.5
        p = float(row["p_1"])
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
        unit = UNITS.get(target, "")
        score = float(row[target])
        value = f"{score:.1f} {unit}"
        qs = [c for c in row.index if c.startswith(f"{target}_q")]
        if len(qs) >= 2:
            value += (
                f" (interval {row[qs[0]]:.1f} to {row[qs[-1]]:.1f}, {qs[0][-3:]}-{qs[-1][-3:]})"
            )
        st.metric(f"Predicted {target}", value)

    st.subheader("Attention (non-causal diagnostic) and deletion test")
    explained = predictor.explain(windows, window=at)
    st.plotly_chart(attention_figure(explained.maps, 0))
    st.plotly_chart(deletion_figure(explained.deletion))
    st.caption(explained.deletion.sentence())
    if not np.isfinite(score):
        st.warning("The prediction is not a finite number; check the input data.")


quality()
