"""Defect inspection: upload images (or pick them from the data folder), check each one, and
classify them with a defect-model bundle, with the attention overlay and its deletion test.

Each image is read by the same reader as ``mfgtx score`` (:func:`_images.check_image`), and
classified by the bundle's predictor (:func:`mfgtx.load`): its row is the one ``mfgtx score``
writes for the image. Beside each result: P(defect), the bundle's threshold and its decision,
how far to trust the bundle, and, for an image of the data folder, its lot's set and known
label. The explanation is cached per image, so moving the opacity only redraws.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
from _bundles import bundles_of, load, no_bundle_message, pick_bundle
from _common import csv_download, guarded
from _figures import (
    deletion_bars,
    deletion_sentence,
    image_figure,
    image_overlay,
    notice,
    tile_heatmap,
)
from _images import check_image
from _settings import MAX_IMAGE_MB
from _trust import set_sentence, show_trust

from mfgtx.kinds import probability_column

IMAGE_TYPES = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"]
#: What the user picked for the bundle shown, cleared when another bundle is shown: the
#: data folder's images (a crack patch is not a photo) and the attention map option.
DEFECT_PICKS = ("defect_samples", "defect_map")


@st.cache_resource(max_entries=64, show_spinner="classifying the image")
def _explained(bundle_id: str, name: str, digest: str, _predictor: Any, _data: bytes):
    """The image's row and attention maps (both kinds): the map option does not rerun it."""
    return _predictor.explain((name, _data), deletion=False)


@st.cache_resource(max_entries=128, show_spinner="running the deletion test")
def _deletion(bundle_id: str, name: str, digest: str, which: str, _predictor: Any, _explained):
    """The deletion test of the map ``which``: all that changes with the map option."""
    return _predictor.deletion_of(_explained, which)


@st.cache_resource(max_entries=64, show_spinner="scoring every tile of the photo")
def _tiles(bundle_id: str, name: str, digest: str, _predictor: Any, _data: bytes) -> pd.DataFrame:
    """One row per tile of a photo (``top``, ``left``, ``p_defect``...), as ``mfgtx score``
    writes with ``score.per_tile``."""
    return _predictor.score([(name, _data)], per_tile=True).rows


def decision_of(predictor: Any, row: dict) -> dict[str, Any]:
    """``p_defect``, ``threshold``, ``flagged`` (``None`` when the bundle has none) and the
    predicted class with its probability, from the predictor's output row."""
    k = int(row["predicted"])
    cal = predictor.calibration
    choice = cal.threshold if cal is not None else None
    p_defect = float(row["p_defect"]) if "p_defect" in row else None
    if p_defect is None and len(predictor.input_spec.class_names) == 2:
        p_defect = float(row[probability_column(predictor.input_spec.class_names[1])])
    return {
        "label": str(row["predicted_class"]),
        "p_label": float(row[probability_column(predictor.input_spec.class_names[k])]),
        "p_defect": p_defect,
        "threshold": None if choice is None else float(choice.threshold),
        "cost_ratio": None if choice is None else float(choice.cost_ratio),
        "flagged": None if "decision" not in row else row["decision"] != "good",
    }


def classify(predictor, name: str, data: bytes, which: str = "rollout"):
    """``(decision dict, explanation)`` of one image (cached by its content)."""
    digest = hashlib.sha256(data).hexdigest()
    explained = _explained(predictor.bundle_id, name, digest, predictor, data)
    deletion = _deletion(predictor.bundle_id, name, digest, which, predictor, explained)
    return decision_of(predictor, explained.row), dataclasses.replace(explained, deletion=deletion)


def _views(n: int, as_: str) -> str:
    """``n`` views in words (``as_``: how the first one is taken, read or cut)."""
    turned = ", flipped and turned a quarter" if n == 8 else " and flipped"
    return f"{n} views: as {as_}{turned}"


def one_view_note(spec: Any) -> str:
    """Why the map can disagree with the score: it reads one view, the score the mean."""
    what = "tile as cut" if spec.tiled else "image as read"
    return (f"The attention map and the deletion test read the {what}, one view; the "
            f"P(defect) above is the mean over {spec.views} views.")  # fmt: skip


def decision_text(d: dict[str, Any]) -> str:
    if d["flagged"] is None:
        tail = "no operating threshold in this bundle (train it with a cost ratio): no decision"
    else:
        verb = "**flagged as defective**" if d["flagged"] else "**passed**"
        side = "above" if d["flagged"] else "at or below"
        tail = f"decision: {verb} (P(defect) {side} the threshold {d['threshold']:.1%}"
        tail += (
            f", chosen for a missed defect costing {d['cost_ratio']:g} false alarms)"
            if d["cost_ratio"]
            else ")"
        )
    p = "P(defect) unknown (the bundle names no good class)"
    if d["p_defect"] is not None:
        p = f"P(defect) **{d['p_defect']:.1%}**"
    return f"Most likely class **{d['label']}** ({d['p_label']:.1%}); {p}; {tail}."


