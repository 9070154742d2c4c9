"""One job per output at a time: a lock file next to the output, holding the owner's pid.

A lock left behind by a process that no longer runs (killed by the scheduler) is taken over
with a log line; one held by a running process makes the new job fail at once instead of
writing the same output twice.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LockedError", "output_lock"]

log = logging.getLogger(__name__)


class LockedError(RuntimeError):
    """Another running job holds the lock of this output."""


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _owner(lock: Path) -> int:
    try:
        return int(lock.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return -1


@contextlib.contextmanager
def output_lock(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``<target>.lock`` while the block runs.

    Raises:
        LockedError: a running process holds the lock (the message names its pid).
    """
    lock = Path(f"{os.fspath(target)}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            pid = _owner(lock)
            if _alive(pid):
                raise LockedError(
                    f"{lock} is held by running process {pid}: another job writes this output"
                ) from None
            log.warning("removing stale lock %s (process %s is gone)", lock, pid)
            with contextlib.suppress(FileNotFoundError):
                lock.unlink()
            continue
        with os.fdopen(fd, "w") as f:
            f.write(f"{os.getpid()}\n")
        break
    else:
        raise LockedError(f"could not take the lock {lock}")
    try:
        yield lock
    finally:
        with contextlib.suppress(FileNotFoundError):
            lock.unlink()
