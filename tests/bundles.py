"""Bundles of mfgtx's own models written and read by tests, as the kinds write them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mfgtx.artifacts import Bundle, load_bundle, save_bundle
from mfgtx.kinds import KINDS, MODEL_CLASSES

_NAMES = {cls: name for name, cls in MODEL_CLASSES.items()}


def save(path: str | Path, model: Any, *, spec: Any = None, **sections: Any) -> Path:
    """``save_bundle`` of an mfgtx model under its kind's name (with ``spec`` as the input
    specification, as a trained bundle has it)."""
    name = _NAMES[type(model)]
    kind = next(k for k in KINDS.values() if k.model_name == name)
    return save_bundle(
        path, model, model_name=name, kind=kind.name if spec is not None else None,
        input_spec=spec, **sections,
    )  # fmt: skip


def load(path: str | Path) -> Bundle:
    """``load_bundle`` knowing mfgtx's model classes (what :func:`mfgtx.load` does)."""
    return load_bundle(path, classes=MODEL_CLASSES)
