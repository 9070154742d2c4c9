"""Evaluation: confusion matrix, calibration curve, residuals over time, per-lot errors."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from _bundles import bundles_of, load, no_bundle_message, pick_bundle
from _common import guarded, show_warnings
from _labels import labelled_windows
from _recorded import recorded

from mfgtx.calibration import reliability_curve
from mfgtx.kinds import probability_column
from mfgtx.metrics import confusion_matrix


class _Pred(NamedTuple):
    lots: np.ndarray
    end: np.ndarray
    score: np.ndarray
    truth: np.ndarray


def _confusion(y: np.ndarray, p: np.ndarray, threshold: float) -> go.Figure:
    m = confusion_matrix(y, p, threshold=threshold)  # a lot is flagged when P(bad) > threshold
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


@st.cache_resource(max_entries=4, ttl=300, show_spinner="scoring the bundle's labelled data")
def _scored(bundle_id: str, path: str, _predictor, _windows):
    """Each labelled lot's rows (classifiers: its last window; regression: every window),
    once per bundle: moving the what-if threshold only recounts."""
    classifier = _predictor.task == "classification"
    idx = _windows.last_per_lot() if classifier else np.arange(len(_windows))
    return idx, _predictor.rows(_windows, idx)


@guarded
def evaluation() -> None:
    st.title("Evaluation")
    cfg, infos = bundles_of("sensor")
    if not infos:
        no_bundle_message(
            "sensor (lot quality or RUL)",
            cfg.models_dir,
            "mfgtx train sensor pipelines/configs/sample_quality.yaml",
        )
        return
    info = pick_bundle(infos, "evaluation_bundle", owns=("eval_threshold",))
    windows, source, notes = labelled_windows(info.bundle_id, str(info.path))
    show_warnings(notes)
    predictor = load(info)
    classifier = predictor.task == "classification"
    idx, rows = _scored(info.bundle_id, str(info.path), predictor, windows)
    st.caption(
        f"Every labelled lot of the bundle's training data ({source}; classifiers: its last "
        "window; regression: every window), training lots included: the held-out comparison "
        "with the baselines is on the Overview page."
    )
    truth = windows.y[idx, 0]
    if classifier:
        score = rows[probability_column(predictor.class_names[1])].to_numpy()
    else:
        score = rows[predictor.input_spec.targets[0]].to_numpy()
    pred = _Pred(windows.lot[idx], windows.end[idx], score, truth)
    keep = ~np.isnan(pred.truth) & np.isfinite(pred.score)
    y, score = pred.truth[keep], pred.score[keep]
    dated = np.issubdtype(pred.end.dtype, np.datetime64)
    end = pd.to_datetime(pred.end[keep], utc=True) if dated else pred.end[keep]
    lots = pred.lots[keep]
    if classifier:
        choice = predictor.calibration.threshold if predictor.calibration else None
        default = float(choice.threshold) if choice is not None else 0.5
        threshold = st.slider("Threshold (what-if)", 0.0, 1.0, default, 0.01, key="eval_threshold")
        y = y.astype(int)
        left, right = st.columns(2)
        left.plotly_chart(_confusion(y, score, threshold))
        right.plotly_chart(_reliability(score, y))
        unit, what = "", "P(bad) - actual (1 = bad)"
    else:
        target = predictor.input_spec.targets[0]
        unit, what = recorded(info.manifest).unit(target), f"predicted - actual {target}"
    residual = score - y
    x_hover = "%{x|%Y-%m-%d %H:%M} UTC" if dated else "%{x}"
    fig = go.Figure(
        go.Scatter(
            x=end,
            y=residual,
            mode="markers",
            text=lots,
            hovertemplate=f"%{{text}}<br>{x_hover}<br>residual %{{y:.3f}} {unit}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Residuals over time ({what})",
        xaxis_title="window end (UTC)" if dated else "window end",
        yaxis_title=f"residual ({unit})" if unit else "residual",
    )
    st.plotly_chart(fig)
    per_lot = (
        pd.DataFrame({"lot": lots, "error": np.abs(residual)})
        .groupby("lot", sort=False)["error"]
        .mean()
        .sort_values(ascending=False)
    )
    bars = go.Figure(
        go.Bar(
            x=per_lot.index.tolist(),
            y=per_lot.to_numpy(),
            hovertemplate=f"%{{x}}: mean |error| %{{y:.3f}} {unit}<extra></extra>",
        )
    )
    bars.update_layout(
        title="Per-lot mean absolute error",
        xaxis_title="lot",
        yaxis_title=f"|error| ({unit})" if unit else "|error|",
    )
    st.plotly_chart(bars)


evaluation()
