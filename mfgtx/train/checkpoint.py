"""Atomic, checksummed and (with a plant's key) signed training checkpoints.

A checkpoint is one file: a header line ``mfgtx-checkpoint 2``, the sha256 of the payload,
then the payload (``torch.save`` of tensors and plain containers). It is written to a
temporary file in the same directory, flushed to disk and renamed over ``last.ckpt``, so a
job killed at any moment leaves either the previous checkpoint or the new one, whole and
with its checksum, never half of one (the checksum travels inside the file, so no moment
exists at which the file and a separate checksum disagree). Loading checks the checksum
before deserialising and uses ``torch.load(weights_only=True)``, which refuses anything but
tensors and plain containers. Checkpoints of the earlier layout (a ``.sha256`` file beside
the checkpoint) still load.

A checksum catches corruption, not forgery: anyone who can write the checkpoint folder can
write a valid one with :func:`save_checkpoint`, and a resumed run would turn its weights
into a bundle signed with the plant's key. So with a signing key configured
(``MFGTX_BUNDLE_KEY_FILE`` or ``MFGTX_BUNDLE_KEY``, :mod:`mfgtx._keys`), a checkpoint is
``mfgtx-checkpoint 3``: the same, plus a line ``hmac-sha256 <key id> <HMAC of the payload>``
after the checksum, and loading refuses a checkpoint that is unsigned, signed with another
key, or whose signature does not match. Without a key, checkpoints are written and read as
before; a signed one loads, unverified.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mfgtx._files import atomic_write_bytes
from mfgtx._keys import KEY_ENV, KEY_FILE_ENV, SCHEME, SigningKeyError, key_id, mac
from mfgtx._keys import read_signing_key as _read_key

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]

log = logging.getLogger(__name__)

_MAGIC = b"mfgtx-checkpoint 2\n"
_SIGNED_MAGIC = b"mfgtx-checkpoint 3\n"  # a signature line follows the checksum
_DIGEST_LEN = 64  # hex sha256, then a newline
_PURPOSE = b"mfgtx-checkpoint-v3"  # what the HMAC signs: never a bundle's checksums
_MAX_SIGNATURE_LINE = 256


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupted or does not belong to this run."""


def _signing_key() -> bytes | None:
    try:
        return _read_key()
    except SigningKeyError as e:
        raise CheckpointError(f"cannot sign or check training checkpoints: {e}") from None


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` atomically to ``path``, its sha256 inside the file, and its signature
    when a signing key is configured.

    Raises:
        CheckpointError: the configured signing key cannot be read or is too short.
    """
    path = Path(path)
    key = _signing_key()  # before any work: a bad key stops the run at its first save
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    if key is None:
        head = _MAGIC + digest + b"\n"
    else:
        line = f"{SCHEME} {key_id(key)} {mac(key, _PURPOSE, payload)}\n".encode("ascii")
        head = _SIGNED_MAGIC + digest + b"\n" + line
    atomic_write_bytes(path, head + payload)
    _remove_old_checksum(path.with_name(path.name + ".sha256"))
    dir_fd = os.open(path.parent, os.O_RDONLY)  # make the rename durable
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _remove_old_checksum(sidecar: Path) -> None:
    """Delete the checksum file the earlier layout wrote beside a checkpoint, and only such a
    file: a short plain file whose text is one sha256 and the checkpoint's name, as
    ``sha256sum`` writes them (a user's file of that name stays)."""
    try:
        if sidecar.is_symlink() or not sidecar.is_file() or sidecar.stat().st_size > 200:
            return
        words = sidecar.read_text(encoding="ascii").split()
    except (OSError, UnicodeDecodeError):
        return
    named = words[1:] in ([], [sidecar.name.removesuffix(".sha256")])
    if words and re.fullmatch(r"[0-9a-f]{64}", words[0]) and named:
        sidecar.unlink(missing_ok=True)


@dataclass(frozen=True)
class _Parsed:
    expected: str  # the recorded sha256
    signature: list[str] | None  # the signature line's fields, None when unsigned
    payload: bytes


def _parse(path: Path, data: bytes) -> _Parsed:
    if data.startswith(_MAGIC) or data.startswith(_SIGNED_MAGIC):
        head = len(_MAGIC)  # both headers are the same length
        expected = data[head : head + _DIGEST_LEN].decode("ascii", "replace")
        rest = head + _DIGEST_LEN + 1
        if not data.startswith(_SIGNED_MAGIC):
            return _Parsed(expected, None, data[rest:])
        end = data.find(b"\n", rest, rest + _MAX_SIGNATURE_LINE)
        if end < 0:
            raise CheckpointError(
                f"checkpoint {path} is corrupted: its signature line is cut off or too long"
            )
        fields = data[rest:end].decode("ascii", "replace").split()
        return _Parsed(expected, fields, data[end + 1 :])
    sidecar = path.with_name(path.name + ".sha256")  # the earlier layout: a checksum file
    if not sidecar.exists():
        raise CheckpointError(
            f"checkpoint {path} is not an mfgtx checkpoint (no header) and has no "
            f"checksum file {sidecar.name}"
        )
    text = sidecar.read_text(errors="replace").split()
    return _Parsed(text[0] if text else "", None, data)


def _check_signature(path: Path, parsed: _Parsed, key: bytes | None) -> None:
    """Refuse, with a key configured, a checkpoint that is unsigned, signed with another key
    or whose signature does not match its content."""
    start_over = (
        f"delete {path} (or its folder, train.checkpoint_dir) and train again without --resume"
    )
    if key is None:
        if parsed.signature is not None:
            log.info(
                "checkpoint %s is signed, but no signing key is configured here (%s/%s): "
                "its signature was not checked",
                path,
                KEY_FILE_ENV,
                KEY_ENV,
            )
        return
    if parsed.signature is None:
        raise CheckpointError(
            f"checkpoint {path} is not signed, and this machine only resumes checkpoints "
            f"signed with its key {key_id(key)} ({KEY_FILE_ENV}/{KEY_ENV}): it was written "
            f"without that key configured, or by someone else; {start_over}"
        )
    fields = parsed.signature
    if len(fields) != 3 or fields[0] != SCHEME:
        raise CheckpointError(f"checkpoint {path} has no readable signature; {start_over}")
    if fields[1] != key_id(key):
        raise CheckpointError(
            f"checkpoint {path} was signed with the key {fields[1]}, not with this machine's "
            f"key {key_id(key)}: resume it where that key is configured, or {start_over}"
        )
    if not hmac.compare_digest(fields[2], mac(key, _PURPOSE, parsed.payload)):
        raise CheckpointError(
            f"checkpoint {path} does not match its signature: it was changed after it was "
            f"written, so it is not resumed; {start_over}"
        )


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`, after checking its sha256 and,
    with a signing key configured, its signature.

    Raises:
        CheckpointError: the checkpoint is missing, corrupted, cannot be read, or (with a
            key) is unsigned, signed with another key, or does not match its signature.
    """
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    key = _signing_key()
    parsed = _parse(path, path.read_bytes())
    found = hashlib.sha256(parsed.payload).hexdigest()
    if found != parsed.expected:
        raise CheckpointError(
            f"checkpoint {path} is corrupted: its content's sha256 {found[:12]}... does not "
            f"match the recorded {parsed.expected[:12]}..."
        )
    _check_signature(path, parsed, key)
    try:
        return torch.load(io.BytesIO(parsed.payload), map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"checkpoint {path} cannot be read: {err}") from err
