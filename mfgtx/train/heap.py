"""Keep freed memory in the process heap while training on the CPU.

PyTorch has no caching allocator on the CPU: every activation and gradient of a training
step is a fresh ``malloc`` and a ``free``. glibc serves blocks above its mmap threshold
(128 KiB at first, up to 32 MiB as it adapts) with a new ``mmap`` and hands them back to the
kernel on ``free``, and it trims the top of the heap whenever more than 128 KiB lies free
there. The next step then touches every page of the same tensors again, and each first
touch is a page fault: the zeroing and mapping of 4 KiB. A step of the ViT-Tiny
configuration allocates several GB this way, so the faults cost about as much as its
matrix products in bf16 (``benchmarks/floor.py``; the figures are in the README).

:func:`keep_freed_memory` switches glibc to serving every block from the heap and never
trimming it, for as long as the context lasts, so that a step reuses the pages of the step
before it: what PyTorch's CPU performance guide gets by preloading jemalloc or tcmalloc, done
in-process. On leaving it restores glibc's thresholds and hands the free pages back to the
kernel (``malloc_trim``), so the process shrinks again once training ends. Where the C library
is not glibc (macOS, Windows, musl), it does nothing.

The setting is process-wide: nested and concurrent uses are counted, and the last one out
restores the thresholds.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import logging
import threading
from collections.abc import Iterator

__all__ = ["keep_freed_memory"]

log = logging.getLogger(__name__)

# mallopt parameters (glibc's malloc.h) and glibc's defaults for them
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_MMAP_MAX = -1, -3, -4
_DEFAULTS = {M_TRIM_THRESHOLD: 128 * 1024, M_MMAP_THRESHOLD: 128 * 1024, M_MMAP_MAX: 65536}
_KEEP = {M_MMAP_MAX: 0, M_TRIM_THRESHOLD: 2**31 - 1}  # no mmap'd blocks, never trim

_lock = threading.Lock()
_users = 0


def _glibc() -> ctypes.CDLL | None:
    """The process's C library if it is glibc (it has ``mallopt`` and ``malloc_trim``)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.gnu_get_libc_version  # glibc only  # noqa: B018
        libc.mallopt  # noqa: B018
        libc.malloc_trim  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


def _set(libc: ctypes.CDLL, params: dict[int, int]) -> bool:
    return all(libc.mallopt(ctypes.c_int(k), ctypes.c_int(v)) == 1 for k, v in params.items())


@contextlib.contextmanager
def keep_freed_memory(enabled: bool = True) -> Iterator[bool]:
    """Serve every allocation from the heap and keep freed pages, for the ``with`` block.

    Args:
        enabled: ``False`` makes the context do nothing (a switch for callers).

    Yields:
        ``True`` when the setting is in force (glibc), else ``False``.

    Example:
        >>> with keep_freed_memory() as kept:
        ...     isinstance(kept, bool)
        True
    """
    global _users
    libc = _glibc() if enabled else None
    if libc is None:
        yield False
        return
    with _lock:
        if _users == 0:
            if not _set(libc, _KEEP):
                _set(libc, _DEFAULTS)
                log.debug("mallopt refused the heap settings; glibc's defaults stay")
                libc = None
            else:
                log.debug("freed memory stays in the heap while training (glibc mallopt)")
        if libc is not None:
            _users += 1
    try:
        yield libc is not None
    finally:
        if libc is not None:
            with _lock:
                _users -= 1
                if _users == 0:
                    _set(libc, _DEFAULTS)
                    libc.malloc_trim(ctypes.c_size_t(0))
