"""The manifest of a bundle: its fields, how it is written, and the checks on reading it.

Any change to the set or meaning of the top-level keys bumps :data:`FORMAT_VERSION`;
readers accept exactly the keys of their version, so nothing a newer writer added can be
silently ignored.
"""

from __future__ import annotations

import json
import platform
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import safetensors
import torch

from mfgtx._version import __version__
from mfgtx.artifacts.errors import BundleError

__all__ = [
    "CHECKSUM_FILE",
    "FORMAT",
    "FORMAT_VERSION",
    "MANIFEST_FILE",
    "SECTIONS",
    "WEIGHTS_FILE",
    "check_manifest",
    "dump_manifest",
    "now_utc",
    "versions",
]

FORMAT = "mfgtx.bundle"
FORMAT_VERSION = 3
# what each readable version holds: version 2 added the "calibration" section, version 3
# the model "kind" (its name in mfgtx.kinds, or null) and its versioned "input_spec"
MANIFEST_FILE = "manifest.json"
CHECKSUM_FILE = "checksum.sha256"
WEIGHTS_FILE = "weights.safetensors"

# Optional sections: a JSON object each, or null.
SECTIONS = (
    "data_schema",
    "scaler",
    "split",
    "audit",
    "metrics",
    "baseline_metrics",
    "train_config",
    "calibration",
    "extra",
)
_KEYS = frozenset(
    {"format", "format_version", "created_utc", "versions", "model", "precision", "files"}
    | set(SECTIONS)
)
_KEYS_BY_VERSION = {1: _KEYS - {"calibration"}, 2: _KEYS, 3: _KEYS | {"kind", "input_spec"}}
_MODEL_KEYS = frozenset({"class", "config_class", "config", "aliases", "parameters"})
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def versions() -> dict[str, str]:
    """Versions of the software writing a bundle."""
    return {
        "mfgtx": __version__,
        "torch": str(torch.__version__),
        "safetensors": safetensors.__version__,
        "python": platform.python_version(),
    }


def now_utc() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def dump_manifest(manifest: dict[str, Any]) -> bytes:
    """Canonical manifest bytes: strict JSON (no NaN), sorted keys, UTF-8, final newline."""
    text = json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False, ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def _major(version: object, file: Path) -> int:
    match = re.match(r"^(\d+)\.", version) if isinstance(version, str) else None
    if match is None:
        raise BundleError(f"{file}: versions.mfgtx must look like '1.2.3', found {version!r}")
    return int(match[1])


def _fail(file: Path, message: str) -> BundleError:
    return BundleError(f"{file}: {message}", file=file)


def check_manifest(manifest: Any, file: Path) -> None:
    """Check the format, version and shape of a parsed manifest; ``BundleError`` if wrong."""
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, dict) else type(manifest).__name__
        raise _fail(file, f"not an mfgtx bundle manifest (format {found!r}, expected {FORMAT!r})")
    version = manifest.get("format_version")
    if isinstance(version, bool) or version not in _KEYS_BY_VERSION:
        newer = isinstance(version, int) and version > FORMAT_VERSION
        hint = "; upgrade mfgtx to load it" if newer else ""
        raise _fail(
            file,
            f"bundle format version {version!r} is not supported (this mfgtx "
            f"{__version__} reads versions {sorted(_KEYS_BY_VERSION)}){hint}",
        )
    keys = _KEYS_BY_VERSION[version]
    missing, unknown = sorted(keys - set(manifest)), sorted(set(manifest) - keys)
    if missing or unknown:
        raise _fail(
            file,
            f"manifest keys do not match format {version}: missing {missing}, unknown {unknown}",
        )
    for key in ("calibration", "kind", "input_spec"):  # not in bundles of earlier versions
        manifest.setdefault(key, None)
    written = manifest["versions"].get("mfgtx") if isinstance(manifest["versions"], dict) else None
    if _major(written, file) > _major(__version__, file):
        raise _fail(
            file,
            f"written by mfgtx {written}, a newer major version than this mfgtx "
            f"{__version__}; upgrade mfgtx to load it",
        )
    model = manifest["model"]
    if not isinstance(model, dict) or set(model) != _MODEL_KEYS:
        found = sorted(model) if isinstance(model, dict) else model
        raise _fail(file, f"'model' must have keys {sorted(_MODEL_KEYS)}, found {found}")
    if not isinstance(model["class"], str) or not isinstance(model["config"], dict):
        raise _fail(file, "'model' needs a class name (text) and a config (object)")
    for key in (*SECTIONS, "input_spec"):
        if manifest.get(key) is not None and not isinstance(manifest[key], dict):
            raise _fail(file, f"{key!r} must be an object or null, found {manifest[key]!r}")
    if manifest["kind"] is not None and not isinstance(manifest["kind"], str):
        raise _fail(file, f"'kind' must be text or null, found {manifest['kind']!r}")
    if manifest["precision"] is not None and not isinstance(manifest["precision"], str):
        raise _fail(file, f"'precision' must be text or null, found {manifest['precision']!r}")
    _check_files(manifest["files"], file)


def _check_files(files: Any, file: Path) -> None:
    if not isinstance(files, dict) or WEIGHTS_FILE not in files:
        raise _fail(file, f"'files' must be an object listing {WEIGHTS_FILE!r}, found {files!r}")
    for name, entry in files.items():
        plain = name not in ("", ".", "..", MANIFEST_FILE, CHECKSUM_FILE)
        if not plain or "/" in name or "\\" in name:
            raise _fail(file, f"'files' lists {name!r}, which is not a plain data file name")
        ok = (
            isinstance(entry, dict)
            and set(entry) == {"sha256", "size"}
            and isinstance(entry["sha256"], str)
            and _HEX64.match(entry["sha256"]) is not None
            and isinstance(entry["size"], int)
            and entry["size"] >= 0
        )
        if not ok:
            raise _fail(file, f"'files'.{name} must be {{'sha256': hex, 'size': int}}: {entry!r}")
