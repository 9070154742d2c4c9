"""Checksums of bundle files: ``checksum.sha256`` and size + sha256 checks on read.

``checksum.sha256`` has the format of GNU ``sha256sum`` (``<64 hex>  <file name>`` per line,
sorted by name), so ``cd bundle && sha256sum -c checksum.sha256`` checks a bundle without
Python. Files are read whole and checked in memory; the bytes that passed the check are the
bytes that get deserialised, so a file cannot change between checking and loading.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from mfgtx.artifacts.errors import BundleError

__all__ = ["format_checksums", "parse_checksums", "read_verified", "sha256_hex"]

_LINE = re.compile(r"^([0-9a-f]{64}) [ *]([^/\\]+)$")


def sha256_hex(data: bytes) -> str:
    """Lower-case hex sha256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


def format_checksums(digests: dict[str, str]) -> str:
    """``sha256sum`` text for ``{file name: hex digest}``."""
    return "".join(f"{digests[name]}  {name}\n" for name in sorted(digests))


def parse_checksums(text: str, file: Path) -> dict[str, str]:
    """``{file name: hex digest}`` from ``sha256sum`` text; ``BundleError`` on a bad line."""
    digests: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        match = _LINE.match(line)
        if match is None or match[2] in digests:
            raise BundleError(
                f"{file} line {number} is not '<sha256>  <file name>' (or repeats a file): "
                f"{line[:100]!r}",
                file=file,
            )
        digests[match[2]] = match[1]
    return digests


def read_verified(file: Path, *, sha256: str, size: int | None = None, source: str) -> bytes:
    """The bytes of ``file`` after checking its size and sha256 against ``source``'s record.

    Raises:
        BundleError: the file is missing, truncated, too long, or its content changed.
    """
    if not file.is_file():
        raise BundleError(f"{file} is missing from the bundle", file=file)
    data = file.read_bytes()
    if size is not None and len(data) < size:
        raise BundleError(
            f"{file} is truncated: {len(data)} bytes, {source} says {size}", file=file
        )
    if size is not None and len(data) > size:
        raise BundleError(
            f"{file} is {len(data) - size} bytes longer than the {size} that {source} says",
            file=file,
        )
    found = sha256_hex(data)
    if found != sha256:
        raise BundleError(
            f"{file} is corrupted or was changed: its sha256 is {found}, {source} says {sha256}",
            file=file,
        )
    return data
