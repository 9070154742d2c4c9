"""Score a file: one row per lot (or per image) from any bundle, as a table to read and download.

The rows are what ``mfgtx score`` writes (the bundle's predictor, :func:`mfgtx.load`,
``score``); a bad lot or image becomes a row of the errors table with its file and CSV line,
and every other lot is scored. Scoring runs when the button is pressed, once per file and
bundle (cached), so reading the table and downloading it do not score again. The options
sit in a form with the "Score" button: changing one scores nothing until it is pressed.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pandas as pd
import streamlit as st
from _bundles import find_bundles, load, pick_bundle
from _common import csv_download, guarded
from _settings import MAX_CSV_MB, MAX_IMAGE_MB, app_config
from _tables import csv_format, page_words, read_upload_bytes
from _trust import set_of, show_trust

from mfgtx.data.io import FILE, LINE, without_position
from mfgtx.kinds import KINDS

IMAGE_TYPES = ["png", "jpg", "jpeg", "bmp", "tif", "tiff"]


@st.cache_resource(max_entries=8, show_spinner="scoring")
def _score_rows(bundle_id: str, digest: str, latest: bool, name: str, _p: Any, _data: bytes,
                _fmt: dict[str, str]):  # fmt: skip
    """``(rows, errors)`` of a CSV file, keyed by bundle, the file's checksum and options;
    the file is read as ``mfgtx score`` reads a job's CSV source in format ``_fmt``."""
    frame = read_upload_bytes(_data, name, _fmt)
    positions = frame[[FILE, LINE]].rename(columns={FILE: "file", LINE: "line"})
    scored = _p.score(without_position(frame), last_per_lot=latest, positions=positions)
    errors = pd.DataFrame([*scored.errors, *scored.warnings])  # warnings: scored, in doubt
    if len(errors):  # a reason names the control of this page, not the job file's setting
        errors["reason"] = errors["reason"].map(page_words)
    return scored.rows, errors


@st.cache_resource(max_entries=8, show_spinner="scoring the images")
def _score_images(bundle_id: str, digest: str, _p: Any, _files: list[tuple[str, bytes]]):
    scored = _p.score(_files)
    return scored.rows, pd.DataFrame(scored.errors)


def _readable(rows: pd.DataFrame, manifest: dict, lot_column: str | None) -> pd.DataFrame:
    """Times without ISO 'T' and nanoseconds, and each lot's set in the bundle's split."""
    out = rows.drop(columns=["bundle_id"], errors="ignore").copy()
    for c in ("window_end", "window_start", "forecast_at"):
        if c in out.columns:
            t = pd.to_datetime(out[c], utc=True, errors="coerce", format="ISO8601")
            if t.notna().all():
                out[c] = t.dt.strftime("%Y-%m-%d %H:%M UTC")
    if lot_column and lot_column in out.columns:
        out.insert(1, "set in training", [set_of(manifest, str(x)) for x in out[lot_column]])
    return out


@guarded
def score_page() -> None:
    st.title("Score a file")
    cfg = app_config()
    bundles, _ = find_bundles(cfg.models_dir)
    bundles = [b for b in bundles if b.kind in KINDS]  # a model of mfgtx's kinds
    if not bundles:
        st.info(f"No model bundle in {cfg.models_dir}; train one with `mfgtx demo`.")
        return
    info = pick_bundle(bundles, "score_bundle", owns=("score_done",))
    predictor = load(info)
    show_trust(info.manifest, details=False, lead="How far to trust these scores.")
    if info.kind == "vit":
        uploads = st.file_uploader(
            f"Images to score (up to {MAX_IMAGE_MB} MB each)",
            type=IMAGE_TYPES,
            accept_multiple_files=True,
            key="score_images",
            max_upload_size=MAX_IMAGE_MB,
        )
        go = st.button("Score", key="score_go", type="primary")
        files = [(u.name, u.getvalue()) for u in uploads or []]
        if not files:
            st.info("Upload images, then press Score, to get one row per image.")
            return
        digest = hashlib.sha256(b"".join(n.encode() + d for n, d in files)).hexdigest()
        if not go and not _done(digest):
            return
        st.session_state["score_done"] = digest
        rows, errors = _score_images(info.bundle_id, digest, predictor, files)
        lot_column = None
    else:
        upload = st.file_uploader(
            "Sensor CSV to score (the columns of the bundle's data)",
            "csv",
            key="score_csv",
            max_upload_size=MAX_CSV_MB,
        )
        with st.form("score_form", border=False):  # an option changed scores nothing yet
            fmt = csv_format(info.manifest, "score_csv", predictor)
            latest = st.toggle(
                "Each lot's latest prediction only", value=True, key="score_latest",
                help="Off: one row per window, as the bundle's stride cuts them.",
            )  # fmt: skip
            go = st.form_submit_button("Score", key="score_go", type="primary")
        if upload is None:
            st.info("Upload a CSV file, then press Score, to get one row per lot.")
            return
        data = upload.getvalue()
        digest = hashlib.sha256(data).hexdigest() + str(latest) + str(sorted(fmt.items()))
        if not go and not _done(digest):
            return
        st.session_state["score_done"] = digest
        try:
            rows, errors = _score_rows(
                info.bundle_id, digest, latest, upload.name, predictor, data, fmt
            )
        except ValueError as e:  # DataError too: the file cannot be read in this format
            st.error(f"Not scored: {page_words(str(e))}")
            return
        lot_column = "lot"
    st.subheader(f"{len(rows)} row(s) scored, {len(errors)} problem(s)")
    table = _readable(rows, info.manifest, lot_column)
    st.dataframe(table, hide_index=True)
    csv_download(table, "Download the scores (CSV)", f"{info.path.name}_scores.csv", "score_dl")
    if len(errors):
        st.warning("These lots or files were not scored:")
        shown = errors.dropna(axis=1, how="all")
        st.dataframe(shown, hide_index=True)
        csv_download(shown, "Download the problems (CSV)", f"{info.path.name}_errors.csv", "err_dl")


def _done(digest: str) -> bool:
    """The file shown was scored already (reruns after a download or a scroll keep it)."""
    return st.session_state.get("score_done") == digest


score_page()
