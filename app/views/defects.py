"""Defect inspection: upload images (or pick them from the data folder), check each one, and
classify them with a defect-model bundle, with the attention overlay and its deletion test.

Each image is read by the same reader as ``mfgtx score`` (:func:`_common.check_image`), and
classified by the bundle's predictor (:func:`mfgtx.load`): its row is the one ``mfgtx score``
writes for the image.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st
from _common import (
    MAX_IMAGE_MB,
    bundles_of,
    check_image,
    guarded,
    load,
    no_bundle_message,
    pick_bundle,
)

from mfgtx.explain import NOTICE, attention_figure, deletion_figure

IMAGE_TYPES = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"]


def classify(predictor, name: str, data: bytes, which: str = "rollout"):
    """``(class name, probability, flagged or None, attention figure, deletion figure)``.

    The image is read and resized exactly as in training and scoring; probabilities are the
    bundle's calibrated ones, the flag is its threshold on P(defect).
    """
    explained = predictor.explain((name, data), which=which)
    row = explained.row
    k = int(row["predicted"])
    flagged = None if "decision" not in row else bool(row["decision"])
    attention = attention_figure(explained.maps, 0, which=which, image=explained.image)
    return (
        row["predicted_class"],
        float(row[f"p_{k}"]),
        flagged,
        attention,
        deletion_figure(explained.deletion),
    )


def _image_figure(image, name: str) -> go.Figure:
    hover = "x %{x} px, y %{y} px<br>grey %{z:.2f}<extra></extra>"
    fig = go.Figure(go.Heatmap(z=image, colorscale="gray", showscale=False, hovertemplate=hover))
    fig.update_yaxes(autorange="reversed", scaleanchor="x", title="y (px)")
    fig.update_xaxes(title="x (px)")
    fig.update_layout(title=name)
    return fig


@guarded
def defects() -> None:
    st.title("Defect inspection")
    cfg, infos = bundles_of("vit")
    bundle = None
    if not infos:
        no_bundle_message("defect", cfg.models_dir, "mfgtx demo")
    else:
        bundle = load(pick_bundle(infos, "defect_bundle"))
    uploads = st.file_uploader(
        f"Upload images (up to {MAX_IMAGE_MB} MB each)",
        type=IMAGE_TYPES,
        accept_multiple_files=True,
        key="defect_uploads",
        max_upload_size=MAX_IMAGE_MB,
    )
    files = [(u.name, u.getvalue()) for u in uploads or []]
    found = (
        sorted(
            p
            for p in cfg.data_dir.rglob("*")
            if p.suffix.lower().lstrip(".") in IMAGE_TYPES and "masks" not in p.parts
        )
        if cfg.data_dir.is_dir()
        else []
    )
    if found:
        picked = st.multiselect(
            "Or pick images from the data folder",
            [str(p.relative_to(cfg.data_dir)) for p in found],
            key="defect_samples",
        )
        files += [(name, (cfg.data_dir / name).read_bytes()) for name in picked]
    else:
        st.caption(f"No images in the data folder {cfg.data_dir} to pick from.")
    opacity = st.slider(
        "Overlay opacity",
        0.0,
        1.0,
        0.5,
        0.05,
        key="defect_opacity",
        help="Opacity of the attention map over each image (shown with a defect model).",
    )
    which = st.radio(
        "Attention map",
        ["rollout", "layer"],
        format_func=lambda w: (
            "rollout (all layers)" if w == "rollout" else "last layer (heads averaged)"
        ),
        horizontal=True,
        key="defect_map",
    )
    for name, data in files:
        checked = check_image(name, data)
        if checked.message:
            st.error(f"{name}: {checked.message}")
            continue
        st.success(f"{name}: {checked.image.shape[1]}x{checked.image.shape[0]} px, readable")
        if bundle is None:
            st.plotly_chart(_image_figure(checked.image, name))
            continue
        try:
            label, prob, flagged, attention, deletion = classify(bundle, name, data, which)
        except ValueError as e:
            st.warning(f"{name}: {e}")
            st.plotly_chart(_image_figure(checked.image, name))
            continue
        if flagged is None:
            decision = "no operating threshold in this bundle (train it with a cost ratio)"
        else:
            decision = f"{'flagged' if flagged else 'not flagged'} at the bundle's threshold"
        st.markdown(f"**{label}**, probability {prob:.1%}: {decision}")
        attention.update_traces(opacity=opacity, selector={"type": "heatmap", "showscale": True})
        st.plotly_chart(attention)
        st.caption(NOTICE)
        st.plotly_chart(deletion)


defects()
