"""Atomic, checksummed training checkpoints.

A checkpoint is one file: a header line ``mfgtx-checkpoint 2``, the sha256 of the payload,
then the payload (``torch.save`` of tensors and plain containers). It is written to a
temporary file in the same directory, flushed to disk and renamed over ``last.ckpt``, so a
job killed at any moment leaves either the previous checkpoint or the new one, whole and
with its checksum, never half of one (the checksum travels inside the file, so no moment
exists at which the file and a separate checksum disagree). Loading checks the checksum
before deserialising and uses ``torch.load(weights_only=True)``, which refuses anything but
tensors and plain containers. Checkpoints of the earlier layout (a ``.sha256`` file beside
the checkpoint) still load.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path
from typing import Any

import torch

from mfgtx._files import atomic_write_bytes

__all__ = ["CheckpointError", "load_checkpoint", "save_checkpoint"]

_MAGIC = b"mfgtx-checkpoint 2\n"
_DIGEST_LEN = 64  # hex sha256, then a newline


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupted or does not belong to this run."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` atomically to ``path``, its sha256 inside the file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    payload = buffer.getvalue()
    digest = hashlib.sha256(payload).hexdigest().encode("ascii")
    atomic_write_bytes(path, _MAGIC + digest + b"\n" + payload)
    path.with_name(path.name + ".sha256").unlink(missing_ok=True)  # the earlier layout's
    dir_fd = os.open(path.parent, os.O_RDONLY)  # make the rename durable
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def _payload(path: Path, data: bytes) -> bytes:
    if data.startswith(_MAGIC):
        head = len(_MAGIC)
        expected = data[head : head + _DIGEST_LEN].decode("ascii", "replace")
        payload = data[head + _DIGEST_LEN + 1 :]
    else:  # the earlier layout: the checksum in a file beside the checkpoint
        sidecar = path.with_name(path.name + ".sha256")
        if not sidecar.exists():
            raise CheckpointError(
                f"checkpoint {path} is not an mfgtx checkpoint (no header) and has no "
                f"checksum file {sidecar.name}"
            )
        text = sidecar.read_text(errors="replace").split()
        expected, payload = (text[0] if text else ""), data
    found = hashlib.sha256(payload).hexdigest()
    if found != expected:
        raise CheckpointError(
            f"checkpoint {path} is corrupted: its content's sha256 {found[:12]}... does not "
            f"match the recorded {expected[:12]}..."
        )
    return payload


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`, after checking its sha256."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    payload = _payload(path, path.read_bytes())
    try:
        return torch.load(io.BytesIO(payload), map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"checkpoint {path} cannot be read: {err}") from err
