"""Finding the bundles of a models folder without building their models.

:func:`find_bundles` verifies every bundle one level under a folder (checksums, signature,
format: :func:`~mfgtx.artifacts.verify_bundle`) and describes each from its manifest, so a
dashboard or a scheduler can list models it has not loaded. A bundle that fails the checks is
named with the reason, never listed as usable. The model kind is the one the manifest
records; :func:`mfgtx.kinds.kind_of_class` names it for a bundle written before manifests
recorded it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any

from mfgtx.artifacts._manifest import MANIFEST_FILE
from mfgtx.artifacts.bundle import verify_bundle
from mfgtx.artifacts.errors import BundleError

__all__ = ["FoundBundle", "find_bundles"]


@dataclass(frozen=True)
class FoundBundle:
    """A verified bundle of a models folder, as its manifest describes it.

    Attributes:
        path: the bundle's folder.
        bundle_id: the sha256 of its ``manifest.json``.
        kind: the model kind that wrote it (``manifest["kind"]``), ``None`` when the
            manifest records none (format versions 1 and 2, or a model of no mfgtx kind).
        model_class: the class name its manifest gives its model (``mfgtx.SensorEncoder``).
        task: ``classification``, ``regression``, ``forecast``... as the input
            specification, the model's config or its metrics record it; ``None`` if none do.
        manifest: the whole manifest.
        signature: ``verified``, ``unsigned`` or ``not verified`` (no key configured here).
        warnings: what the checks warned about (files the bundle does not list...).
    """

    path: Path
    bundle_id: str
    kind: str | None
    model_class: str
    task: str | None
    manifest: Mapping[str, Any]
    signature: str = "unsigned"
    warnings: tuple[str, ...] = ()


def _task(manifest: Mapping[str, Any]) -> str | None:
    spec = manifest.get("input_spec") or {}
    config = (manifest.get("model") or {}).get("config") or {}
    metrics = manifest.get("metrics") or {}
    task = spec.get("task") or config.get("task") or metrics.get("task")
    return str(task) if task else None


def find_bundles(models_dir: str | PathLike[str]) -> tuple[list[FoundBundle], list[str]]:
    """The verified bundles one level under ``models_dir`` (folders holding a
    ``manifest.json``, in name order) and one message per folder refused, naming it.

    A missing ``models_dir`` gives no bundles and one message saying so.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     find_bundles(d)
        ([], [])
    """
    root = Path(models_dir)
    found: list[FoundBundle] = []
    problems: list[str] = []
    if not root.is_dir():
        return found, [f"models directory {root} does not exist"]
    for sub in sorted(p for p in root.iterdir() if p.is_dir()):
        if not (sub / MANIFEST_FILE).is_file():
            continue
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                verified = verify_bundle(sub)
        except (BundleError, OSError, ValueError) as e:
            problems.append(f"{sub.name}: {e}")
            continue
        manifest = verified["manifest"]
        kind = manifest.get("kind")
        found.append(
            FoundBundle(
                path=sub,
                bundle_id=verified["bundle_id"],
                kind=str(kind) if kind else None,
                model_class=str((manifest.get("model") or {}).get("class")),
                task=_task(manifest),
                manifest=manifest,
                signature=verified.get("signature", "unsigned"),
                warnings=tuple(str(w.message) for w in caught),
            )
        )
    return found, problems
