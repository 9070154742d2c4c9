"""Atomic, checksummed training checkpoints.

A checkpoint is written to a temporary file in the same directory, flushed to disk and then
renamed over ``last.ckpt``, so a job killed at any moment leaves either the previous
checkpoint or the new one, never half of one. A ``.sha256`` file beside it is checked before
loading, and loading uses ``torch.load(weights_only=True)``, which refuses anything but
tensors and plain containers.
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


class CheckpointError(RuntimeError):
    """A checkpoint that is missing, corrupted or does not belong to this run."""


def save_checkpoint(path: str | Path, state: dict[str, Any]) -> None:
    """Write ``state`` atomically to ``path`` with a sha256 sidecar."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    torch.save(state, buffer)
    data = buffer.getvalue()
    digest = hashlib.sha256(data).hexdigest()
    # the data first, then its checksum: a crash in between leaves a mismatch that is refused
    atomic_write_bytes(path, data)
    atomic_write_bytes(path.with_name(path.name + ".sha256"), f"{digest}  {path.name}\n".encode())
    if path.parent.exists():  # make the renames durable
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Load a checkpoint written by :func:`save_checkpoint`, after checking its sha256."""
    path = Path(path)
    sidecar = path.with_name(path.name + ".sha256")
    if not path.exists():
        raise CheckpointError(f"checkpoint not found: {path}")
    if not sidecar.exists():
        raise CheckpointError(f"checkpoint {path} has no checksum file {sidecar.name}")
    data = path.read_bytes()
    expected = sidecar.read_text().split()[0] if sidecar.read_text().strip() else ""
    found = hashlib.sha256(data).hexdigest()
    if found != expected:
        raise CheckpointError(
            f"checkpoint {path} is corrupted: sha256 {found[:12]}... does not match "
            f"{sidecar.name} ({expected[:12]}...)"
        )
    try:
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as err:
        raise CheckpointError(f"checkpoint {path} cannot be read: {err}") from err
