"""Labelled image collections: a folder per class, or a CSV manifest with lots and times.

Shape legend: ``N`` images, ``K`` classes.

Two layouts are read into one :class:`ImageRecords`:

* **folder per class**: ``root/<class name>/<image>``; ``root`` may also be a ``.zip`` file
  (read in memory, never extracted) with ``subdir`` naming the folder inside it that holds
  the class folders. Classes are the sorted folder names.
* **CSV manifest**: columns ``path`` (relative to the manifest's folder, or absolute) and
  ``label`` (class name), optionally ``lot`` and ``timestamp`` (ISO 8601). Classes are the
  sorted distinct labels unless ``class_names`` fixes their order.

Bytes are read on demand, a file at a time, with :meth:`ImageRecords.iter_bytes`;
:meth:`ImageRecords.content_hashes` fingerprints every file (SHA-256) so that byte-identical
duplicates can be kept together when splitting.
"""

from __future__ import annotations

import hashlib
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["IMAGE_SUFFIXES", "ImageRecords"]

#: File suffixes taken as images in a folder-per-class layout (case-insensitive).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")


@dataclass(frozen=True, eq=False)
class ImageRecords:
    """``N`` labelled images and where their bytes are.

    Attributes:
        frame: one row per image: ``path`` (str, relative to ``root``), ``label`` (int
            ``0..K-1``), and when known ``lot`` (str) and ``timestamp`` (UTC datetime64).
        class_names: name of each class, index = label.
        root: the folder, or the ``.zip`` file, that ``path`` is relative to.
        zip_prefix: folder inside the zip that holds the images (``""`` for none).
    """

    frame: pd.DataFrame
    class_names: tuple[str, ...]
    root: Path
    zip_prefix: str = ""

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def labels(self) -> np.ndarray:
        return self.frame["label"].to_numpy(dtype=np.int64)

    @property
    def has_lots(self) -> bool:
        return "lot" in self.frame.columns

    @property
    def names(self) -> list[str]:
        """Each image as ``root/path``, for messages and error reports."""
        return [f"{self.root}/{self.zip_prefix}{p}" for p in self.frame["path"]]

    # ------------------------------------------------------------------ constructors

    @classmethod
    def from_folder(cls, root: str | PathLike[str], *, subdir: str = "") -> ImageRecords:
        """Read a folder-per-class layout from a directory or a ``.zip`` file.

        Raises:
            ValueError: ``root`` missing, no class folders, or a class without images.
        """
        root = Path(root)
        prefix = subdir.strip("/") + "/" if subdir.strip("/") else ""
        if root.is_file() and root.suffix.lower() == ".zip":
            with zipfile.ZipFile(root) as z:
                members = [
                    n[len(prefix) :]
                    for n in z.namelist()
                    if n.startswith(prefix) and not n.endswith("/")
                ]
        elif root.is_dir():
            base = root / prefix
            members = [
                p.relative_to(base).as_posix() for p in sorted(base.rglob("*")) if p.is_file()
            ]
        else:
            raise ValueError(f"{root}: not a folder or a .zip file")
        rows = [
            (m, m.split("/", 1)[0])
            for m in sorted(members)
            if m.count("/") == 1 and Path(m).suffix.lower() in IMAGE_SUFFIXES
        ]
        if not rows:
            raise ValueError(
                f"{root}/{prefix}: no images found in class folders (expected "
                f"<class name>/<image> with a suffix in {IMAGE_SUFFIXES})"
            )
        names = tuple(sorted({c for _, c in rows}))
        index = {c: i for i, c in enumerate(names)}
        frame = pd.DataFrame({"path": [p for p, _ in rows], "label": [index[c] for _, c in rows]})
        return cls(frame=frame, class_names=names, root=root, zip_prefix=prefix)

    @classmethod
    def from_manifest(
        cls, manifest: str | PathLike[str], *, class_names: Sequence[str] | None = None
    ) -> ImageRecords:
        """Read a CSV manifest (``path``, ``label``, optional ``lot`` and ``timestamp``).

        Raises:
            ValueError: a missing column, an empty path or label, a label not in
                ``class_names``, an unparseable timestamp, a lot without timestamps, or a
                file that does not exist (the message names the CSV row).
        """
        manifest = Path(manifest)
        frame = pd.read_csv(manifest, dtype={"path": str, "label": str, "lot": str})
        missing = [c for c in ("path", "label") if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{manifest}: missing column(s) {missing}; found {list(frame.columns)}"
            )
        for col in ("path", "label"):
            bad = frame.index[frame[col].isna()].tolist()
            if bad:
                raise ValueError(f"{manifest}: empty {col!r} on CSV row(s) {[b + 2 for b in bad]}")
        frame = _without_repeats(manifest, frame)
        names = tuple(class_names) if class_names is not None else tuple(sorted(set(frame.label)))
        unknown = sorted(set(frame["label"]) - set(names))
        if unknown:
            raise ValueError(f"{manifest}: labels {unknown} are not in class_names {names}")
        index = {c: i for i, c in enumerate(names)}
        out = pd.DataFrame({"path": frame["path"], "label": frame["label"].map(index)})
        if "lot" in frame.columns:
            if frame["lot"].isna().any() or "timestamp" not in frame.columns:
                raise ValueError(
                    f"{manifest}: a 'lot' column needs a lot on every row and a 'timestamp' "
                    "column, so that the split can keep lots and time apart"
                )
            out["lot"] = frame["lot"]
        if "timestamp" in frame.columns:
            ts = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce")
            bad = frame.index[ts.isna()].tolist()
            if bad:
                raise ValueError(
                    f"{manifest}: timestamp missing or not ISO 8601 on CSV row(s) "
                    f"{[b + 2 for b in bad][:10]}"
                )
            out["timestamp"] = ts
        root = manifest.parent
        absent = [(i + 2, p) for i, p in enumerate(out["path"]) if not (root / p).is_file()]
        if absent:
            raise ValueError(
                f"{manifest}: {len(absent)} listed file(s) do not exist, first (CSV row, path): "
                f"{absent[:5]}"
            )
        return cls(frame=out, class_names=names, root=root)

    # ------------------------------------------------------------------ bytes

    def read_bytes(self, indices: Sequence[int] | None = None) -> list[tuple[str, bytes]]:
        """``(name, bytes)`` of the images at ``indices`` (all by default), for
        :func:`mfgtx.images.read_images` (many images: :meth:`iter_bytes`)."""
        return list(self.iter_bytes(indices))

    def iter_bytes(self, indices: Sequence[int] | None = None) -> Iterator[tuple[str, bytes]]:
        """``(name, bytes)`` of the images at ``indices`` (all by default), one file at a
        time, so that a caller holds one file's bytes, not every file's."""
        from mfgtx.images.io import read_image_file, read_zip_member

        idx = range(len(self)) if indices is None else indices
        paths = self.frame["path"].tolist()
        names = self.names
        if self.root.is_file():
            with zipfile.ZipFile(self.root) as z:
                for i in idx:
                    yield names[i], read_zip_member(z, self.zip_prefix + paths[i])
            return
        for i in idx:
            yield names[i], read_image_file(self.root / self.zip_prefix / paths[i])

    def content_hashes(self) -> np.ndarray:
        """SHA-256 hex digest of every file, ``(N,)`` object array (one file read at a time)."""
        return np.array(
            [hashlib.sha256(data).hexdigest() for _, data in self.iter_bytes()], dtype=object
        )


def _without_repeats(manifest: Path, frame: pd.DataFrame) -> pd.DataFrame:
    """The manifest without rows that list a file again: a repeat with the same label is
    left out with a :class:`~mfgtx.data.DataWarning` naming its CSV line, one with another
    label is an error (the file cannot be both)."""
    import warnings

    from mfgtx.data import DataWarning

    again = frame["path"].duplicated(keep="first").to_numpy()
    if not again.any():
        return frame
    first_line = {p: i + 2 for i, p in reversed(list(enumerate(frame["path"])))}
    for i in np.flatnonzero(again):
        path, label = frame["path"].iloc[i], frame["label"].iloc[i]
        first = first_line[path]
        if frame["label"].iloc[first - 2] != label:
            raise ValueError(
                f"{manifest}: line {i + 2} lists {path} again with label {label!r}; line "
                f"{first} gave it {frame['label'].iloc[first - 2]!r}"
            )
    lines = [int(i) + 2 for i in np.flatnonzero(again)]
    warnings.warn(
        f"{manifest}: {len(lines)} line(s) list a file a second time (lines {lines[:10]}); "
        "each file is used once",
        DataWarning,
        stacklevel=3,
    )
    return frame[~again].reset_index(drop=True)
