"""Dashboard uploads: signed-in sessions only, a bounded number of bytes each, freed at the end.

Streamlit receives every file of ``st.file_uploader`` at
``PUT <base>/_stcore/upload_file/<session_id>/<file_id>`` (``DELETE`` there removes one) and
keeps it in memory, in its upload manager, until the session shuts down. Sign-in lives in the
page script, which that endpoint never runs, and a session whose browser left is kept for a
reconnection and later dropped without freeing its files. :class:`UploadGuard`, an ASGI
middleware of the dashboard (``app/main.py``), closes these gaps:

- **Signed-in sessions only.** The page script records each session that is signed in
  (:func:`record_session`, called by ``_auth.signed_in`` on every run) and forgets it at
  sign-out, freeing its files. Every request under ``_stcore/upload_file/`` (any method, any
  path below it) for another session is refused with 403 before its body is read. A
  dashboard that runs open (bound to localhost, or ``MFGTX_APP_NO_AUTH=1``) takes uploads
  from every session.
- **Bounded per session.** One session holds at most :attr:`UploadLimit.session_mb`
  megabytes of uploads (``MFGTX_APP_SESSION_UPLOAD_MB``, else ``session_upload_mb`` in
  ``app/mfgtx-app.toml``, else :data:`DEFAULT_SESSION_MB`), beside ``server.maxUploadSize``
  per file. An upload that would pass it is refused with 413: before its body is read when
  its Content-Length says so, otherwise as soon as the bytes received pass it (and, exactly,
  once the file is parsed). A file sent again under the same id replaces the old one and is
  not counted twice.
- **Freed when the session ends.** When a browser's connection closes, the uploads of every
  session that no longer has a connection are removed from the upload manager at once
  (``/_stcore/metrics`` shows them gone); a browser that reconnects later uploads again.
"""

from __future__ import annotations

import logging
import math
import os
import re
import threading
import tomllib
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("mfgtx.app.uploads")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Megabytes of uploads one session may hold when nothing else is configured.
DEFAULT_SESSION_MB = 200.0
ENV = "MFGTX_APP_SESSION_UPLOAD_MB"
KEY = "session_upload_mb"
#: Multipart framing around a file (boundaries, part headers, file name) allowed on the raw
#: body; the exact file size is checked once Streamlit has parsed it.
FRAMING_BYTES = 64 * 1024
MB = 2**20

# the route Streamlit serves uploads on, below any base URL path (the first match counts)
_UPLOAD_PATH = re.compile(r"(?:^|/)_stcore/upload_file(?:/|$)")

_lock = threading.Lock()
_signed_in: set[str] = set()  # session ids; written by the page script, read by the server


@dataclass(frozen=True)
class UploadLimit:
    """How many megabytes of uploads one dashboard session may hold.

    Args:
        session_mb: megabytes (2**20 bytes, as ``server.maxUploadSize``) held at once by one
            session, all its files together.

    Example:
        >>> UploadLimit(session_mb=1.5).session_bytes
        1572864
    """

    session_mb: float = DEFAULT_SESSION_MB

    def __post_init__(self) -> None:
        value = self.session_mb
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not (number and math.isfinite(value) and value > 0):
            raise ValueError(f"{KEY} must be a number of megabytes above 0, got {value!r}")

    @property
    def session_bytes(self) -> int:
        return int(self.session_mb * MB)

    @classmethod
    def from_settings(cls) -> UploadLimit:
        """``MFGTX_APP_SESSION_UPLOAD_MB``, else ``session_upload_mb`` in the dashboard's
        config file (``MFGTX_APP_CONFIG`` or ``app/mfgtx-app.toml``), else the default."""
        text = os.environ.get(ENV, "").strip()
        if text:
            try:
                return cls(float(text))
            except ValueError:
                raise ValueError(
                    f"{ENV} must be a number of megabytes above 0, got {text!r}"
                ) from None
        path = Path(
            os.environ.get("MFGTX_APP_CONFIG") or Path(__file__).resolve().parent / "mfgtx-app.toml"
        )
        if path.is_file():
            with path.open("rb") as f:
                value = tomllib.load(f).get(KEY)
            if value is not None:
                try:
                    return cls(value)
                except ValueError:
                    raise ValueError(
                        f"{path}: {KEY} must be a number of megabytes above 0, got {value!r}"
                    ) from None
        return cls()


# ------------------------------------------------------------ signed-in sessions


