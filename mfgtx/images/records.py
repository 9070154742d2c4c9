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
import io
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from os import PathLike
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["IMAGE_SUFFIXES", "MAX_MANIFEST_BYTES", "ImageRecords", "read_manifest"]

#: File suffixes taken as images in a folder-per-class layout (case-insensitive).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff")

#: Largest image manifest read, in bytes (a line per image: about half a million images),
#: checked before reading.
MAX_MANIFEST_BYTES = 64 * 2**20

_COMPRESSED = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ": "xz", b"PK\x03\x04": "zip"}


def read_manifest(
    path: str | PathLike[str], *, limit: int = MAX_MANIFEST_BYTES
) -> tuple[pd.DataFrame, list[int]]:
    """A CSV manifest of images as text (an empty value is ``""``), and the line of the file
    each row starts on (the header is line 1; a quoted value with a line break spans two).

    Raises:
        ValueError: the file is larger than ``limit`` (refused before reading), compressed,
            not UTF-8 text, has no header, names a column twice, or a row has more values
            than the header (each naming the file and the line).
    """
    import csv

    path = Path(path)
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ValueError(f"{path}: a manifest must be a CSV file")
        if size > limit:
            raise ValueError(
                f"{path}: {size / 2**20:,.0f} MB is larger than an image manifest may be "
                f"({limit / 2**20:,.0f} MB, a line per image); refused before reading"
            )
        raw = path.read_bytes()
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from e
    for magic, name in _COMPRESSED.items():
        if raw.startswith(magic):
            raise ValueError(f"{path}: is a {name} file; give the manifest as plain CSV text")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ValueError(
            f"{path}: line {line} is not UTF-8 text ({raw[e.start : e.start + 1]!r}); save "
            "the manifest as UTF-8"
        ) from None
    del raw
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise ValueError(f"{path}: the manifest is empty; line 1 must name its columns")
        header = [h.strip() for h in header]
        seen: dict[str, int] = {}
        for i, name in enumerate(header):
            if name in seen:
                raise ValueError(
                    f"{path}: line 1 names the column {name!r} twice (columns {seen[name] + 1} "
                    f"and {i + 1})"
                )
            seen[name] = i
        rows, lines = [], []
        start = reader.line_num + 1
        for row in reader:
            if any(v.strip() for v in row):
                if len(row) > len(header):
                    raise ValueError(
                        f"{path}: line {start} has {len(row)} values, the header names "
                        f"{len(header)} columns"
                    )
                rows.append(row + [""] * (len(header) - len(row)))
                lines.append(start)
            start = reader.line_num + 1
    except csv.Error as e:
        raise ValueError(f"{path}: line {reader.line_num}: {e}") from None
    return pd.DataFrame(rows, columns=header, dtype=object).astype(str), lines


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
                file that does not exist (the message names the manifest's line).
        """
        manifest = Path(manifest)
        frame, lines = read_manifest(manifest)
        missing = [c for c in ("path", "label") if c not in frame.columns]
        if missing:
            raise ValueError(
                f"{manifest}: missing column(s) {missing}; found {list(frame.columns)}"
            )
        for col in ("path", "label", *(c for c in ("lot", "timestamp") if c in frame.columns)):
            bad = [ln for ln, v in zip(lines, frame[col], strict=True) if not v.strip()]
            if bad:
                raise ValueError(f"{manifest}: empty {col!r} on line(s) {bad[:10]}")
        frame, lines = _without_repeats(manifest, frame, lines)
        names = tuple(class_names) if class_names is not None else tuple(sorted(set(frame.label)))
        unknown = sorted(set(frame["label"]) - set(names))
        if unknown:
            raise ValueError(f"{manifest}: labels {unknown} are not in class_names {names}")
        index = {c: i for i, c in enumerate(names)}
        out = pd.DataFrame({"path": frame["path"], "label": frame["label"].map(index)})
        if "lot" in frame.columns:
            if "timestamp" not in frame.columns:
                raise ValueError(
                    f"{manifest}: a 'lot' column needs a lot on every row and a 'timestamp' "
                    "column, so that the split can keep lots and time apart"
                )
            out["lot"] = frame["lot"]
        if "timestamp" in frame.columns:
            ts = pd.to_datetime(frame["timestamp"], utc=True, errors="coerce")
            bad = [lines[i] for i in np.flatnonzero(ts.isna().to_numpy())]
            if bad:
                raise ValueError(f"{manifest}: timestamp not ISO 8601 on line(s) {bad[:10]}")
            out["timestamp"] = ts
        root = manifest.parent
        absent = [(ln, p) for ln, p in zip(lines, out["path"], strict=True)
                  if not (root / p).is_file()]  # fmt: skip
        if absent:
            raise ValueError(
                f"{manifest}: {len(absent)} listed file(s) do not exist, first (line, path): "
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


def _without_repeats(
    manifest: Path, frame: pd.DataFrame, lines: list[int]
) -> tuple[pd.DataFrame, list[int]]:
    """The manifest (and its lines) without rows that list a file again: a repeat with the
    same label is left out with a :class:`~mfgtx.data.DataWarning` naming its line, one with
    another label is an error (the file cannot be both)."""
    import warnings

    from mfgtx.data import DataWarning

    again = frame["path"].duplicated(keep="first").to_numpy()
    if not again.any():
        return frame, lines
    first: dict[str, int] = {}
    for i, path in enumerate(frame["path"]):
        first.setdefault(path, i)
    for i in np.flatnonzero(again).tolist():
        path, label = frame["path"].iloc[i], frame["label"].iloc[i]
        j = first[path]
        if frame["label"].iloc[j] != label:
            raise ValueError(
                f"{manifest}: line {lines[i]} lists {path} again with label {label!r}; line "
                f"{lines[j]} gave it {frame['label'].iloc[j]!r}"
            )
    repeats = [lines[i] for i in np.flatnonzero(again)]
    warnings.warn(
        f"{manifest}: {len(repeats)} line(s) list a file a second time (lines {repeats[:10]}); "
        "each file is used once",
        DataWarning,
        stacklevel=3,
    )
    kept = [ln for ln, a in zip(lines, again, strict=True) if not a]
    return frame[~again].reset_index(drop=True), kept
