"""The model bundles of the models folder (:func:`mfgtx.artifacts.find_bundles`), the
bundle a page shows, and its predictor (:func:`mfgtx.load`), loaded once per checksum.

Both are cached for the server's life, so that a rerun (any control moved) neither hashes
the bundles' files again nor rebuilds a model: the folder's verification is keyed by what
it reads (each bundle file's name, size, modification time and inode, and the signing key),
so a bundle replaced on disk is verified again on the next rerun; a predictor is keyed by
its bundle's id (the sha256 of its manifest, which records every file's sha256).

What a page's user picked for one bundle (images, a lot, a window, an attention option)
belongs to that bundle: :func:`pick_bundle` clears those keys when the bundle changes.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import streamlit as st
from _settings import AppConfig, app_config

import mfgtx
from mfgtx.artifacts import BundleError, FoundBundle, signing_key
from mfgtx.artifacts import find_bundles as _find_bundles
from mfgtx.kinds import kind_of_class

#: Session-state key of the bundle a page showed last, folder and id (selector key + this).
SHOWN = "__bundle_id"
MANIFEST = "manifest.json"  # what makes a folder a bundle (as find_bundles reads it)


def _stamp(models_dir: Path) -> tuple[tuple[str, str, int, int, int, int], ...]:
    """What verifying the folder reads, without reading it: ``(bundle, file, size, mtime,
    ctime, inode)`` of every file of every bundle folder (a few ``stat`` calls)."""
    if not models_dir.is_dir():
        return ()
    stamp = []
    for sub in sorted(p for p in models_dir.iterdir() if p.is_dir()):
        if not (sub / MANIFEST).is_file():
            continue
        for f in sorted(sub.iterdir()):
            s = f.stat()
            stamp.append((sub.name, f.name, s.st_size, s.st_mtime_ns, s.st_ctime_ns, s.st_ino))
    return tuple(stamp)


def _find(models_dir: str) -> tuple[list[FoundBundle], list[str]]:
    found, problems = _find_bundles(models_dir)
    named = []
    for b in found:
        kind = kind_of_class(b.model_class) if b.kind is None else None
        named.append(dataclasses.replace(b, kind=kind.name) if kind is not None else b)
    return named, problems


@st.cache_resource(max_entries=4, ttl=3600, show_spinner="checking the model bundles")
def _verified(models_dir: str, stamp: tuple, key: str) -> tuple[list[FoundBundle], list[str]]:
    """The folder's bundles, verified once per ``stamp`` and signing ``key`` (its digest)."""
    return _find(models_dir)


def find_bundles(models_dir: Path) -> tuple[list[FoundBundle], list[str]]:
    """Verified bundles under ``models_dir`` (one level deep), and a message per refused
    one; a bundle whose manifest records no kind gets the kind its model class names.
    Verified again only when a bundle file or the signing key changes."""
    models_dir = Path(models_dir)
    try:
        key = hashlib.sha256(signing_key() or b"").hexdigest()
        stamp = _stamp(models_dir)
    except (BundleError, OSError, ValueError):  # an unreadable key or folder: say so, uncached
        return _find(str(models_dir))
    found, problems = _verified(str(models_dir), stamp, key)
    return list(found), list(problems)


def bundles_of(kind: str) -> tuple[AppConfig, list[FoundBundle]]:
    """The settings and the verified bundles of one model kind."""
    cfg = app_config()
    found, _ = find_bundles(cfg.models_dir)
    return cfg, [b for b in found if b.kind == kind]


@st.cache_resource(max_entries=8, show_spinner="loading model bundle")
def _load(bundle_id: str, path: str) -> Any:
    predictor = mfgtx.load(path)
    if predictor.bundle_id != bundle_id:  # replaced on disk since it was listed: not cached
        raise BundleError(
            f"the bundle {path} changed while it was being loaded (id "
            f"{predictor.bundle_id[:12]}, listed as {bundle_id[:12]}); reload the page"
        )
    return predictor


def load(info: FoundBundle) -> Any:
    """The bundle's predictor (:func:`mfgtx.load`), loaded once per bundle checksum."""
    return _load(info.bundle_id, str(info.path))


def pick_bundle(infos: list[FoundBundle], key: str, owns: Iterable[str] = ()) -> FoundBundle:
    """The bundle chosen in the page's selector. A link may name it (``?bundle=NAME``), and
    the page's address names the bundle shown, so a link to it opens the same bundle. What
    the bundle's checks warned about is shown under the selector.

    ``owns`` names the page's session-state keys that belong to the bundle shown (picked
    images, lot, window, attention options): when the bundle changes (another one picked,
    or the same folder replaced on disk) they are cleared, so their widgets start again
    from their defaults instead of carrying one bundle's picks over to another."""
    names = [b.path.name for b in infos]
    asked = st.query_params.get("bundle")
    if key not in st.session_state and asked in names:
        st.session_state[key] = asked
    name = st.selectbox("Model bundle", names, key=key)
    if st.query_params.get("bundle") != name:
        st.query_params["bundle"] = name
    info = infos[names.index(name)]
    shown = f"{info.path}#{info.bundle_id}"  # two folders may hold the same bundle
    if st.session_state.get(key + SHOWN, shown) != shown:
        for owned in owns:
            st.session_state.pop(owned, None)
    st.session_state[key + SHOWN] = shown
    for warning in info.warnings:
        st.warning(warning)
    return info


def no_bundle_message(kind: str, models_dir: Path, command: str) -> None:
    st.info(f"No {kind} model bundle in {models_dir}; train one with `{command}`.")
