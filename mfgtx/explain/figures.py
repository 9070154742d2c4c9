"""Plotly figures of attention maps and deletion tests, each carrying the notice.

Every figure: the notice (:data:`~mfgtx.explain.NOTICE`) as an annotation on the figure and
in ``layout.meta``, ``kind = "non-causal diagnostic"`` in the title, and attention drawn on a
fixed 0..1 colour scale so two maps can be compared by eye. The words "explanation" and
"importance" are never used: the weights are not either.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go
from torch import Tensor

from mfgtx.explain.deletion import DeletionResult
from mfgtx.explain.maps import AttentionMaps
from mfgtx.explain.notice import KIND, NOTICE

__all__ = ["attention_figure", "deletion_figure", "query_key_figure"]

_SCALE = "Viridis"


def _finish(fig: go.Figure, title: str) -> go.Figure:
    """Title with the kind, the notice under the plot, fixed colour range, meta for tests."""
    fig.update_layout(
        title={"text": f"{title} ({KIND})"},
        meta={"kind": KIND, "notice": NOTICE},
        margin={"b": 140},
        annotations=[
            *fig.layout.annotations,
            go.layout.Annotation(
                text="<br>".join(textwrap.wrap(NOTICE, 110)),
                xref="paper",
                yref="paper",
                x=0,
                y=-0.18,
                xanchor="left",
                yanchor="top",
                showarrow=False,
                align="left",
                font={"size": 11},
            ),
        ],
    )
    return fig


def _labels(maps: AttentionMaps, m: int, labels: Sequence[str] | None) -> list[str]:
    if labels is not None:
        if len(labels) != m:
            raise ValueError(f"labels: {m} needed (one per {maps.axis}), found {len(labels)}")
        return list(labels)
    if maps.spans is not None:
        return [f"steps {a}-{b - 1}" if b - a > 1 else f"step {a}" for a, b in maps.spans.tolist()]
    return [f"{maps.axis} {i}" for i in range(m)]


def _heat(z: np.ndarray, **kw: object) -> go.Heatmap:
    return go.Heatmap(
        z=z, zmin=0.0, zmax=1.0, colorscale=_SCALE, colorbar={"title": "weight"}, **kw
    )


def attention_figure(
    maps: AttentionMaps,
    sample: int = 0,
    *,
    which: str = "rollout",
    layer: int = -1,
    labels: Sequence[str] | None = None,
    image: Tensor | np.ndarray | None = None,
    opacity: float = 0.5,
) -> go.Figure:
    """The summary query's attention for one sample, as a heatmap.

    Args:
        maps: from :func:`~mfgtx.explain.attention_maps`.
        sample: which sample of the batch.
        which: ``"rollout"`` (through all layers) or ``"layer"`` (one layer, one row per head).
        layer: the layer for ``which="layer"``.
        labels: names of the input tokens (e.g. sensor names); default from the spans.
        image: ``(h, w)`` grey image under an image map (ViT), drawn in grey.
        opacity: of the map over the image, 0..1.
    """
    if which not in ("rollout", "layer"):
        raise ValueError(f"which must be 'rollout' or 'layer', found {which!r}")
    if not 0 <= opacity <= 1:
        raise ValueError(f"opacity must be in [0, 1], found {opacity}")
    if which == "rollout":
        rows, names = maps.rollout[sample : sample + 1], ["rollout"]
        title = "Attention rollout"
    else:
        rows = maps.query[sample, layer]  # (H, M)
        names = [f"head {h}" for h in range(rows.shape[0])]
        title = f"Attention weights, layer {layer % len(maps.layers)}"
    fig = go.Figure()
    if maps.grid is not None:  # image patches: draw the map over the image
        up = maps.upsampled(rows.mean(0, keepdim=True)).numpy()[0]
        if image is not None:
            img = np.asarray(image, dtype=np.float64)
            span = float(img.max() - img.min()) or 1.0
            fig.add_trace(
                go.Heatmap(
                    z=(img - img.min()) / span, colorscale="gray", showscale=False, name="image"
                )
            )
        fig.add_trace(_heat(up, opacity=opacity, name=title))
        fig.update_yaxes(autorange="reversed", scaleanchor="x")
        return _finish(fig, f"{title} over the image (heads averaged)")
    z = rows.detach().float().numpy()
    fig.add_trace(_heat(z, x=_labels(maps, z.shape[1], labels), y=names, name=title))
    fig.update_xaxes(title=maps.axis)
    return _finish(fig, title)


def query_key_figure(
    maps: AttentionMaps, sample: int = 0, *, layer: int = -1, head: int = 0
) -> go.Figure:
    """The query-by-key weights of one layer and head for one sample."""
    z = maps.query_key(layer, head)[sample].detach().float().numpy()
    fig = go.Figure(_heat(z))
    fig.update_xaxes(title="key")
    fig.update_yaxes(title="query", autorange="reversed")
    return _finish(fig, f"Attention weights, layer {layer % len(maps.layers)}, head {head}")


def deletion_figure(result: DeletionResult) -> go.Figure:
    """Bars: change of the score when the most-attended vs random inputs are removed."""
    pct = f"{100 * result.fraction:g}%"
    fig = go.Figure(
        go.Bar(
            x=[f"most-attended {pct}", f"random {pct}"],
            y=[result.attended, result.random_mean],
            error_y={"type": "data", "array": [0.0, result.random_std], "visible": True},
            marker_color=["#d62728", "#7f7f7f"],
            hovertemplate="%{x}: %{y:.3g}<extra></extra>",
        )
    )
    fig.update_yaxes(title=f"mean |change| of the {result.score_name}", rangemode="tozero")
    fig.update_xaxes(title=f"{result.unit} masked")
    fig.add_annotation(
        text=result.sentence(), xref="paper", yref="paper", x=0, y=1.08, showarrow=False
    )
    return _finish(fig, "Deletion test beside the attention map")
