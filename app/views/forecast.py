"""Forecast: sensor history, the forecast with its quantile band, the bundle's best baseline
(the one that did best on its test lots; Naive for bundles that do not keep it) and, from a
past origin the user picks, what actually happened.

The forecast is what ``mfgtx score`` writes for the window ending at the origin (the bundle's
predictor, :func:`mfgtx.load`): its columns, window and horizon are the bundle's, read from
its input specification, never the sample plant's. The horizon control is bounded by the
model's horizon; nothing beyond it is offered.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from _bundles import bundles_of, load, no_bundle_message, pick_bundle
from _common import csv_download, data_key, guarded, when
from _handoff import take
from _recorded import recorded
from _tables import frame_for, lot_windows
from _trust import set_sentence, show_trust

from mfgtx.baselines import baseline_words
from mfgtx.calibration import describe_band
from mfgtx.metrics import interval_coverage, mae

#: What the user picked for the bundle shown, cleared when another bundle is shown.
FORECAST_PICKS = ("forecast_lot", "forecast_sensors", "forecast_horizon", "forecast_origin")


@st.cache_resource(max_entries=64, show_spinner=False)
def _band(bundle_id: str, source: str, sensor: str, steps: int, origin: int, _p: Any,
          _history: pd.DataFrame) -> pd.DataFrame:  # fmt: skip
    """:func:`forecast_band`, once per bundle, lot data, sensor, horizon and origin (read
    only: the page copies it before adding to it)."""
    return forecast_band(_p, _history, sensor, steps, origin)


def reading_minutes(history: pd.DataFrame, time: str) -> float:
    """Median minutes between the lot's readings."""
    t = pd.to_datetime(history[time], utc=True)
    return float(max(t.diff().median() / pd.Timedelta(minutes=1), 1e-9))


def forecast_band(
    predictor: Any, history: pd.DataFrame, sensor: str, steps: int, origin: int = -1
) -> pd.DataFrame:
    """Columns ``time, median, low, high, baseline`` for the next ``steps`` readings of
    ``sensor`` (at most the model's horizon) from the window ending at reading ``origin`` of
    the lot (``-1``: the latest); ``baseline`` is the bundle's best baseline from the same
    window (NaN when the bundle does not keep one).

    The band is the model's outer quantiles when it was trained with quantiles, else none
    (``low``/``high`` equal the point forecast). Raises ``ValueError`` with a message for
    the page when the lot is too short or the bundle does not forecast ``sensor``.
    """
    spec = predictor.input_spec
    targets = list(spec.targets)  # the other sensors: past covariates
    if sensor not in targets:
        raise ValueError(f"this forecaster forecasts {', '.join(targets)}, not {sensor}")
    window = spec.windowing.window
    if len(history) < window:
        raise ValueError(
            f"the lot has {len(history)} readings; this forecaster needs the last {window}"
        )
    history = history.reset_index(drop=True)
    end = len(history) if origin < 0 else origin + 1
    windows = lot_windows(predictor, history.iloc[:end])
    last = np.array([len(windows) - 1])
    rows = predictor.rows(windows, last)
    rows = rows[rows["sensor"] == sensor]
    rows = rows[rows["step"] <= max(1, min(steps, spec.horizon))]
    base = predictor.baseline_arrays(windows, last)  # (1, H, K) or None
    baseline = (
        np.full(len(rows), np.nan)
        if base is None
        else base[0, rows["step"].to_numpy() - 1, targets.index(sensor)]
    )
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
            "baseline": baseline,
        }
    )


def against_actual(actual: np.ndarray, band: pd.DataFrame, unit: str, baseline: str) -> str:
    """How the forecast ``band`` (:func:`forecast_band`) did against the ``actual``
    readings that followed, in words: the share inside the band and the mean absolute
    error of the forecast and of the ``baseline`` (:mod:`mfgtx.metrics`)."""
    bands = band[["low", "high"]].to_numpy(float)[None, :, None, :]  # (1, H, 1, 2)
    inside = interval_coverage(actual[None, :, None], bands, (0.0, 1.0))["coverage"]
    error, error_base = mae(actual, band["median"]), mae(actual, band["baseline"])
    return (
        f"{len(actual)} actual readings, {inside:.0%} inside the band; mean |error| "
        f"{error:.3f} {unit} for the forecast, {error_base:.3f} {unit} for {baseline}."
    )


