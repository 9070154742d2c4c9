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

from mfgtx.artifacts._manifest import CHECKSUM_FILE
from mfgtx.artifacts._signing import SIGNATURE_FILE
from mfgtx.artifacts.errors import BundleError

__all__ = [
    "MAX_CHECKSUM_BYTES",
    "bundle_files",
    "format_checksums",
    "parse_checksums",
    "read_limited",
    "read_verified",
    "sha256_hex",
]

#: Largest ``checksum.sha256`` read (a bundle lists a few files).
MAX_CHECKSUM_BYTES = 64 * 1024

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


def read_limited(file: Path, limit: int, what: str) -> bytes:
    """The bytes of ``file``, a regular file of at most ``limit`` bytes (checked before
    reading, and again while reading, in case it grows).

    Raises:
        BundleError: missing, not a regular file (a link, a device), or too large.
    """
    if file.is_symlink() or not file.is_file():
        why = "a symbolic link" if file.is_symlink() else "missing or not a regular file"
        raise BundleError(f"{file} is {why}; a bundle holds plain files", file=file)
    size = file.stat().st_size
    if size > limit:
        raise BundleError(
            f"{file} is {size:,} bytes, more than a {what} can be ({limit:,})", file=file
        )
    with file.open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise BundleError(f"{file} grew past {limit:,} bytes while it was read", file=file)
    return data


def read_verified(file: Path, *, sha256: str, size: int | None = None, source: str) -> bytes:
    """The bytes of ``file`` after checking its size and sha256 against ``source``'s record.

    The size on disk is compared with the record before anything is read, so a file that
    was swapped for a huge one (or a link to one) is refused at once.

    Raises:
        BundleError: the file is missing, truncated, too long, or its content changed.
    """
    if file.is_symlink() or not file.is_file():
        what = "a symbolic link; a bundle holds plain files" if file.is_symlink() else "missing"
        raise BundleError(f"{file} is {what} from the bundle", file=file)
    on_disk = file.stat().st_size
    if size is not None and on_disk < size:
        raise BundleError(f"{file} is truncated: {on_disk} bytes, {source} says {size}", file=file)
    if size is not None and on_disk > size:
        raise BundleError(
            f"{file} is {on_disk - size} bytes longer than the {size} that {source} says",
            file=file,
        )
    data = read_limited(file, on_disk if size is None else size, "bundle file")
    found = sha256_hex(data)
    if found != sha256:
        raise BundleError(
            f"{file} is corrupted or was changed: its sha256 is {found}, {source} says {sha256}",
            file=file,
        )
    return data


def bundle_files(path: str | Path) -> set[str]:
    """The names of the files that belong to the bundle at ``path`` (those its
    ``checksum.sha256`` lists, the checksum file and the signature); empty if unreadable."""
    checksum_file = Path(path) / CHECKSUM_FILE
    try:
        text = read_limited(checksum_file, MAX_CHECKSUM_BYTES, "checksum file").decode("ascii")
        names = set(parse_checksums(text, checksum_file))
    except (BundleError, OSError, UnicodeDecodeError):
        return set()
    return names | {CHECKSUM_FILE, SIGNATURE_FILE}
