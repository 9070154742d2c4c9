"""Diagnostic charts drawn for reading: attention maps with plant labels, deletion tests in the
prediction's own units, the image overlay whose opacity the page controls.

The maps and deletion results come from the predictor's ``explain`` (:mod:`mfgtx.explain`);
these functions only draw them. Each figure keeps ``layout.meta`` (``kind`` and ``notice``)
and the kind in its title, but the notice itself is written once per section by the page
(:func:`notice`), never over the axes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from mfgtx.explain import KIND, NOTICE

#: A map whose weights spread less than this share of their mean is called flat.
FLAT_SPREAD = 0.25
FLAT_LABEL = "flat: this map does not single out any input"


def notice() -> None:
    """The non-causal notice, once per diagnostics section."""
    st.caption(f"**{KIND.capitalize()}.** {NOTICE}")


def spread(weights: np.ndarray) -> float:
    """``(max - min) / mean`` of a map's weights: 0 for a perfectly flat map."""
    w = np.asarray(weights, dtype=np.float64)
    mean = float(np.mean(w)) if w.size else 0.0
    return float((w.max() - w.min()) / mean) if mean > 0 else 0.0


def is_flat(weights: np.ndarray) -> bool:
    return spread(weights) < FLAT_SPREAD


def _meta(fig: go.Figure, title: str) -> go.Figure:
    """``title`` with the kind on its first line; ``layout.meta`` for programs and tests."""
    head, _, rest = title.partition("<br>")
    text = f"{head} ({KIND})" + (f"<br>{rest}" if rest else "")
    fig.update_layout(title={"text": text}, meta={"kind": KIND, "notice": NOTICE})
    return fig


def token_labels(
    maps: Any,
    sensors: Sequence[str],
    times: Sequence[str] | None,
    units: Mapping[str, str] | None = None,
) -> list[str]:
    """Names of a map's inputs: the model's channels (``sensors``: the predictor's
    ``channel_names``, one per input) with their ``units``, or the time span each patch
    covers."""
    m = int(maps.rollout.shape[-1])
    if maps.axis == "sensor":
        if len(sensors) != m:  # a bundle that does not name its channels: numbered
            return [f"input {i + 1}" for i in range(m)]
        units = units or {}
        return [f"{s} ({units[s]})" if units.get(s) else str(s) for s in sensors]
    if maps.spans is None:
        return [f"input {i + 1}" for i in range(m)]
    out = []
    for a, b in maps.spans.tolist()[:m]:
        if times is not None and b - 1 < len(times):
            out.append(times[a] if b - a == 1 else f"{times[a]} to {times[b - 1]}")
        else:
            out.append(f"readings {a + 1}-{b}")
    return out


def attention_bars(maps: Any, labels: Sequence[str], *, axis_title: str) -> go.Figure:
    """The rollout of one sample as bars on the map's own scale, flat maps labelled."""
    w = maps.rollout[0].detach().float().numpy()
    flat = is_flat(w)
    fig = go.Figure(
        go.Bar(
            x=list(labels),
            y=w,
            marker_color="#9e9e9e" if flat else "#1f77b4",
            hovertemplate="%{x}<br>weight %{y:.3f}<extra></extra>",
        )
    )
    top = float(w.max()) if w.size else 1.0
    fig.update_yaxes(title="attention weight (sums to 1)", range=[0, top * 1.15], tickformat=".3f")
    fig.update_xaxes(title=axis_title, automargin=True)
    title = "Attention rollout"
    if flat:
        title += f"<br><sup>{FLAT_LABEL}</sup>"
    _meta(fig, title)
    fig.update_layout(height=360, margin={"b": 40})
    fig.layout.meta["flat"] = flat
    fig.layout.meta["spread"] = spread(w)
    return fig


