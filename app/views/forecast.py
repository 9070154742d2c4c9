"""Forecast: sensor history, and the forecast with its quantile band from a forecaster bundle.

The forecast is what ``mfgtx score`` writes for the lot's latest window (the bundle's
predictor, :func:`mfgtx.load`): its columns, window and stride are the bundle's, read from its
input specification, never the sample plant's.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from _common import (
    UNITS,
    bundles_of,
    frame_for,
    guarded,
    load,
    lot_windows,
    no_bundle_message,
    pick_bundle,
)


def forecast_band(predictor, history: pd.DataFrame, sensor: str, horizon: int) -> pd.DataFrame:
    """Columns ``time, median, low, high`` for the next ``horizon`` minutes of ``sensor`` (at
    most the model's own horizon), from the lot's latest window.

    The band is the model's outer quantiles when it was trained with quantiles, else none
    (``low``/``high`` equal the point forecast). Raises ``ValueError`` with a message for
    the page when the lot is too short or the bundle does not forecast ``sensor``.
    """
    spec = predictor.input_spec
    targets = list(spec.targets)  # the other sensors: past covariates
    if sensor not in targets:
        raise ValueError(f"this forecaster forecasts {targets}, not {sensor!r}")
    window = spec.windowing.window
    if len(history) < window:
        raise ValueError(
            f"the lot has {len(history)} readings; this forecaster needs the last {window}"
        )
    windows = lot_windows(predictor, history.reset_index(drop=True))
    rows = predictor.rows(windows, np.array([len(windows) - 1]))
    rows = rows[rows["sensor"] == sensor]
    t = pd.to_datetime(history[spec.columns.time], utc=True)
    minutes = max(t.diff().median() / pd.Timedelta(minutes=1), 1e-9)
    steps = max(1, min(round(horizon / minutes), spec.horizon))
    rows = rows[rows["step"] <= steps]
    qs = sorted(c for c in rows.columns if c.startswith("q") and c[1:].isdigit())
    low = rows[qs[0]] if qs else rows["forecast"]
    high = rows[qs[-1]] if qs else rows["forecast"]
    median = rows["q50"] if "q50" in rows.columns else rows["forecast"]
    return pd.DataFrame(
        {
            "time": pd.to_datetime(rows["forecast_at"], utc=True).to_numpy(),
            "median": median.to_numpy(),
            "low": low.to_numpy(),
            "high": high.to_numpy(),
        }
    )


def _figure(history: pd.DataFrame, time: str, sensor: str, band: pd.DataFrame | None) -> go.Figure:
    unit = UNITS.get(sensor, "")
    fig = go.Figure()
    fig.add_scatter(
        x=pd.to_datetime(history[time], utc=True),
        y=history[sensor],
        mode="lines",
        name="history",
        hovertemplate=f"%{{x|%Y-%m-%d %H:%M}} UTC<br>%{{y:.3f}} {unit}<extra></extra>",
    )
    if band is not None:
        fig.add_scatter(
            x=band["time"],
            y=band["high"],
            mode="lines",
            line={"width": 0},
            name="upper quantile",
            showlegend=False,
        )
        fig.add_scatter(
            x=band["time"],
            y=band["low"],
            mode="lines",
            line={"width": 0},
            fill="tonexty",
            name="quantile band",
        )
        fig.add_scatter(x=band["time"], y=band["median"], mode="lines", name="forecast")
    fig.update_layout(
        title=f"{sensor}",
        xaxis_title="time (UTC)",
        yaxis_title=f"{sensor} ({unit})",
        hovermode="x unified",
    )
    return fig


@guarded
def forecast() -> None:
    st.title("Forecast")
    cfg, infos = bundles_of("forecast")
    if not infos:
        no_bundle_message("forecaster", cfg.models_dir, "mfgtx demo")
        return
    predictor = load(pick_bundle(infos, "forecast_bundle"))
    spec = predictor.input_spec
    cols = predictor.columns
    df = frame_for(cols, cfg.data_dir)
    lot = st.selectbox("Lot", list(dict.fromkeys(df[cols.lot].astype(str))), key="forecast_lot")
    sensors = list(cols.sensors or ())
    chosen = st.multiselect(
        "Sensors", sensors, default=list(spec.targets[:1]), key="forecast_sensors"
    )
    horizon = st.slider("Horizon (minutes)", 5, 120, 30, 5, key="forecast_horizon")
    history = df[df[cols.lot].astype(str) == lot]
    for sensor in chosen:
        band = None
        try:
            band = forecast_band(predictor, history, sensor, horizon)
        except ValueError as e:
            st.warning(str(e))
        st.plotly_chart(_figure(history, cols.time, sensor, band))


forecast()
