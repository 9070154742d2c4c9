"""All-or-nothing file writes, shared by training checkpoints and job outputs.

A write goes to a hidden temporary file ``.<name>.<random>.tmp`` in the target's folder and
is renamed over the target when complete. A process killed in between leaves that temporary
file behind; :func:`remove_leftovers` deletes those of one target, and jobs call it once they
hold the target's lock (so no other writer can be using them).
"""

from __future__ import annotations

import glob
import logging
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["atomic_write", "atomic_write_bytes", "remove_leftovers"]

log = logging.getLogger(__name__)


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


def remove_leftovers(path: str | Path) -> list[Path]:
    """Delete the temporaries a killed write of ``path`` left behind: hidden
    ``.<name>.*.tmp`` files (and ``.tmp``/``.old`` directories of a staged bundle) next to it.

    Call it only while holding ``path``'s lock. Returns what was removed (logged).
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    removed = []
    for p in path.parent.glob(f".{glob.escape(path.name)}.*"):
        if p.suffix not in (".tmp", ".old"):
            continue
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
        removed.append(p)
        log.info("removed %s, left by an interrupted write of %s", p.name, path.name)
    return removed
