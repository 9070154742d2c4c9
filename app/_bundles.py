"""The model bundles of the models folder (:func:`mfgtx.artifacts.find_bundles`), the
bundle a page shows, and its predictor (:func:`mfgtx.load`), loaded once per checksum."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import streamlit as st
from _settings import AppConfig, app_config

import mfgtx
from mfgtx.artifacts import FoundBundle
from mfgtx.artifacts import find_bundles as _find_bundles
from mfgtx.kinds import kind_of_class


def find_bundles(models_dir: Path) -> tuple[list[FoundBundle], list[str]]:
    """Verified bundles under ``models_dir`` (one level deep), and a message per refused
    one; a bundle whose manifest records no kind gets the kind its model class names."""
    found, problems = _find_bundles(models_dir)
    named = []
    for b in found:
        kind = kind_of_class(b.model_class) if b.kind is None else None
        named.append(dataclasses.replace(b, kind=kind.name) if kind is not None else b)
    return named, problems


def bundles_of(kind: str) -> tuple[AppConfig, list[FoundBundle]]:
    """The settings and the verified bundles of one model kind."""
    cfg = app_config()
    found, _ = find_bundles(cfg.models_dir)
    return cfg, [b for b in found if b.kind == kind]


@st.cache_resource(max_entries=8, show_spinner="loading model bundle")
def _load(bundle_id: str, path: str) -> Any:
    return mfgtx.load(path)


def load(info: FoundBundle) -> Any:
    """The bundle's predictor (:func:`mfgtx.load`), loaded once per bundle checksum."""
    return _load(info.bundle_id, str(info.path))


def pick_bundle(infos: list[FoundBundle], key: str) -> FoundBundle:
    """The bundle chosen in the page's selector. A link may name it (``?bundle=NAME``), and
    the page's address names the bundle shown, so a link to it opens the same bundle. What
    the bundle's checks warned about is shown under the selector."""
    names = [b.path.name for b in infos]
    asked = st.query_params.get("bundle")
    if key not in st.session_state and asked in names:
        st.session_state[key] = asked
    name = st.selectbox("Model bundle", names, key=key)
    if st.query_params.get("bundle") != name:
        st.query_params["bundle"] = name
    info = infos[names.index(name)]
    for warning in info.warnings:
        st.warning(warning)
    return info


def no_bundle_message(kind: str, models_dir: Path, command: str) -> None:
    st.info(f"No {kind} model bundle in {models_dir}; train one with `{command}`.")
