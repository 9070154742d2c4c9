"""Where images to score come from: a folder, a ``.zip`` or a CSV manifest, read safely.

Every file is size-checked before it is read (:data:`~mfgtx.images.MAX_IMAGE_BYTES`: on disk,
or a zip member by its declared and its actual size), and a file listed twice is read once.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mfgtx.images.io import ImageError, read_image_file, read_zip_member
from mfgtx.images.records import IMAGE_SUFFIXES, read_manifest

__all__ = ["iter_image_files", "read_listed"]


def iter_image_files(source: str | Path) -> Iterator[tuple[str, Any]]:
    """``(key, where)`` of every image of ``source``, in name order.

    ``source`` is a folder (searched recursively; files whose suffix is not an image suffix
    are passed over), a ``.zip`` (read in memory, never extracted) or a CSV manifest whose
    ``path`` column lists files relative to the manifest's folder. The key is the path
    relative to the folder, zip or manifest folder; ``where`` is what :func:`read_listed`
    reads.

    Raises:
        ValueError: ``source`` does not exist, or a manifest without a ``path`` column.
    """
    root = Path(source)
    if root.is_dir():
        for p in sorted(root.rglob("*")):
            if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES:
                yield p.relative_to(root).as_posix(), p
        return
    if root.is_file() and root.suffix.lower() == ".zip":
        with zipfile.ZipFile(root) as z:
            names = sorted(n for n in z.namelist() if Path(n).suffix.lower() in IMAGE_SUFFIXES)
        for n in names:
            yield n, (root, n)
        return
    if root.is_file() and root.suffix.lower() == ".csv":
        frame, _ = read_manifest(root)
        if "path" not in frame.columns:
            raise ValueError(
                f"{root}: a manifest needs a 'path' column; found {list(frame.columns)}"
            )
        for p in frame["path"]:
            if p.strip():
                yield p, root.parent / p
        return
    raise ValueError(f"{root}: not a folder, a .zip or a CSV manifest of images")


def read_listed(key: str, where: Any) -> tuple[str, bytes]:
    """``(key, bytes)`` of an image :func:`iter_image_files` listed.

    Raises:
        ImageError: the file cannot be read or is too large (checked before reading).
    """
    try:
        if isinstance(where, tuple):
            zip_path, member = where
            with zipfile.ZipFile(zip_path) as z:
                return key, read_zip_member(z, member)
        return key, read_image_file(where)
    except ImageError as e:
        raise ImageError(key, e.reason) from e
    except (OSError, zipfile.BadZipFile) as e:
        raise ImageError(key, f"cannot be read ({getattr(e, 'strerror', None) or e})") from e