def band_words(predictor: Any) -> str | None:
    """What the band is (the bundle's conformal interval, or its uncalibrated quantiles for
    an older bundle) and what it held on the bundle's test lots, in the library's words
    (:func:`mfgtx.calibration.coverage.describe_band`)."""
    qs = list(getattr(predictor.model.config, "quantiles", None) or ())
    report = predictor.report
    held = report.intervals[0] if report is not None and report.intervals else None
    cal = predictor.intervals
    words = describe_band(cal, qs, held)
    if words is None:
        return None
    nominal = cal.coverage if cal is not None else max(qs) - min(qs)
    words = f"{words[:-1]}: nominally {round(nominal * 100)} in 100 actual readings fall inside it"
    extra = (predictor.bundle.manifest.get("metrics") or {}).get("extra") or {}
    if held is None and "interval_coverage" in extra:  # a bundle written before the report
        words += f"; on the bundle's test lots {float(extra['interval_coverage']):.0%} did"
    return words + "."


def _figure(
    history: pd.DataFrame,
    time: str,
    sensor: str,
    band: pd.DataFrame | None,
    origin: int,
    baseline_name: str,
    unit: str,
) -> go.Figure:
    t = pd.to_datetime(history[time], utc=True)
    hover = f"%{{x|%Y-%m-%d %H:%M}} UTC<br>%{{y:.3f}} {unit}<extra>%{{fullData.name}}</extra>"
    past = slice(0, origin + 1)
    fig = go.Figure()
    fig.add_scatter(
        x=t.iloc[past], y=history[sensor].iloc[past], mode="lines", name="history",
        line={"color": "#1f77b4"}, hovertemplate=hover,
    )  # fmt: skip
    if band is not None:
        after = history.iloc[origin + 1 : origin + 1 + len(band)]
        if len(after):
            fig.add_scatter(
                x=pd.to_datetime(after[time], utc=True), y=after[sensor], mode="lines+markers",
                name="actual", line={"color": "black"}, marker={"size": 4}, hovertemplate=hover,
            )  # fmt: skip
        fig.add_scatter(
            x=band["time"], y=band["high"], mode="lines", line={"width": 0},
            name="upper quantile", showlegend=False, hoverinfo="skip",
        )  # fmt: skip
        fig.add_scatter(
            x=band["time"], y=band["low"], mode="lines", line={"width": 0}, fill="tonexty",
            fillcolor="rgba(255,127,14,0.25)", name="quantile band", hoverinfo="skip",
        )  # fmt: skip
        fig.add_scatter(
            x=band["time"], y=band["baseline"], mode="lines", name=baseline_name,
            line={"dash": "dash", "color": "gray"}, hovertemplate=hover,
        )  # fmt: skip
        fig.add_scatter(
            x=band["time"], y=band["median"], mode="lines", name="forecast",
            line={"color": "#ff7f0e"}, hovertemplate=hover,
        )  # fmt: skip
        fig.add_vline(x=t.iloc[origin], line={"dash": "dot", "color": "gray"})
    fig.update_layout(
        title=sensor,
        xaxis_title="time (UTC)",
        yaxis_title=f"{sensor} ({unit})" if unit else sensor,
        hovermode="x unified",
        legend={"orientation": "h", "y": -0.25},
        height=420,
    )
    return fig


def _best_baseline(manifest: dict) -> str | None:
    metrics = manifest.get("metrics") or {}
    primary = metrics.get("primary")
    higher = (metrics.get("higher_is_better") or {}).get(primary)
    rows = [r for r in metrics.get("rows") or [] if r.get("kind") == "baseline"]
    if not rows or primary is None or higher is None:
        return None
    pick = max if higher else min
    return pick(rows, key=lambda r: r["metrics"][primary])["name"]