def record_session(signed_in: bool) -> None:
    """Record whether the session running this page script may upload (a no-op outside a
    script run). A session that signs out loses its uploads at once."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is None:
        return
    session_id = ctx.session_id
    with _lock:
        was = session_id in _signed_in
        if signed_in:
            _signed_in.add(session_id)
        else:
            _signed_in.discard(session_id)
    if was and not signed_in:
        ctx.uploaded_file_mgr.remove_session_files(session_id)
        log.info("session %s signed out; its uploads were freed", session_id[:8])


def may_upload(session_id: str) -> bool:
    """Whether ``session_id`` has signed in (and not signed out or ended since)."""
    with _lock:
        return session_id in _signed_in


# ------------------------------------------------------- Streamlit's upload manager


def _runtime() -> Any:
    from streamlit import runtime

    return runtime.get_instance() if runtime.exists() else None


def held_bytes(session_id: str, *, except_file: str | None = None) -> int:
    """Bytes of uploads the upload manager holds for ``session_id`` (leaving out
    ``except_file``, which an upload under the same id replaces)."""
    rt = _runtime()
    storage = getattr(rt.uploaded_file_mgr, "file_storage", None) if rt else None
    if not storage:  # no server, or a manager that keeps no per-session files in memory
        return 0
    ids = [i for i in list(storage.get(session_id, ())) if i != except_file]
    return sum(len(f.data) for f in rt.uploaded_file_mgr.get_files(session_id, ids))


def free_ended_sessions() -> None:
    """Remove the uploads, and the sign-in record, of every session without a connection."""
    rt = _runtime()
    if rt is None:
        return
    manager = rt.uploaded_file_mgr
    with _lock:
        known = set(_signed_in)
    for session_id in known | set(list(getattr(manager, "file_storage", ()))):
        if rt.is_active_session(session_id):
            continue
        held = held_bytes(session_id)
        manager.remove_session_files(session_id)
        with _lock:
            _signed_in.discard(session_id)
        if held:
            log.info("session %s ended; %.1f MB of uploads freed", session_id[:8], held / MB)


# ---------------------------------------------------------------------- middleware


def upload_target(scope: Scope) -> tuple[str, str] | None:
    """``(session_id, file_id)`` of a request under ``_stcore/upload_file/`` (empty strings
    where the path has none), or None for any other request."""
    path = scope.get("path") or ""
    match = _UPLOAD_PATH.search(path)
    if match is None:
        return None
    parts = path[match.end() :].split("/")
    return parts[0], parts[1] if len(parts) > 1 else ""


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # Streamlit answers 400 for it
    return None


async def _answer(send: Send, status: int, text: str) -> None:
    body = text.encode()
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),  # the rest of the body is never read
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class UploadGuard:
    """ASGI middleware: uploads for signed-in sessions only, bounded per session, freed when
    the session's connection ends (see the module docstring).

    Args:
        app: the ASGI app it wraps.
        is_open: whether the dashboard runs open on purpose (then every session may upload).
        limit: the per-session bound; :meth:`UploadLimit.from_settings` when None.
    """

    def __init__(
        self, app: ASGIApp, *, is_open: Callable[[], bool], limit: UploadLimit | None = None
    ) -> None:
        self.app = app
        self.is_open = is_open
        self.limit = limit or UploadLimit.from_settings()
        self._receiving: dict[str, int] = {}  # body bytes in flight per session

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # a browser's connection: its end ends the session
            try:
                await self.app(scope, receive, send)
            finally:
                free_ended_sessions()
            return
        target = upload_target(scope) if scope["type"] == "http" else None
        if target is None:
            await self.app(scope, receive, send)
            return
        session_id, file_id = target
        free_ended_sessions()
        if not (may_upload(session_id) or self.is_open()):
            log.warning(
                "refused %s of an upload for session %s, which has not signed in (client %s)",
                scope["method"],
                session_id[:8] or "(none)",
                (scope.get("client") or ("unknown",))[0],
            )
            await _answer(
                send,
                403,
                "Upload refused: this dashboard session has not signed in. "
                "Sign in, then upload the file again.",
            )
            return
        if scope["method"] != "PUT":
            await self.app(scope, receive, send)
            return
        try:
            await self._bounded_put(scope, receive, send, session_id, file_id)
        finally:
            free_ended_sessions()  # the browser may have left while the file arrived

    def _refusal(self, session_id: str, file_id: str, size: str) -> str:
        held = held_bytes(session_id, except_file=file_id) / MB
        log.warning(
            "refused an upload of %s for session %s: it holds %.2f MB, the limit is %g MB",
            size,
            session_id[:8],
            held,
            self.limit.session_mb,
        )
        return (
            f"Upload refused: a file of {size} would take this session past its limit of "
            f"{self.limit.session_mb:g} MB of uploaded files ({ENV}); it holds {held:.2f} MB "
            "already. Remove a file from an uploader, then try again."
        )

    async def _bounded_put(
        self, scope: Scope, receive: Receive, send: Send, session_id: str, file_id: str
    ) -> None:
        limit = self.limit.session_bytes
        length = _content_length(scope)
        if length is not None and held_bytes(session_id, except_file=file_id) + length > (
            limit + FRAMING_BYTES
        ):
            await _answer(send, 413, self._refusal(session_id, file_id, f"{length / MB:.2f} MB"))
            return
        over = False
        received = 0

        async def counted_receive() -> Message:
            nonlocal over, received
            if over:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                n = len(message.get("body", b""))
                received += n
                self._receiving[session_id] = self._receiving.get(session_id, 0) + n
                in_flight = self._receiving[session_id]
                if held_bytes(session_id, except_file=file_id) + in_flight > limit + FRAMING_BYTES:
                    over = True
                    return {"type": "http.disconnect"}  # Streamlit stops reading and drops it
            return message

        held_back: list[Message] = []

        async def hold(message: Message) -> None:
            held_back.append(message)  # sent once the stored file is within the limit

        try:
            await self.app(scope, counted_receive, hold)
        except Exception:
            if not over:
                raise
        finally:
            left = self._receiving.get(session_id, 0) - received
            if left > 0:
                self._receiving[session_id] = left
            else:
                self._receiving.pop(session_id, None)
        stored = bool(held_back) and 200 <= held_back[0].get("status", 500) < 300
        if stored and held_bytes(session_id) > limit:  # exact, once the file is parsed
            manager = _runtime().uploaded_file_mgr
            size = sum(len(f.data) for f in manager.get_files(session_id, [file_id]))
            manager.remove_file(session_id, file_id)
            await _answer(send, 413, self._refusal(session_id, file_id, f"{size / MB:.2f} MB"))
            return
        if over:
            await _answer(
                send, 413, self._refusal(session_id, file_id, f"over {received / MB:.2f} MB")
            )
            return
        for message in held_back:
            await send(message)
