"""Write a directory all at once: stage it next to the target, fsync, rename into place.

The staging directory ``.<name>.mfgtx-<token>.tmp`` lives in the target's parent, so the
final rename stays on one filesystem. Replacing an existing bundle renames the old one aside
(``.<name>.mfgtx-<token>.old``), renames the new one in (putting the old one back if that
fails) and only then deletes the old one. A crash can leave a staging or an aside directory
behind (hidden, with mfgtx's token in its name, which is what
:func:`mfgtx._files.remove_leftovers` removes) but never a half-written directory at the
target.

Only what mfgtx wrote is ever replaced, the rule :mod:`mfgtx._files` applies to files: an
empty folder, or a bundle (``manifest.json`` of mfgtx's format and ``checksum.sha256``)
holding nothing but the bundle's own files (:func:`bundle_problem`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path

from mfgtx._files import NotWrittenByMfgtx, register_folder_record, temporary_path
from mfgtx.artifacts._integrity import bundle_files
from mfgtx.artifacts._manifest import CHECKSUM_FILE, FORMAT, MANIFEST_FILE
from mfgtx.artifacts.errors import BundleWarning

__all__ = ["bundle_files", "bundle_problem", "is_bundle", "staged_directory", "write_file"]

logger = logging.getLogger(__name__)

_MAX_MANIFEST_BYTES = 16 * 2**20  # as bundle.MAX_MANIFEST_BYTES


def is_bundle(folder: str | os.PathLike[str], manifest: str = MANIFEST_FILE) -> bool:
    """Whether ``folder`` holds an mfgtx bundle's ``manifest.json`` (its ``format`` is
    ``mfgtx.bundle``) and ``checksum.sha256``; the files themselves are not verified."""
    folder = Path(folder)
    file = folder / manifest
    try:
        if not (file.is_file() and (folder / CHECKSUM_FILE).is_file()):
            return False
        if file.stat().st_size > _MAX_MANIFEST_BYTES:
            return False
        data = json.loads(file.read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


@register_folder_record
def _bundle_records(folder: Path) -> set[str] | None:
    """The files a bundle records itself (:mod:`mfgtx._files` writes no record of them)."""
    if not (folder / MANIFEST_FILE).is_file() or not is_bundle(folder):
        return None
    return bundle_files(folder)


def bundle_problem(target: str | os.PathLike[str], manifest: str = MANIFEST_FILE) -> str | None:
    """Why the directory ``target`` may not be replaced by a bundle (``None``: it does not
    exist, is empty, or is a bundle holding only its own files)."""
    target = Path(target)
    if not os.path.lexists(target):
        return None
    if target.is_symlink() or not target.is_dir():
        return "it is not a bundle directory"
    names = set(os.listdir(target))
    if not names:
        return None
    if not (target / manifest).is_file():
        return f"it is a directory with no {manifest}, not a bundle"
    if not is_bundle(target, manifest):
        return f"its {manifest} and {CHECKSUM_FILE} are not those of an mfgtx bundle"
    extra = sorted(names - bundle_files(target))
    if extra:
        return (
            f"it also holds {extra[:5]}, which are not part of the bundle and would be "
            "deleted with it; move them out first"
        )
    return None


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
    problem = bundle_problem(target, marker)
    if problem is not None:
        raise NotWrittenByMfgtx(f"refusing to overwrite {target}: {problem}")


def _make_staging(target: Path) -> Path:
    """An empty staging directory beside ``target``, with the permissions of the folder it
    replaces (or the usual ones, not the private ``0700`` of a temporary directory)."""
    while True:
        staging = temporary_path(target)
        try:
            os.mkdir(staging, 0o777)
            break
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue
    if target.is_dir() and not target.is_symlink():
        os.chmod(staging, stat.S_IMODE(target.stat().st_mode))
    return staging


@contextlib.contextmanager
def staged_directory(target: Path, *, overwrite: bool, marker: str) -> Iterator[Path]:
    """Yield an empty staging directory; on a clean exit it becomes ``target``.

    Args:
        target: where the directory should appear. Its parent is created if needed.
        overwrite: replace an existing ``target`` (only a bundle holding nothing else, or an
            empty directory); otherwise an existing ``target`` raises ``FileExistsError``.
        marker: the manifest's name, which marks a directory as a bundle this code may
            replace (:func:`bundle_problem`).

    On any exception inside the ``with`` block, or while committing, the staging directory is
    removed and ``target`` is left as it was.
    """
    _check_replaceable(target, overwrite, marker)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = _make_staging(target)
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
    aside = temporary_path(target, ".old")
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