def image_overlay(
    model_image: np.ndarray, maps: Any, *, opacity: float, which: str = "rollout"
) -> go.Figure:
    """The map over the image the model read; ``opacity`` is the map's opacity, 0..1."""
    rows = maps.rollout[0:1] if which == "rollout" else maps.query[0, -1]
    up = maps.upsampled(rows.mean(0, keepdim=True)).numpy()[0]
    img = np.asarray(model_image, dtype=np.float64)
    span = float(img.max() - img.min()) or 1.0
    flat = is_flat(up)
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(
            z=(img - img.min()) / span,
            colorscale="gray",
            showscale=False,
            name="image",
            hoverinfo="skip",
        )
    )
    fig.add_trace(
        go.Heatmap(
            z=up,
            zmin=0.0,  # from zero: a flat map looks flat, not like magnified noise
            zmax=float(up.max()) if up.max() > 0 else 1.0,
            colorscale="Inferno",
            opacity=opacity,
            name="attention",
            colorbar={"title": "weight"},
            hovertemplate="x %{x}, y %{y}<br>weight %{z:.4f}<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", scaleanchor="x", showticklabels=False)
    fig.update_xaxes(showticklabels=False)
    name = "Attention rollout" if which == "rollout" else "Last layer attention (heads averaged)"
    _meta(fig, name + (f"<br><sup>{FLAT_LABEL}</sup>" if flat else ""))
    fig.update_layout(height=520, margin={"l": 10, "r": 10, "t": 60, "b": 10})
    fig.layout.meta["flat"] = flat
    return fig


def image_figure(image: np.ndarray, name: str, *, height: int = 520) -> go.Figure:
    """The full-size image in grey, drawn large, pixel coordinates on hover."""
    hover = "x %{x} px, y %{y} px<br>grey %{z:.2f}<extra></extra>"
    fig = go.Figure(go.Heatmap(z=image, colorscale="gray", showscale=False, hovertemplate=hover))
    fig.update_yaxes(autorange="reversed", scaleanchor="x", title="y (px)")
    fig.update_xaxes(title="x (px)")
    fig.update_layout(title=name, height=height, margin={"t": 60, "b": 40})
    return fig


def tile_heatmap(
    image: np.ndarray,
    tiles: Any,
    *,
    size: int,
    threshold: float | None,
    opacity: float,
    name: str,
    height: int = 520,
) -> go.Figure:
    """The full-size photo with each tile's P(defect) over it (a pixel covered by several
    tiles shows the highest), the worst tile outlined, and the tiles above the bundle's
    threshold outlined too. ``tiles``: one row per tile with ``top``, ``left``,
    ``p_defect``. This is the model's output per tile, not a diagnostic of its attention."""
    img = np.asarray(image, dtype=np.float64)
    h, w = img.shape[:2]
    heat = np.zeros((h, w))
    for top, left, p in tiles[["top", "left", "p_defect"]].itertuples(index=False):
        cell = heat[int(top) : int(top) + size, int(left) : int(left) + size]
        np.maximum(cell, float(p), out=cell)
    span = float(img.max() - img.min()) or 1.0
    fig = go.Figure()
    fig.add_trace(
        go.Heatmap(z=(img - img.min()) / span, colorscale="gray", showscale=False,
                   name="photo", hoverinfo="skip")
    )  # fmt: skip
    # the threshold sits in the middle of the scale (the scale ends at twice it, or at the
    # worst tile if higher): a tile is darker than mid-red only when it is above the threshold
    worst_p = float(tiles["p_defect"].max()) if len(tiles) else 0.0
    top = max(worst_p, 2 * threshold) if threshold is not None else 1.0
    top = min(max(top, 1e-6), 1.0)
    fig.add_trace(
        go.Heatmap(
            z=heat * 100.0, zmin=0.0, zmax=top * 100.0, colorscale="Reds", opacity=opacity,
            name="P(defect)", colorbar={"title": "P(defect) %"},
            hovertemplate="x %{x} px, y %{y} px<br>P(defect) %{z:.1f}%<extra></extra>",
        )
    )  # fmt: skip
    worst = tiles.loc[tiles["p_defect"].idxmax()] if len(tiles) else None
    flagged = tiles.iloc[0:0] if threshold is None else tiles[tiles["p_defect"] > threshold]

    def outline(top: float, left: float, color: str, width: int) -> dict[str, Any]:
        return {"type": "rect", "x0": left - 0.5, "y0": top - 0.5, "x1": left + size - 0.5,
                "y1": top + size - 0.5, "line": {"color": color, "width": width}}  # fmt: skip

    # all outlines at once: one add_shape per tile copies the layout each time (20 s for
    # the 270 tiles of a 900 x 360 photo at stride 32)
    shapes = [outline(r.top, r.left, "#d62728", 1) for r in flagged.itertuples(index=False)]
    if worst is not None:
        shapes.append(outline(worst["top"], worst["left"], "#ffbf00", 3))
    fig.update_layout(shapes=shapes)
    fig.update_yaxes(range=[h - 0.5, -0.5], scaleanchor="x", constrain="domain", title="y (px)")
    fig.update_xaxes(title="x (px)", range=[-0.5, w - 0.5], constrain="domain")
    sub = "yellow: the worst tile"
    if threshold is not None:
        sub += (
            f"; red outlines: tiles above the threshold {threshold:.1%}, the middle of the "
            "colour scale"
        )
    fig.update_layout(
        title={"text": f"{name}: P(defect) per {size}-px tile<br><sup>{sub}</sup>"},
        height=height, margin={"t": 70, "b": 40},
        meta={"kind": "model output per tile", "flagged_tiles": len(flagged)},
    )  # fmt: skip
    return fig


def amount(value: float) -> str:
    """A change for reading: two decimals, or two significant digits when smaller."""
    if abs(value) >= 0.1 or value == 0:
        return f"{value:.2f}"
    return np.format_float_positional(value, precision=2, unique=True, fractional=False, trim="-")


#: The random bar's whisker, in standard deviations of its draws: the attended bar must rise
#: above it for the map to count as pointing at what the prediction depends on.
WHISKER_SD = 2.0


@dataclass(frozen=True)
class DeletionReading:
    """The deletion test's numbers in the prediction's units, and what they say; the bars
    and the sentence are both drawn from it, so they cannot disagree.

    Attributes:
        attended: change when the most-attended inputs are masked (the red bar).
        random: mean change over the random draws (the grey bar).
        whisker: :data:`WHISKER_SD` standard deviations of the random draws (the grey bar's
            whisker).
        draws: random draws.
        reading: ``"more"`` (the red bar rises above the whisker), ``"unclear"`` (above the
            grey bar, within its whisker) or ``"not_more"`` (no higher than the grey bar).
    """

    attended: float
    random: float
    whisker: float
    draws: int

    @property
    def reading(self) -> str:
        if self.attended > self.random + self.whisker:
            return "more"
        return "unclear" if self.attended > self.random else "not_more"


def deletion_reading(result: Any, *, scale: float) -> DeletionReading:
    """:class:`DeletionReading` of a :class:`~mfgtx.explain.DeletionResult`, times ``scale``."""
    return DeletionReading(
        attended=result.attended * scale,
        random=result.random_mean * scale,
        whisker=WHISKER_SD * result.random_std * scale,
        draws=int(result.random_change.shape[0]),
    )


def deletion_bars(result: Any, *, scale: float, unit: str, watched: str) -> go.Figure:
    """Most-attended against random inputs removed, in the prediction's own units; the random
    bar's whisker is the spread :func:`deletion_sentence` reads (:class:`DeletionReading`).

    Args:
        result: the :class:`~mfgtx.explain.DeletionResult`.
        scale: multiplies the result's changes into ``unit`` (100 for percentage points).
        unit: e.g. ``"percentage points"``, ``"cycles"``.
        watched: what was watched, e.g. ``"P(bad lot)"``.
    """
    r = deletion_reading(result, scale=scale)
    pct = f"{100 * result.fraction:g}%"
    random_label = f"{pct} random {result.unit} ({r.draws} draws, whisker ±{WHISKER_SD:g} sd)"
    fig = go.Figure(
        go.Bar(
            x=[f"{pct} most-attended {result.unit}", random_label],
            y=[r.attended, r.random],
            error_y={"type": "data", "array": [0.0, r.whisker], "visible": True},
            marker_color=["#d62728", "#7f7f7f"],
            hovertemplate=f"%{{x}}: %{{y:.2~g}} {unit}<extra></extra>",
        )
    )
    fig.update_yaxes(
        title=f"change of {watched}<br>({unit})", rangemode="tozero", exponentformat="none"
    )
    fig.update_xaxes(title=f"{result.unit} masked")
    _meta(fig, "Deletion test beside the attention map")
    fig.update_layout(height=360, meta={**fig.layout.meta, "reading": r.reading})
    return fig


def deletion_sentence(result: Any, *, scale: float, unit: str, watched: str) -> str:
    """The deletion test in words and in the prediction's units, read from the same
    :class:`DeletionReading` as its bars."""
    r = deletion_reading(result, scale=scale)
    pct = f"{100 * result.fraction:g}%"
    if r.reading == "more":
        reading = (
            "the red bar rises above the random bar's whisker, so the map points at inputs "
            "this prediction depends on"
        )
    elif r.reading == "unclear":
        times = f"{r.attended / r.random:.1f} times" if r.random > 0 else "more than"
        reading = (
            f"that is {times} the random mean, but within the spread of the random draws (the "
            "whisker), so this test cannot tell it from chance: do not read the map as "
            "pointing at a cause"
        )
    else:
        reading = (
            "removing the most-attended inputs matters no more than removing random ones: "
            "do not read the map as pointing at a cause"
        )
    return (
        f"Masking the {pct} most-attended {result.unit} moved {watched} by {amount(r.attended)} "
        f"{unit}; {pct} random {result.unit} moved it by {amount(r.random)} ± "
        f"{amount(r.whisker)} {unit} ({r.draws} draws, ±{WHISKER_SD:g} sd): {reading}."
    )


def sensor_figure(
    df: Any, time: str, sensors: Sequence[str], title: str, units: Mapping[str, str]
) -> go.Figure:
    """One panel per sensor on a shared UTC time axis, each y axis with the unit the job
    file gives it (``data.columns.units``)."""
    import pandas as pd
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=len(sensors), cols=1, shared_xaxes=True, vertical_spacing=0.03)
    dated = not pd.api.types.is_numeric_dtype(df[time])
    if dated and not pd.api.types.is_datetime64_any_dtype(df[time]):  # never guessed here
        raise TypeError(f"sensor_figure: parse {time!r} first (_tables.with_times)")
    t = pd.to_datetime(df[time], utc=True) if dated else df[time]
    x_hover = "%{x|%Y-%m-%d %H:%M} UTC" if dated else f"{time} %{{x}}"
    for i, s in enumerate(sensors, start=1):
        unit = units.get(s, "")
        fig.add_scatter(
            x=t,
            y=df[s],
            mode="lines",
            name=s,
            row=i,
            col=1,
            hovertemplate=f"{x_hover}<br>{s}: %{{y:.3f}} {unit}<extra></extra>",
        )
        fig.update_yaxes(title_text=f"{s} ({unit})" if unit else s, row=i, col=1)
    fig.update_xaxes(
        title_text="time (UTC)" if dated else time,
        type="date" if dated else "linear",
        row=len(sensors),
        col=1,
    )
    fig.update_layout(title=title, height=180 * len(sensors) + 80, showlegend=False)
    return fig
