"""What the ``mfgtx`` command says: its stdout lines and its log.

This is the one place in the package that writes to stdout (:func:`emit`); the library
itself only logs (to stderr). A job's last stdout line is its JSON summary (:func:`summary`).
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
from typing import Any

__all__ = ["emit", "log", "summary"]

# one logger for the whole command, named as when the command was one module
log = logging.getLogger("mfgtx.cli")


def emit(line: str = "") -> None:
    """One line on stdout; a reader that left (``| head -1``) does not stop the job."""
    try:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| head -1`): the job itself goes on
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def summary(data: dict[str, Any]) -> None:
    """The last stdout line of a job: one JSON object (for schedulers and log parsers); a
    figure that is not a number (R² of a constant truth) is written as ``null``."""
    emit(json.dumps(_finite(data), sort_keys=True, default=str, allow_nan=False))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
