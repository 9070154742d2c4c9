"""Fixtures of the alert tests: a local webhook receiver and a local SMTP server, both on
loopback, a port nobody listens on, an empty history and the small plant's quality bundle."""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from mfgtx.history import open_history
from mfgtx.jobs._sql import write_engine
from tests.hardening.conftest import plant, quality_bundle

__all__ = ["plant", "quality_bundle"]


def free_port() -> int:
    """A loopback port nobody listens on (now)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Receiver:
    """A webhook receiver: every POST's path, headers and JSON body."""

    port: int
    posts: list[dict[str, Any]] = field(default_factory=list)

    def url(self, path: str = "hook") -> str:
        return f"json://127.0.0.1:{self.port}/{path}"


def _serve(port: int) -> tuple[ThreadingHTTPServer, Receiver]:
    receiver = Receiver(port)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.posts.append(
                {"path": self.path, "headers": dict(self.headers), "body": json.loads(body)}
            )
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server, receiver = _serve(0)
    receiver.port = server.server_address[1]
    yield receiver
    server.shutdown()
    server.server_close()


@pytest.fixture
def serve():
    """``serve(port)`` starts a receiver on ``port`` (one that was down until now)."""
    servers: list[ThreadingHTTPServer] = []

    def start(port: int) -> Receiver:
        server, receiver = _serve(port)
        servers.append(server)
        return receiver

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@dataclass
class Mailbox:
    """A local SMTP server's port and the mails it took (sender, recipients, text)."""

    port: int
    mails: list[tuple[str, list[str], str]] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)  # (user, password), refused

    def url(self) -> str:
        # mailto:// is plain SMTP (no TLS); no user, so no login; the port is the server's
        return (
            f"mailto://127.0.0.1:{self.port}?from=mfgtx@plant.example&to=line3-lead@plant.example"
        )


@pytest.fixture
def mailbox() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    box = Mailbox(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            text = envelope.content.decode("utf-8", "replace")
            box.mails.append((envelope.mail_from, list(envelope.rcpt_tos), text))
            return "250 OK"

    def refuse(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        from aiosmtpd.smtp import AuthResult, LoginPassword

        if isinstance(data, LoginPassword):
            box.logins.append((data.login.decode(), data.password.decode()))
        return AuthResult(success=False, handled=False)

    # offers a login (without TLS, on loopback) and refuses every one
    controller = Controller(
        Handler(), hostname="127.0.0.1", port=box.port, authenticator=refuse,
        auth_require_tls=False,
    )  # fmt: skip
    # the test server's own log (a client cut off at stop) stays out of the handlers an
    # earlier in-process `mfgtx` run left on streams pytest has closed since
    server_log = logging.getLogger("mail.log")
    before = server_log.propagate
    server_log.propagate = False
    controller.start()
    try:
        yield box
    finally:
        controller.stop()
        server_log.propagate = before


@pytest.fixture
def store(tmp_path: Path):
    engine = write_engine(f"sqlite:///{tmp_path / 'history.db'}")  # as mfgtx score opens it
    yield open_history(engine, "history.db")
    engine.dispose()
