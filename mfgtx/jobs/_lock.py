"""One job per output at a time: an OS file lock next to the output, holding the owner's pid.

The lock is ``fcntl.flock`` on ``<target>.lock``: the kernel grants it to one process at a
time and releases it when that process ends, however it ends (killed by the scheduler,
out of memory, power cut on a local disk), so a lock left behind by a dead job is free at
once and two jobs started together can never both hold it. The file holds the owner's pid
for the message another job gets. A job removes the file when it finishes; a job that
locked a file which was removed and replaced in the meantime notices (the path no longer
names the file it locked) and locks the new one instead.

POSIX only (Linux, macOS). Works on local disks and on network filesystems whose ``flock``
is coherent across machines (NFSv4 with recent kernels, CIFS with ``nobrl`` unset); on
others, give each machine its own outputs.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

__all__ = ["LockedError", "output_lock"]

log = logging.getLogger(__name__)


class LockedError(RuntimeError):
    """Another running job holds the lock of this output."""


def _owner(fd: int) -> str:
    try:
        text = os.pread(fd, 64, 0).decode("ascii", "replace").split()
        return text[0] if text else "unknown"
    except OSError:
        return "unknown"


def _try_lock(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False


def _same_file(fd: int, path: Path) -> bool:
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


@contextlib.contextmanager
def output_lock(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Hold ``<target>.lock`` while the block runs.

    Raises:
        LockedError: a running process holds the lock (the message names its pid).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with output_lock(f"{tmp}/scores.parquet") as lock:
        ...         try:
        ...             with output_lock(f"{tmp}/scores.parquet"):
        ...                 pass
        ...         except LockedError as e:
        ...             print("refused:", "another job writes this output" in str(e))
        refused: True
    """
    lock = Path(f"{os.fspath(target)}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    for _ in range(100):  # another job may remove the file between our open and our lock
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        if not _try_lock(fd):
            owner = _owner(fd)
            os.close(fd)
            raise LockedError(
                f"{lock} is held by running process {owner}: another job writes this output"
            )
        if _same_file(fd, lock):
            break
        os.close(fd)  # we locked a file that was removed meanwhile: lock the new one
    else:  # pragma: no cover - a pathological race
        raise LockedError(f"could not take the lock {lock}")
    try:
        previous = _owner(fd)
        if previous != "unknown" and previous != str(os.getpid()):
            log.info("taking over %s from process %s, which has ended", lock, previous)
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield lock
    finally:
        with contextlib.suppress(FileNotFoundError):
            if _same_file(fd, lock):
                lock.unlink()  # while still locked: a waiter then locks a fresh file
        os.close(fd)