@guarded
def forecast() -> None:
    st.title("Forecast")
    cfg, infos = bundles_of("forecast")
    if not infos:
        no_bundle_message("forecaster", cfg.models_dir, "mfgtx demo")
        return
    handed = take("forecast")  # a lot opened from the plant view
    if handed and handed["bundle"] in [b.path.name for b in infos]:
        st.session_state["forecast_bundle"] = handed["bundle"]
    info = pick_bundle(infos, "forecast_bundle", owns=FORECAST_PICKS)
    predictor = load(info)
    spec = predictor.input_spec
    cols = predictor.columns
    units = recorded(info.manifest).units  # as the bundle's job file gives them
    df = frame_for(cols, cfg.data_dir, info.manifest)
    if handed and handed["bundle"] == info.path.name:
        if str(handed["lot"]) in set(df[cols.lot].astype(str)):
            st.session_state["forecast_lot"] = str(handed["lot"])
        else:
            st.info(f"Lot {handed['lot']} is not in the data folder's data; pick another lot.")
    with st.sidebar:
        lot = st.selectbox("Lot", list(dict.fromkeys(df[cols.lot].astype(str))), key="forecast_lot")
        targets = list(spec.targets)
        chosen = st.multiselect(
            "Sensors", targets, default=targets[:1], key="forecast_sensors",
            help="The sensors this forecaster forecasts.",
        )  # fmt: skip
    history = df[df[cols.lot].astype(str) == lot].reset_index(drop=True)
    source = data_key(history)  # the lot's readings: keys its cached forecasts
    window = spec.windowing.window
    show_trust(info.manifest)
    st.markdown(set_sentence(info.manifest, lot))
    if len(history) < window:
        st.warning(
            f"Lot {lot} has {len(history)} readings; this forecaster needs the last {window}, "
            "so it makes no forecast for it yet."
        )
        return
    minutes = reading_minutes(history, cols.time)
    steps = st.select_slider(
        "Horizon",
        options=list(range(1, spec.horizon + 1)),
        value=min(spec.horizon, max(1, round(30 / minutes))),
        format_func=lambda k: f"{k * minutes:g} min ({k} readings)",
        key="forecast_horizon",
        help=f"At most the model's horizon: {spec.horizon} readings.",
    )
    ends = list(range(window - 1, len(history)))
    times = pd.to_datetime(history[cols.time], utc=True)
    origin = st.select_slider(
        "Forecast from",
        options=ends,
        value=ends[-1],
        format_func=lambda i: when(times.iloc[i]),
        key="forecast_origin",
        help="Pick a past origin to see what actually happened against the forecast.",
    )
    words = band_words(predictor)
    kept = predictor.best_baseline
    best = kept or _best_baseline(info.manifest)
    if kept:
        baseline_name = f"baseline: {baseline_words(kept)}"
        note = (
            f"Grey dashes: {baseline_words(kept)}, the baseline that did best on the bundle's "
            "test lots, forecasting from the same readings"
        )
    else:
        baseline_name = f"baseline: {baseline_words('Naive')}"
        note = f"Grey dashes: {baseline_words('Naive')} (the last reading held flat)"
        if best and best != "Naive":
            note += (
                f"; the bundle's best baseline on its test lots was {baseline_words(best)}, "
                "which this bundle does not keep (retrain it to draw it)"
            )
    st.caption(note + "." + (f" {words}" if words else ""))
    table = []
    for sensor in chosen:
        band = None
        try:
            band = _band(info.bundle_id, source, sensor, steps, origin, predictor, history)
            band = band.copy()
        except ValueError as e:
            st.warning(str(e))
        if band is not None and not kept:  # Naive: the last reading held
            band["baseline"] = float(history[sensor].iloc[: origin + 1].dropna().iloc[-1])
        unit = units.get(sensor, "")
        st.plotly_chart(_figure(history, cols.time, sensor, band, origin, baseline_name, unit))
        if band is None:
            continue
        after = history[sensor].iloc[origin + 1 : origin + 1 + len(band)].to_numpy(float)
        seen = ~np.isnan(after)  # a missing reading is not counted
        if seen.any():
            shown = band.iloc[: len(after)][seen]
            words = against_actual(after[seen], shown, unit, kept or "Naive")
            st.caption(f"From {when(times.iloc[origin])}: {words}")
        table.append(band.assign(sensor=sensor))
    if table:
        out = pd.concat(table, ignore_index=True)
        out["time"] = out["time"].dt.strftime("%Y-%m-%d %H:%M UTC")
        csv_download(out, "Download the forecast (CSV)", f"forecast_{lot}.csv", "forecast_dl")


forecast()
