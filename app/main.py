"""mfgtx dashboard launcher: ``streamlit run app/main.py``, ``python app/main.py`` or ``mfgtx app``.

This file builds the dashboard as an ASGI app (``st.App``) so that every HTTP response carries
security headers (no framing by other sites, no MIME sniffing, no referrer, a restrictive
content security policy) and so that uploads are taken only from signed-in sessions, at most
``MFGTX_APP_SESSION_UPLOAD_MB`` megabytes per session, and freed when the session ends
(``_uploads.UploadGuard``). The pages themselves are ``app/dashboard.py`` and ``app/views/``.
Settings for the plant network are in ``app/.streamlit/config.toml``, which Streamlit reads
beside this script whatever the working directory; ``python app/main.py`` (and ``mfgtx app``)
pin the same settings again, so a service started from anywhere runs the same way.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import streamlit as st
from starlette.middleware import Middleware

if str(Path(__file__).resolve().parent) not in sys.path:  # the page script's _auth, _uploads
    sys.path.insert(0, str(Path(__file__).resolve().parent))

import _auth
from _uploads import UploadGuard, UploadLimit

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

#: Added to every HTTP response of the dashboard.
SECURITY_HEADERS = {
    "x-frame-options": "DENY",
    "content-security-policy": (
        "frame-ancestors 'none'; object-src 'none'; base-uri 'self'; form-action 'self'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "permissions-policy": "camera=(), microphone=(), geolocation=(), usb=(), serial=()",
    "cross-origin-opener-policy": "same-origin",
}

CONFIG = Path(__file__).resolve().parent / ".streamlit" / "config.toml"


def plant_settings() -> dict[str, Any]:
    """The plant-network settings of ``app/.streamlit/config.toml`` as dotted options."""
    import tomllib

    with CONFIG.open("rb") as f:
        sections = tomllib.load(f)
    return {f"{s}.{k}": v for s, options in sections.items() for k, v in options.items()}


class SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` to every HTTP response."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app
        self.headers = [(k.encode("ascii"), v.encode("ascii")) for k, v in SECURITY_HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                names = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k, v) for k, v in self.headers if k not in names]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)


def runs_open() -> bool:
    """Whether the dashboard runs without sign-in (then every session may upload)."""
    return _auth.mode() == "open"


try:
    upload_limit = UploadLimit.from_settings()
except ValueError as e:  # a setting the operator wrote: one line, no traceback
    raise SystemExit(f"mfgtx dashboard: {e}") from None

app = st.App(
    "dashboard.py",
    middleware=[
        Middleware(SecurityHeaders),  # outermost: refusals carry the headers too
        Middleware(UploadGuard, is_open=runs_open, limit=upload_limit),
    ],
)

if __name__ == "__main__":
    app.run(config=plant_settings())
