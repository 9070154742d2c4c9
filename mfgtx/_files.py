"""All-or-nothing file writes, shared by training checkpoints and job outputs."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_bytes"]


def atomic_write(path: str | Path, write: Callable[[str], None]) -> None:
    """Write ``path`` all or nothing: ``write(tmp)`` fills a temporary file in the same folder,
    which is flushed to disk and renamed over ``path``. Readers see the old file or the new
    one, never half of one; on any failure the temporary file is removed and ``path`` is
    untouched."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """:func:`atomic_write` of ``data``."""
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))
