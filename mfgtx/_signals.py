"""Stop signals end a job cleanly: SIGTERM (schedulers, systemd, ``kill``), SIGINT (Ctrl-C),
SIGHUP (the terminal closed).

Python's default for SIGTERM and SIGHUP ends the process at once: no ``finally`` block runs,
so an output's ``.lock`` file stays behind, a staged bundle or temporary file is not removed
and no summary line is written. While :func:`stop_on_signals` is active, the first stop
signal instead raises :class:`Stopped` in the main thread, wherever it is, so every
``finally`` and context manager on the way out runs: the lock is released, temporaries are
removed, the last complete checkpoint is kept. :class:`Stopped` is a ``KeyboardInterrupt``:
``except Exception`` in library code does not swallow it, and code that already cleans up
after Ctrl-C (PyTorch's DataLoader workers, ``subprocess``) does the same for SIGTERM.

Further stop signals while the job unwinds are ignored, so that a scheduler that signals
twice, or ``torchrun`` forwarding the signal it got to a worker that got it too, cannot cut
the cleanup short (SIGKILL still ends the process at once). Once stopping, a child process
that ends (a DataLoader worker the same signal reached) is no longer reported as an error.
A signal the process was started to ignore (``nohup``, a background job) stays ignored.
A child process forked from the job (a DataLoader worker) that inherited the handler acts
as if it had none.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

__all__ = [
    "STOP_SIGNALS",
    "StopState",
    "Stopped",
    "restore_handlers",
    "stop_handlers",
    "stop_on_signals",
]

#: the signals that stop a job; each ends it with exit code ``128 + signal number``
STOP_SIGNALS = ("SIGTERM", "SIGINT", "SIGHUP")


def stop_handlers() -> dict[int, Any]:
    """This process's handlers of the stop signals (those this platform has), to put back
    with :func:`restore_handlers` after code that installs its own (Ray's start, Ray Train)."""
    found = (getattr(signal, name, None) for name in STOP_SIGNALS)
    return {s: signal.getsignal(s) for s in found if s is not None}


def restore_handlers(handlers: dict[int, Any]) -> None:
    """Put back the handlers :func:`stop_handlers` returned, where they were replaced."""
    for signum, handler in handlers.items():
        if handler is not None and signal.getsignal(signum) is not handler:
            try:
                signal.signal(signum, handler)
            except ValueError:  # pragma: no cover - not the main thread: none was replaced
                pass


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; raised in the main thread so that the job unwinds cleanly.

    Attributes:
        signum: the signal's number.
    """

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"stopped by {signal_name(signum)}")


def signal_name(signum: int) -> str:
    """``SIGTERM`` for 15."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


@dataclass
class StopState:
    """What :func:`stop_on_signals` saw: the first stop signal, if any."""

    signum: int | None = None
    repeated: int = 0  # stop signals ignored while the job unwound
    _children: Any = field(default=None, repr=False)  # SIGCHLD's handler before the stop

    @property
    def name(self) -> str | None:
        """``"SIGTERM"``, or ``None`` before any stop signal."""
        return None if self.signum is None else signal_name(self.signum)

    @property
    def exit_code(self) -> int | None:
        """``128 + signum`` as shells report it (143 SIGTERM, 130 SIGINT, 129 SIGHUP)."""
        return None if self.signum is None else 128 + self.signum


def _as_if_unhandled(signum: int) -> None:
    """What a process without this handler does on ``signum``."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def _handler(state: StopState, pid: int) -> Callable[[int, FrameType | None], None]:
    def handle(signum: int, frame: FrameType | None) -> None:
        if os.getpid() != pid:  # a forked child that inherited the handler
            _as_if_unhandled(signum)
            return
        if state.signum is not None:  # already stopping: let the cleanup finish
            state.repeated += 1
            return
        state.signum = signum
        children = signal.getsignal(signal.SIGCHLD)
        if callable(children):  # PyTorch's check that no DataLoader worker died
            state._children = children
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        raise Stopped(signum)

    return handle


@contextlib.contextmanager
def stop_on_signals() -> Iterator[StopState]:
    """Turn the stop signals into :class:`Stopped` while the block runs (main thread only:
    elsewhere Python cannot install signal handlers and nothing changes); the previous
    handlers are restored afterwards.

    Example:
        >>> with stop_on_signals() as stop:
        ...     try:
        ...         os.kill(os.getpid(), signal.SIGTERM)
        ...         for _ in range(10**6):  # the handler runs between two bytecodes
        ...             pass
        ...     except Stopped as e:
        ...         print(e, stop.exit_code)
        stopped by SIGTERM 143
    """
    state = StopState()
    if threading.current_thread() is not threading.main_thread():
        yield state
        return
    handle = _handler(state, os.getpid())
    previous: dict[signal.Signals, Any] = {}
    for name in STOP_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:  # pragma: no cover - not on this platform
            continue
        current = signal.getsignal(signum)
        if current == signal.SIG_IGN:  # nohup, a background job: the starter's choice
            continue
        previous[signum] = signal.SIG_DFL if current is None else current
        signal.signal(signum, handle)
    try:
        yield state
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)
        if state._children is not None:
            signal.signal(signal.SIGCHLD, state._children)
