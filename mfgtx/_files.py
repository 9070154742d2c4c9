"""The files mfgtx writes: all or nothing, recorded, and only its own replaced or deleted.

One rule for every file, folder and temporary the package writes (scores, error lists,
reports, ONNX exports, checkpoints, bundles): **mfgtx replaces or deletes only what it wrote
itself and can still recognise as such**; anything else is refused before it is touched.

- A write goes to a hidden temporary ``.<name>.mfgtx-<token>.tmp`` beside the target, is
  flushed to disk and renamed over it (readers see the old file or the new one, never half
  of one). Only names of that form are ever cleaned up as leftovers of a killed write
  (:func:`remove_leftovers`); a user's ``.<name>.old`` or ``.<name>.x.tmp`` is never touched.
- Each file written gets a record, ``.mfgtx-written/<name>.json`` in its folder, holding the
  sha256 and size of the bytes written. A file with no record, or whose bytes no longer match
  it (opened and saved in Excel, a column of notes added), is not mfgtx's:
  :func:`replace_problem` says why, and :func:`atomic_write` refuses to replace it. Two
  kinds of file carry their own mark and get no record: files that start with an mfgtx
  format line (``mfgtx-checkpoint 2``) and the files of a model bundle (its
  ``checksum.sha256`` lists them, :func:`register_folder_record`).
- A folder mfgtx creates to hold its own files (:func:`claim_folder`: the checkpoint folder)
  holds a marker file; :func:`remove_written` deletes only the files mfgtx wrote there, and
  the folder itself only when it is then empty and marked.
- Paths a user writes are expanded once (:func:`expand_path`: ``~``, ``$VAR``, ``${VAR}``),
  when the job file is read; the checks and the writes then use the same path.

A replaced file keeps its permissions; a new one gets the usual ones (``0666`` less the
umask), never the private ``0600`` of a temporary file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

__all__ = [
    "FOLDER_MARKER",
    "RECORDS",
    "NotWrittenByMfgtx",
    "atomic_write",
    "atomic_write_bytes",
    "claim_folder",
    "claimed_folder",
    "expand_path",
    "is_temporary",
    "register_folder_record",
    "remove_leftovers",
    "remove_written",
    "replace_problem",
    "temporary_path",
]

log = logging.getLogger(__name__)

#: The folder beside written files that holds their records (one ``<name>.json`` each).
RECORDS = ".mfgtx-written"
#: The file that marks a folder as one mfgtx created for its own files.
FOLDER_MARKER = ".mfgtx-folder"

_TOKEN = re.compile(r"mfgtx-[0-9a-f]{12}")
_TEMPORARY = re.compile(rf"\..+\.{_TOKEN.pattern}\.(?:tmp|old)")
#: The first line of a file format that carries its own mark and checksum.
_FORMAT_LINE = re.compile(rb"mfgtx-[a-z][a-z-]* \d+\n")
_MAX_RECORD_BYTES = 64 * 1024
_NOT_OURS = "exists and was not written by mfgtx (or was changed since it wrote it)"


class NotWrittenByMfgtx(FileExistsError):
    """An existing file or folder that mfgtx did not write, or that changed since it did:
    mfgtx refuses to replace or delete it."""


# --------------------------------------------------------------------------- names


def temporary_path(target: str | os.PathLike[str], suffix: str = ".tmp") -> Path:
    """A fresh hidden name ``.<name>.mfgtx-<token><suffix>`` beside ``target``."""
    target = Path(target)
    return target.with_name(f".{target.name}.mfgtx-{secrets.token_hex(6)}{suffix}")


def is_temporary(name: str, target: str | None = None) -> bool:
    """Whether ``name`` is a temporary of mfgtx (of ``target``'s name, if given)."""
    if target is None:
        return _TEMPORARY.fullmatch(name) is not None
    pattern = rf"\.{re.escape(target)}\.{_TOKEN.pattern}\.(?:tmp|old)"
    return re.fullmatch(pattern, name) is not None


def _record_path(path: Path) -> Path:
    return path.parent / RECORDS / f"{path.name}.json"


_VARIABLE = re.compile(r"\$(?:\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def expand_path(text: str) -> str:
    """``text`` with a leading ``~`` (or ``~user``) and every ``$VAR`` or ``${VAR}``
    replaced, once (a value holding ``$`` is not expanded again).

    Raises:
        ValueError: a variable that is not set (it would otherwise name a folder
            literally called ``$VAR``).

    Example:
        >>> os.environ["MFGTX_EXAMPLE_OUT"] = "/srv/results"
        >>> expand_path("${MFGTX_EXAMPLE_OUT}/line3/scores.csv")
        '/srv/results/line3/scores.csv'
    """

    def value(match: re.Match[str]) -> str:
        name = match.group(1) if match.group(1) is not None else match.group(2)
        if name not in os.environ:
            raise ValueError(
                f"{match.group(0)} in {text!r} is not set in this process's environment; set "
                "it, or write the path out"
            )
        return os.environ[name]

    return _VARIABLE.sub(value, os.path.expanduser(text))


# --------------------------------------------------------------------------- ownership


def _digest(path: Path) -> dict[str, Any]:
    sha = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            sha.update(chunk)
            size += len(chunk)
    return {"sha256": sha.hexdigest(), "size": size}


def _recorded(path: Path) -> list[dict[str, Any]]:
    """The contents the record of ``path`` lists (empty: no readable record)."""
    record = _record_path(path)
    try:
        if not record.is_file() or record.stat().st_size > _MAX_RECORD_BYTES:
            return []
        data = json.loads(record.read_text(encoding="utf-8"))
        entries = data["contents"] if data.get("written_by") == "mfgtx" else []
        return [
            {"sha256": str(e["sha256"]), "size": int(e["size"])}
            for e in entries
            if isinstance(e, dict)
        ]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return []


def _carries_mark(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(64)
    except OSError:
        return False
    return _FORMAT_LINE.match(head) is not None


#: Kinds of folder that record their own files (a model bundle's ``checksum.sha256``): each
#: takes a folder and returns the names of the files it records, or ``None`` when the folder
#: is not of its kind. :mod:`mfgtx.artifacts` registers the bundle's.
_FOLDER_RECORDS: list[Callable[[Path], set[str] | None]] = []


def register_folder_record(
    names: Callable[[Path], set[str] | None],
) -> Callable[[Path], set[str] | None]:
    """Register a kind of folder that records its own files (see :data:`_FOLDER_RECORDS`):
    its files get no record of their own, and :func:`remove_written` leaves such a folder
    whole."""
    _FOLDER_RECORDS.append(names)
    return names


def _folder_record(folder: Path) -> set[str] | None:
    for names in _FOLDER_RECORDS:
        found = names(folder)
        if found is not None:
            return found
    return None


def _in_bundle(path: Path) -> bool:
    return path.name in (_folder_record(path.parent) or ())


def _matching_entry(path: Path) -> dict[str, Any] | None:
    """The recorded contents ``path`` still holds, or ``None``."""
    entries = _recorded(path)
    size = path.stat().st_size
    if not any(e["size"] == size for e in entries):
        return None
    found = _digest(path)
    return found if found in entries else None


def _ownership(path: Path) -> tuple[str | None, dict[str, Any] | None]:
    """Why ``path`` is not mfgtx's (``None``: it is, or does not exist) and the recorded
    contents it holds (``None`` when it carries its own mark, or is not mfgtx's)."""
    if not os.path.lexists(path):
        return None, None
    if path.is_symlink():
        return "is a link, which mfgtx never writes; name the file itself", None
    if path.is_dir():
        return "is a folder, not a file", None
    if not path.is_file():
        return "exists and is not a plain file", None
    if _carries_mark(path) or _in_bundle(path):
        return None, None
    entry = _matching_entry(path)
    return (None, entry) if entry is not None else (_NOT_OURS, None)


def _written_by_mfgtx(path: Path) -> bool:
    return _ownership(path)[0] is None


def replace_problem(path: str | os.PathLike[str]) -> str | None:
    """Why mfgtx may not replace the file ``path`` (``None``: it does not exist, or mfgtx
    wrote it and it is unchanged since).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     mine = Path(tmp, "scores.csv")
        ...     atomic_write_bytes(mine, b"lot,p\\nL1,0.2\\n")
        ...     ok = replace_problem(mine)
        ...     _ = mine.write_text("lot,p,operator_note\\nL1,0.2,checked\\n")
        ...     print(ok, "/", replace_problem(mine))
        None / exists and was not written by mfgtx (or was changed since it wrote it)
    """
    return _ownership(Path(path))[0]


# --------------------------------------------------------------------------- writing


def _fsync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def _create(path: Path) -> None:
    """Create the empty file ``path`` with the usual permissions (0666 less the umask)."""
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))


def _new_temporary(target: Path) -> Path:
    while True:
        tmp = temporary_path(target)
        try:
            _create(tmp)
            return tmp
        except FileExistsError:  # pragma: no cover - 48 random bits
            continue


def _write_record(path: Path, contents: list[dict[str, Any]]) -> None:
    from mfgtx._version import __version__

    record = _record_path(path)
    record.parent.mkdir(exist_ok=True)
    data = {
        "written_by": "mfgtx",
        "version": __version__,
        "file": path.name,
        "contents": contents,
    }
    tmp = _new_temporary(record)
    try:
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        _fsync(tmp)
        os.replace(tmp, record)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_write(path: str | os.PathLike[str], write: Callable[[str], object]) -> None:
    """Write ``path`` all or nothing, and only over a file mfgtx wrote: ``write(tmp)`` fills
    a temporary file in the same folder, which is flushed to disk and renamed over ``path``,
    and the write is recorded. On any failure the temporary file is removed and ``path`` is
    untouched.

    The record lists the old and the new contents while the rename happens, so a job killed
    at any moment leaves a file that is still recognised as mfgtx's.

    Raises:
        NotWrittenByMfgtx: ``path`` exists and mfgtx did not write it (or it changed since).
    """
    path = Path(path)
    problem, old = _ownership(path)
    if problem is not None:
        raise NotWrittenByMfgtx(
            f"{path} {problem}; choose another file or move it away; nothing was written"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _new_temporary(path)
    new: dict[str, Any] | None = None
    try:
        write(str(tmp))
        if path.is_file():  # a replaced file keeps its permissions
            os.chmod(tmp, stat.S_IMODE(path.stat().st_mode))
        _fsync(tmp)
        if not (_carries_mark(tmp) or _in_bundle(path)):
            new = _digest(tmp)
            _write_record(path, [e for e in (old, new) if e is not None])
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if new is not None and old is not None and old != new:
        _write_record(path, [new])


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """:func:`atomic_write` of ``data``."""
    atomic_write(path, lambda tmp: Path(tmp).write_bytes(data))


# --------------------------------------------------------------------------- cleaning up


def _delete(p: Path) -> None:
    if p.is_dir() and not p.is_symlink():
        shutil.rmtree(p, ignore_errors=True)
    else:
        p.unlink(missing_ok=True)


def remove_leftovers(path: str | os.PathLike[str]) -> list[Path]:
    """Delete the temporaries a killed write of ``path`` left behind: hidden
    ``.<name>.mfgtx-<token>.tmp`` files, the ``.tmp``/``.old`` folders of a staged bundle, and
    those of its record. Nothing else: a user's ``.<name>.old`` stays.

    Call it only while holding ``path``'s lock. Returns what was removed (logged).
    """
    path = Path(path)
    record = _record_path(path)
    removed = []
    for folder, name in ((path.parent, path.name), (record.parent, record.name)):
        if not folder.is_dir():
            continue
        for p in sorted(folder.iterdir()):
            if is_temporary(p.name, name):
                _delete(p)
                removed.append(p)
                log.info("removed %s, left by an interrupted write of %s", p.name, path.name)
    return removed


def claim_folder(path: str | os.PathLike[str]) -> Path:
    """Create the folder ``path`` for mfgtx's own files, marked as created by mfgtx so that
    :func:`remove_written` may remove it once it is empty. An existing folder is left as it
    is (and is never removed)."""
    path = Path(path)
    if path.is_dir():
        return path
    path.mkdir(parents=True)
    (path / FOLDER_MARKER).write_text(
        "mfgtx created this folder for its own files; it removes the folder once empty\n",
        encoding="utf-8",
    )
    return path


@contextlib.contextmanager
def claimed_folder(path: str | os.PathLike[str]) -> Iterator[Path]:
    """:func:`claim_folder` for the length of a block: a folder it created that is still
    empty at the end (the job stopped before writing into it) is removed again."""
    path = Path(path)
    created = not os.path.lexists(path)
    claim_folder(path)
    try:
        yield path
    finally:
        if created and path.is_dir() and _only_marks_left(path):
            _remove_folder(path)


def _clear(folder: Path, kept: list[Path]) -> bool:
    """Delete what mfgtx wrote under ``folder``; whether anything was deleted."""
    deleted = False
    for entry in sorted(folder.iterdir()):
        if entry.name in (RECORDS, FOLDER_MARKER):
            continue
        if is_temporary(entry.name):
            _delete(entry)
            deleted = True
        elif entry.is_dir() and not entry.is_symlink():
            if _folder_record(entry) is not None:  # a bundle: only ever replaced whole
                kept.append(entry)
                continue
            emptied = _clear(entry, kept)
            deleted |= emptied
            if _only_marks_left(entry) and (emptied or (entry / FOLDER_MARKER).is_file()):
                _remove_folder(entry)
        elif entry.is_file() and not entry.is_symlink() and _written_by_mfgtx(entry):
            entry.unlink()
            deleted = True
        else:
            kept.append(entry)
    records = folder / RECORDS
    if records.is_dir() and not records.is_symlink():
        for record in sorted(p for p in records.iterdir() if p.is_file()):
            orphan = record.name.endswith(".json") and not os.path.lexists(
                folder / record.name[: -len(".json")]
            )
            if orphan or is_temporary(record.name):
                record.unlink(missing_ok=True)
        if not any(records.iterdir()):
            records.rmdir()
    return deleted


def _only_marks_left(folder: Path) -> bool:
    return all(p.name == FOLDER_MARKER for p in folder.iterdir())


def _remove_folder(folder: Path) -> None:
    (folder / FOLDER_MARKER).unlink(missing_ok=True)
    folder.rmdir()


def remove_written(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete the files mfgtx wrote under ``folder`` (recorded and unchanged, or carrying
    its mark, and its temporaries), subfolders left empty by that, and ``folder`` itself
    when it is then empty and :func:`claim_folder` made it. Everything else stays: a user's
    files, a folder the user made, a model bundle.

    Returns what was kept (logged).
    """
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return []
    kept: list[Path] = []
    _clear(folder, kept)
    if _only_marks_left(folder) and (folder / FOLDER_MARKER).is_file():
        _remove_folder(folder)
    elif kept:
        log.info(
            "kept %s in %s: mfgtx did not write %s",
            ", ".join(p.name for p in kept[:5]) + (" ..." if len(kept) > 5 else ""),
            folder,
            "it" if len(kept) == 1 else "them",
        )
    return kept
