"""Write a directory all at once: stage it next to the target, fsync, rename into place.

The staging directory ``.<name>.<random>.tmp`` lives in the target's parent, so the final
rename stays on one filesystem. Replacing an existing bundle renames the old one aside,
renames the new one in (putting the old one back if that fails) and only then deletes the
old one. A crash can leave a staging or an aside directory behind (hidden, ``.tmp``/``.old``)
but never a half-written directory at the target.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path

from mfgtx.artifacts._integrity import bundle_files
from mfgtx.artifacts.errors import BundleWarning

__all__ = ["staged_directory", "write_file"]

logger = logging.getLogger(__name__)


def write_file(file: Path, data: bytes) -> None:
    """Create ``file`` (it must not exist) holding ``data``, flushed to disk."""
    with open(file, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(directory: Path) -> None:
    """Flush a directory entry to disk where the OS allows it (not on Windows)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _check_replaceable(target: Path, overwrite: bool, marker: str) -> None:
    if not os.path.lexists(target):
        return
    if not overwrite:
        raise FileExistsError(f"{target} already exists; pass overwrite=True to replace it")
    if target.is_symlink() or not target.is_dir():
        raise FileExistsError(f"refusing to overwrite {target}: it is not a bundle directory")
    if not (target / marker).is_file() and any(target.iterdir()):
        raise FileExistsError(
            f"refusing to overwrite {target}: it is a directory with no {marker}, not a bundle"
        )
    extra = (
        sorted(set(os.listdir(target)) - bundle_files(target))
        if (target / marker).is_file()
        else []
    )
    if extra:
        raise FileExistsError(
            f"refusing to overwrite {target}: it also holds {extra[:5]}, which are not part "
            "of the bundle and would be deleted with it; move them out first"
        )


@contextlib.contextmanager
def staged_directory(target: Path, *, overwrite: bool, marker: str) -> Iterator[Path]:
    """Yield an empty staging directory; on a clean exit it becomes ``target``.

    Args:
        target: where the directory should appear. Its parent is created if needed.
        overwrite: replace an existing ``target`` (only a directory holding ``marker``, or
            an empty one); otherwise an existing ``target`` raises ``FileExistsError``.
        marker: the file that marks a directory as one this code may replace.

    On any exception inside the ``with`` block, or while committing, the staging directory is
    removed and ``target`` is left as it was.
    """
    _check_replaceable(target, overwrite, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        yield staging
        _fsync_dir(staging)
        _commit(staging, target, overwrite, marker)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already after a commit


def _commit(staging: Path, target: Path, overwrite: bool, marker: str) -> None:
    _check_replaceable(target, overwrite, marker)  # again: something may have appeared since
    if not os.path.lexists(target):
        os.rename(staging, target)
        _fsync_dir(target.parent)
        return
    aside = staging.with_suffix(".old")
    os.rename(target, aside)
    try:
        os.rename(staging, target)
    except BaseException:
        os.rename(aside, target)
        raise
    _fsync_dir(target.parent)
    try:
        shutil.rmtree(aside)
    except OSError as e:
        warnings.warn(
            f"replaced {target} but could not delete the old copy at {aside}: {e}",
            BundleWarning,
            stacklevel=4,
        )
    logger.debug("replaced %s (old copy removed)", target)
