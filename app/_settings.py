"""The dashboard's settings: where its models and data are, and the limits of an upload.

First match wins: environment variables ``MFGTX_MODELS_DIR`` and ``MFGTX_DATA_DIR``, then
``app/mfgtx-app.toml`` (or the file ``MFGTX_APP_CONFIG`` names) with keys ``models_dir`` and
``data_dir``, then the defaults ``models/`` and ``sample_data/`` of the repository.

``MFGTX_HISTORY`` (or the key ``history``) names a score history the plant view reads besides
those the bundles' jobs name (a SQLite file or a database URL, as a job file's ``history:``).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mfgtx.images import DEFAULT_MAX_PIXELS

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "mfgtx-app.toml"
MAX_CSV_MB = 50
#: What a compressed CSV upload (gzip, bz2, xz, zip) may inflate to: as much as a plain one.
MAX_CSV_INFLATED_MB = MAX_CSV_MB
MAX_IMAGE_MB = 10
#: The same pixel limit as ``mfgtx score``'s image reader: one rule for what is readable.
MAX_IMAGE_PIXELS = DEFAULT_MAX_PIXELS


@dataclass(frozen=True)
class AppConfig:
    models_dir: Path
    data_dir: Path
    source: str  # where the settings came from, shown on the Overview page
    history: str | None = None  # a score history read besides the bundles' jobs' own


def app_config() -> AppConfig:
    """Models and data directories from env vars, the config file, or the defaults.

    The config file is ``MFGTX_APP_CONFIG`` or ``app/mfgtx-app.toml`` beside the dashboard,
    never one found in the working directory; relative paths in it are relative to the file,
    and the defaults (``models/``, ``sample_data/``) to the repository, so the dashboard reads
    the same folders whatever directory a service starts it in.
    """
    file_values: dict[str, Any] = {}
    path = Path(os.environ.get("MFGTX_APP_CONFIG") or Path(__file__).resolve().parent / CONFIG)
    base, source = ROOT, "defaults"
    if path.is_file():
        with path.open("rb") as f:
            file_values = tomllib.load(f)
        base, source = path.resolve().parent, str(path)

    def folder(env: str, key: str, default: str) -> Path:
        if os.environ.get(env):
            return Path(os.environ[env])
        if key in file_values:
            return base / str(file_values[key])
        return ROOT / default

    models = folder("MFGTX_MODELS_DIR", "models_dir", "models")
    data = folder("MFGTX_DATA_DIR", "data_dir", "sample_data")
    if "MFGTX_MODELS_DIR" in os.environ or "MFGTX_DATA_DIR" in os.environ:
        source = "environment" if source == "defaults" else f"environment and {source}"
    history = os.environ.get("MFGTX_HISTORY") or file_values.get("history")
    if history and "://" not in str(history) and "MFGTX_HISTORY" not in os.environ:
        history = str(base / str(history))  # a file named in the config: beside it
    return AppConfig(models, data, source, str(history) if history else None)
