"""Evaluation: confusion matrix, calibration curve, residuals over time, per-lot errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from _common import (
    SENSOR_CLASS,
    bundles_of,
    guarded,
    last_windows,
    load,
    no_bundle_message,
    pick_bundle,
    plant_frame,
    predict_lots,
)

from mfgtx.calibration import reliability_curve


def _confusion(y: np.ndarray, flagged: np.ndarray) -> go.Figure:
    m = np.array([[np.sum((y == a) & (flagged == b)) for b in (0, 1)] for a in (0, 1)], dtype=int)
    fig = go.Figure(
        go.Heatmap(
            z=m.tolist(),
            x=["predicted pass", "predicted bad"],
            y=["actual pass", "actual bad"],
            text=m.tolist(),
            texttemplate="%{text}",
            colorscale="Blues",
            hovertemplate="%{y}, %{x}: %{z} lots<extra></extra>",
        )
    )
    fig.update_layout(title="Confusion matrix (lots)")
    fig.update_yaxes(autorange="reversed")
    return fig


def _reliability(p: np.ndarray, y: np.ndarray) -> go.Figure:
    curve = reliability_curve(p, y, n_bins=5)
    fig = go.Figure()
    fig.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfect", line={"dash": "dot"})
    fig.add_scatter(
        x=curve["mean_predicted"],
        y=curve["observed_frequency"],
        customdata=curve["counts"],
        mode="lines+markers",
        name="model",
        hovertemplate="predicted %{x:.2f}<br>observed %{y:.2f}<br>%{customdata} lots"
        "<extra></extra>",
    )
    fig.update_layout(
        title="Calibration curve",
        xaxis_title="predicted P(bad lot)",
        yaxis_title="observed share of bad lots",
    )
    return fig


@guarded
def evaluation() -> None:
    st.title("Evaluation")
    cfg, infos = bundles_of(SENSOR_CLASS)
    if not infos:
        no_bundle_message("SensorEncoder", cfg.models_dir, "mfgtx train quality")
        return
    bundle = load(pick_bundle(infos, "evaluation_bundle"))
    windows, last = last_windows(bundle, plant_frame(str(cfg.data_dir)), with_targets=True)
    pred = predict_lots(bundle, windows, last)
    st.caption(
        f"Every labelled lot in `{cfg.data_dir}`, judged from its last window, training lots "
        "included: the held-out comparison with the baselines is on the Overview page."
    )
    keep = ~np.isnan(pred.truth)
    y, score = pred.truth[keep], pred.score[keep]
    end = pd.to_datetime(pred.end[keep], utc=True)
    lots = pred.lots[keep]
    if bundle.config.task == "classification":
        choice = bundle.calibration.threshold if bundle.calibration else None
        default = float(choice.threshold) if choice is not None else 0.5
        threshold = st.slider("Threshold (what-if)", 0.0, 1.0, default, 0.01, key="eval_threshold")
        flagged = (score > threshold).astype(int)
        y = y.astype(int)
        left, right = st.columns(2)
        left.plotly_chart(_confusion(y, flagged))
        right.plotly_chart(_reliability(score, y))
        residual, unit, what = score - y, "", "P(bad) - actual (1 = bad)"
    else:
        residual, unit, what = score - y, "", "predicted - actual"
    fig = go.Figure(
        go.Scatter(
            x=end,
            y=residual,
            mode="markers",
            text=lots,
            hovertemplate="%{text}<br>%{x|%Y-%m-%d %H:%M} UTC<br>residual %{y:.3f}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Residuals over time ({what})",
        xaxis_title="lot end (UTC)",
        yaxis_title=f"residual {unit}".strip(),
    )
    st.plotly_chart(fig)
    order = np.argsort(-np.abs(residual))
    bars = go.Figure(
        go.Bar(
            x=lots[order],
            y=np.abs(residual[order]),
            hovertemplate="%{x}: |error| %{y:.3f}<extra></extra>",
        )
    )
    bars.update_layout(title="Per-lot absolute error", xaxis_title="lot", yaxis_title="|error|")
    st.plotly_chart(bars)


evaluation()
