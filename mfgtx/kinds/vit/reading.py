"""Reading what a ViT bundle scores: a folder, a ``.zip``, a CSV manifest or ``(name, bytes)``
pairs, image by image, with one errors-file row per image that cannot be read."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["batches", "each_read", "error_row"]


def _read(key: str, where: Any) -> tuple[str, bytes]:
    from mfgtx.images import read_listed

    if isinstance(where, bytes | bytearray):
        return key, bytes(where)
    return read_listed(key, where)


def each_read(
    batch: list[tuple[str, Any]], errors: list[dict[str, object]], names: list[str]
) -> Iterator[tuple[str, bytes]]:
    """``(key, bytes)`` of each file of ``batch``, read when the consumer reaches it (its
    key appended to ``names``); a file that cannot be read is an error row instead."""
    from mfgtx.images import ImageError

    for key, where in batch:
        try:
            source = _read(key, where)
        except ImageError as e:
            errors.append(error_row(e.source, e.reason))
            continue
        names.append(source[0])
        yield source


def _listed(data: str | Path | Iterable[tuple[str, bytes]]) -> Iterator[tuple[str, Any]]:
    from mfgtx.data import DataError
    from mfgtx.images import iter_image_files

    if isinstance(data, str | Path):
        try:
            yield from iter_image_files(data)
        except ValueError as e:
            raise DataError(str(e)) from e
        return
    yield from data


def batches(
    data: str | Path | Iterable[tuple[str, bytes]], size: int, errors: list[dict[str, object]]
) -> Iterator[list[tuple[str, Any]]]:
    """Batches of ``(key, where)``; a key listed again (a repeated manifest row, a zip with a
    member twice) goes to ``errors`` and is scored once."""
    batch: list[tuple[str, Any]] = []
    seen: set[str] = set()
    for item in _listed(data):
        if item[0] in seen:
            errors.append(error_row(item[0], "listed twice; scored once"))
            continue
        seen.add(item[0])
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def error_row(file: str | None, reason: str) -> dict[str, object]:
    return {"lot": None, "file": file, "line": None, "column": None, "reason": reason}


# --------------------------------------------------------------------------- kind