def _manifest_rows(data_dir: Path) -> pd.DataFrame:
    """The data folder's image manifests (``path``, ``lot``, ``label`` where given), keyed by
    the image's path relative to the data folder."""
    parts = []
    for m in sorted(data_dir.rglob("manifest.csv")) if data_dir.is_dir() else []:
        try:
            frame = pd.read_csv(m)
        except (ValueError, OSError):
            continue
        if "path" not in frame.columns:
            continue
        rel = m.parent.relative_to(data_dir)
        frame["key"] = [str(rel / p) for p in frame["path"].astype(str)]
        parts.append(frame)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["key"])


def _given(entry: pd.DataFrame, column: str) -> str | None:
    """The manifest's value of ``column`` for the image, ``None`` when blank or absent."""
    if not len(entry) or column not in entry or pd.isna(entry[column].iloc[0]):
        return None
    return str(entry[column].iloc[0])


@guarded
def defects() -> None:
    st.title("Defect inspection")
    cfg, infos = bundles_of("vit")
    bundle = info = None
    if not infos:
        no_bundle_message("defect", cfg.models_dir, "mfgtx demo")
    else:
        info = pick_bundle(infos, "defect_bundle", owns=DEFECT_PICKS)
        bundle = load(info)
        show_trust(info.manifest)
    uploads = st.file_uploader(
        f"Upload images (up to {MAX_IMAGE_MB} MB each)",
        type=IMAGE_TYPES,
        accept_multiple_files=True,
        key="defect_uploads",
        max_upload_size=MAX_IMAGE_MB,
    )
    files = [(u.name, u.getvalue(), None) for u in uploads or []]
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
        files += [(name, (cfg.data_dir / name).read_bytes(), name) for name in picked]
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
    listed = _manifest_rows(cfg.data_dir) if files else pd.DataFrame(columns=["key"])
    results = []
    if bundle is not None and files:
        st.subheader("Results")
        notice()
    for name, data, key in files:
        checked = check_image(name, data)
        if checked.message:
            st.error(f"{name}: {checked.message}")
            continue
        st.success(f"{name}: {checked.image.shape[1]}x{checked.image.shape[0]} px, readable")
        if bundle is None:
            st.plotly_chart(image_figure(checked.image, name))
            continue
        try:
            d, explained = classify(bundle, name, data, which)
        except ValueError as e:
            st.warning(f"{name}: {e}")
            st.plotly_chart(image_figure(checked.image, name))
            continue
        st.markdown(decision_text(d))
        if bundle.input_spec.views > 1 and not bundle.input_spec.tiled:
            st.caption(f"Scored as the mean of {_views(bundle.input_spec.views, 'read')}, as "
                       "mfgtx score does.")  # fmt: skip
        entry = listed[listed["key"] == key] if key is not None else listed.iloc[0:0]
        lot = _given(entry, "lot")
        known = _given(entry, "label")  # a photo with masks has no label column value
        if key is None:
            st.caption("Uploaded image: its lot and inspection result are not known here.")
        else:
            st.caption(
                set_sentence(info.manifest, lot, what="Its lot")
                + (f" Known label: {known}." if known else "")
            )
        spec = bundle.input_spec
        if spec.tiled:  # the photo large with every tile's P(defect); the worst tile's map
            digest = hashlib.sha256(data).hexdigest()
            tiles = _tiles(bundle.bundle_id, name, digest, bundle, data)
            st.plotly_chart(
                tile_heatmap(
                    checked.image, tiles, size=spec.tile_size, threshold=d["threshold"],
                    opacity=opacity, name=name, height=min(720, checked.image.shape[0] + 200),
                ),
                key=f"tiles-{name}",
            )  # fmt: skip
            step = spec.tile_stride or spec.tile_size  # stride unset: tiles touch
            views = f", each the mean of {_views(spec.views, 'cut')}" if spec.views > 1 else ""
            st.caption(
                f"{len(tiles)} tiles of {spec.tile_size} px (every {step} px{views}); the "
                f"photo's P(defect) is its worst tile's, at top {int(explained.row['top'])} "
                f"px, left {int(explained.row['left'])} px. Below: that tile and its attention "
                "map."
            )
        left, right = st.columns(2)
        title = f"{name} (worst tile)" if spec.tiled else f"{name} (full size)"
        shown = explained.image.numpy() if spec.tiled else checked.image
        left.plotly_chart(image_figure(shown, title), key=f"img-{name}")
        right.plotly_chart(
            image_overlay(explained.image.numpy(), explained.maps, opacity=opacity, which=which),
            key=f"overlay-{name}",
        )
        if explained.deletion is not None:
            kw = {"scale": 100.0, "unit": "percentage points", "watched": f"P({d['label']})"}
            st.plotly_chart(deletion_bars(explained.deletion, **kw), key=f"del-{name}")
            st.caption(deletion_sentence(explained.deletion, **kw))
        if spec.views > 1:
            st.caption(one_view_note(spec))
        results.append({"image": name, **{k: v for k, v in explained.row.items() if k != "image"}})
    if results:
        csv_download(
            pd.DataFrame(results), "Download these results (CSV)", "defect_results.csv", "def_dl"
        )


defects()
