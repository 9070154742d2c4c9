"""Uploads on a running dashboard: signed-in sessions only, bounded per session, freed at the end.

Real HTTP and a real websocket against ``streamlit run app/main.py``: a small client below
speaks Streamlit's protocol (runs the page script, signs in through the password form) and
uploads the way ``st.file_uploader`` does (``PUT /_stcore/upload_file/<session>/<file>``).
One password-protected server serves the module, with a 1 MB per-session limit.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlparse

import pytest

from .conftest import ROOT, SAMPLE
from .test_dashboard_e2e import _free_port, _wait_healthy

PASSWORD = "night shift line 3"
LIMIT_MB = 1
MB = 2**20


# ------------------------------------------------------------------ a protocol client


class Browser:
    """One browser tab: a websocket session of the dashboard, as the frontend opens it."""

    def __init__(self, url: str, *, until: str = "end") -> None:
        from websockets.sync.client import connect

        self.url = url
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=10) as r:
            cookie = r.headers.get("set-cookie") or ""
        self.xsrf = re.search(r"_streamlit_xsrf=([^;]+)", cookie).group(1)
        self._open = contextlib.ExitStack()
        self.ws = self._open.enter_context(
            connect(
                f"ws://{urlparse(url).netloc}/_stcore/stream",
                subprotocols=["streamlit", self.xsrf],
                additional_headers={"Origin": url, "Cookie": f"_streamlit_xsrf={self.xsrf}"},
                max_size=None,
                open_timeout=10,
            )
        )
        self.session_id = ""
        self.widgets: dict[str, str] = {}  # label -> widget id, of the runs so far
        self.run(until=until)

    def run(self, states: tuple[tuple[str, str, object], ...] = (), *, until: str = "end") -> None:
        """Run the page script with ``(label, field, value)`` widget states until it ends,
        until it starts (``"start"``: the session is named), or until the widget labelled
        ``until`` is drawn. Messages of a run still going when this one was asked for are
        read past."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = ""
        for label, kind, value in states:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = self.widgets[label]
            setattr(state, kind, value)
        self.ws.send(msg.SerializeToString())
        deadline, started = time.monotonic() + 120, False
        while True:
            fm = ForwardMsg()
            fm.ParseFromString(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            kind = fm.WhichOneof("type")
            if kind == "new_session":  # every run starts with one
                self.session_id = fm.new_session.initialize.session_id
                started = True
                if until == "start":
                    return
            elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                widget = element.WhichOneof("type")
                if widget in ("text_input", "button"):
                    proto = getattr(element, widget)
                    self.widgets[proto.label] = proto.id
                    if started and proto.label == until:
                        return
            elif kind == "script_finished" and started and fm.script_finished == 0:
                if until == "end":  # not a run that ended for st.rerun
                    return

    def sign_in(self) -> Browser:
        """Sign in through the password form; back once the page is signed in (the sidebar
        has its sign-out button), while the page itself may still be drawing."""
        sign_in = (("Password", "string_value", PASSWORD), ("Sign in", "trigger_value", True))
        self.run(sign_in, until="Sign out")
        return self

    def sign_out(self) -> None:
        self.run((("Sign out", "trigger_value", True),))

    def close(self) -> None:
        self._open.close()

    def _headers(self, boundary: str) -> dict[str, str]:
        return {
            "Content-Type": f"multipart/form-data; boundary={boundary}",
            "X-Xsrftoken": self.xsrf,
            "Cookie": f"_streamlit_xsrf={self.xsrf}",
        }

    def upload(
        self, data: bytes, file_id: str = "f1", *, method: str = "PUT", path: str | None = None
    ) -> tuple[int, str]:
        """A file as ``st.file_uploader`` sends it; (status, response text)."""
        boundary = uuid.uuid4().hex
        body = _part(boundary) + data + f"\r\n--{boundary}--\r\n".encode()
        conn = http.client.HTTPConnection(urlparse(self.url).netloc, timeout=30)
        try:
            conn.request(
                method,
                path or f"/_stcore/upload_file/{self.session_id}/{file_id}",
                body=body,
                headers=self._headers(boundary),
            )
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    def send_raw(self, file_id: str, header: str, chunks: list[bytes] = ()) -> str:
        """A PUT whose body is ``chunks`` (maybe fewer bytes than its header announces); the
        response as text, read without waiting for the body to be complete."""
        host, port = urlparse(self.url).netloc.split(":")
        head = (
            f"PUT /_stcore/upload_file/{self.session_id}/{file_id} HTTP/1.1\r\nHost: {host}\r\n"
            + "".join(f"{k}: {v}\r\n" for k, v in self._headers("bnd").items())
            + f"{header}\r\n\r\n"
        )
        got = b""
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(head.encode())
            with contextlib.suppress(OSError):  # the server may close once it has answered
                for chunk in chunks:
                    s.sendall(chunk)
            with contextlib.suppress(OSError):
                while data := s.recv(65536):
                    got += data
        return got.decode(errors="replace")


def _part(boundary: str) -> bytes:
    return (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; '
        f'filename="line3.csv"\r\nContent-Type: text/csv\r\n\r\n'
    ).encode()


def _chunked(chunks: list[bytes]) -> list[bytes]:
    """Chunked transfer coding of ``chunks``, without the last chunk: the body never ends."""
    return [b"%x\r\n%s\r\n" % (len(c), c) for c in chunks]


def held_in_server(url: str) -> int:
    """Bytes the server's upload manager holds, all sessions (``/_stcore/metrics``; Streamlit
    recomputes that family at most every 5 s)."""
    with urllib.request.urlopen(f"{url}/_stcore/metrics", timeout=10) as r:
        text = r.read().decode()
    return sum(
        int(float(line.rsplit(" ", 1)[1]))
        for line in text.splitlines()
        if "UploadedFileManager" in line and not line.startswith("#")
    )


def wait_held(url: str, check, limit: float = 15.0) -> int:
    deadline = time.monotonic() + limit
    while not check(held := held_in_server(url)):
        if time.monotonic() > deadline:
            pytest.fail(f"the server still holds {held} bytes of uploads after {limit:.0f} s")
        time.sleep(0.5)
    return held


# --------------------------------------------------------------------------- servers


@contextlib.contextmanager
def dashboard(tmp: Path, *flags: str, env: dict[str, str] | None = None):
    """``streamlit run app/main.py`` on a free localhost port over an empty models folder."""
    port = _free_port()
    (tmp / "models").mkdir(exist_ok=True)
    full_env = {
        **os.environ,
        "MFGTX_MODELS_DIR": str(tmp / "models"),
        "MFGTX_DATA_DIR": str(SAMPLE),
        "MFGTX_APP_SESSION_UPLOAD_MB": str(LIMIT_MB),
        "OMP_NUM_THREADS": "1",
        **(env or {}),
    }
    for name in ("MFGTX_APP_NO_AUTH", "MFGTX_APP_CONFIG"):
        full_env.pop(name, None)
    log = tmp / "streamlit.log"
    cmd = [sys.executable, "-m", "streamlit", "run", "app/main.py", "--server.port", str(port),
           "--server.address", "127.0.0.1", "--server.headless", "true", *flags]  # fmt: skip
    with log.open("w") as sink:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=full_env, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc, log)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A dashboard with a password, bound to localhost, 1 MB of uploads per session."""
    from mfgtx.passwords import hash_password

    tmp = tmp_path_factory.mktemp("uploads")
    secrets = tmp / "secrets.toml"
    secrets.write_text(f'app_password_hash = "{hash_password(PASSWORD, iterations=1000)}"\n')
    with dashboard(tmp, "--secrets.files", str(secrets)) as url:
        yield url


@pytest.fixture
def browsers(server):
    """Opens browser tabs on the server; all closed at the end of the test."""
    opened: list[Browser] = []

    def open_tab() -> Browser:
        opened.append(Browser(server))
        return opened[-1]

    yield open_tab
    for tab in opened:
        tab.close()


# ----------------------------------------------------------------------------- tests


def test_a_session_that_has_not_signed_in_cannot_upload(server, browsers):
    tab = browsers()
    assert tab.widgets.get("Password"), "the sign-in form was not shown"
    refused = "Upload refused: this dashboard session has not signed in"
    status, text = tab.upload(b"lot,temperature_c\nL1,20.5\n")
    assert (status, refused) == (403, text[: len(refused)])
    sid = tab.session_id
    others = [  # every method and path under the route is refused as well
        ("DELETE", f"/_stcore/upload_file/{sid}/f1"),
        ("PUT", f"/_stcore/upload_file/{sid}/f1/"),
        ("POST", f"/_stcore/upload_file/{sid}/f1"),
        ("PUT", f"/_stcore/upload_file/{sid}"),
        ("PUT", "/_stcore/upload_file/"),
    ]
    for method, path in others:
        assert tab.upload(b"x", method=method, path=path)[0] == 403, (method, path)
    # refused before the body is read: the answer comes with none of the 3 MB announced
    answer = tab.send_raw("f2", "Content-Length: 3000000")
    assert answer.startswith("HTTP/1.1 403"), answer[:200]
    assert "x-frame-options: DENY" in answer  # the security headers cover refusals too
    # the same session, signed in, uploads
    tab.sign_in()
    assert tab.upload(b"lot,temperature_c\nL1,20.5\n") == (204, "")


def test_uploads_are_bounded_per_session(server, browsers):
    tab = browsers().sign_in()
    half = b"x" * (MB // 2)
    assert tab.upload(half, "f1")[0] == 204
    assert tab.upload(half, "f1")[0] == 204  # the same file again replaces it: 0.5 MB held
    assert tab.upload(b"y" * (MB // 2 - 1000), "f2")[0] == 204  # 1 MB less 1000 bytes held
    status, text = tab.upload(b"z" * 2000, "f3")
    assert status == 413, (status, text)
    assert "past its limit of 1 MB" in text and "MFGTX_APP_SESSION_UPLOAD_MB" in text, text
    # an announced size over the limit is refused before the body is read
    answer = tab.send_raw("f3", "Content-Length: 2000000")
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    # a body without Content-Length is refused while it streams, long before it ends
    assert tab.upload(b"", "f2", method="DELETE")[0] == 204  # 0.5 MB held again
    body = _chunked([_part("bnd")] + [b"w" * 100_000] * 12)
    answer = tab.send_raw("f4", "Transfer-Encoding: chunked", body)
    assert answer.startswith("HTTP/1.1 413"), answer[:200]
    assert tab.upload(b"v" * 400_000, "f5")[0] == 204  # what is left still fits
    # the limit is per session: another signed-in tab has its own megabyte
    assert browsers().sign_in().upload(b"u" * 1_000_000, "f1")[0] == 204


@pytest.mark.slow
def test_uploads_are_freed_when_the_session_ends_or_signs_out(server, browsers):
    leaving, signing_out = browsers().sign_in(), browsers().sign_in()
    assert leaving.upload(b"a" * 600_000, "f1")[0] == 204
    assert signing_out.upload(b"b" * 300_000, "f1")[0] == 204
    wait_held(server, lambda held: held == 900_000)
    leaving.close()  # the browser left
    signing_out.sign_out()
    assert signing_out.upload(b"c" * 10, "f2")[0] == 403  # signed out: no more uploads
    wait_held(server, lambda held: held == 0)


def test_an_open_dashboard_takes_bounded_uploads_from_every_session(tmp_path):
    with dashboard(tmp_path) as url:  # localhost, no sign-in configured: open
        tab = Browser(url, until="start")  # the page script has started: a session
        try:
            assert tab.upload(b"lot,temperature_c\nL1,20.5\n") == (204, "")
            assert tab.upload(b"x" * (MB + 1), "f2")[0] == 413
        finally:
            tab.close()


@pytest.mark.parametrize("text", ["abc", "0", "-5", "nan", "inf"])
def test_a_bad_session_limit_is_named(monkeypatch, text):
    monkeypatch.syspath_prepend(str(ROOT / "app"))
    from _uploads import UploadLimit

    monkeypatch.setenv("MFGTX_APP_SESSION_UPLOAD_MB", text)
    with pytest.raises(ValueError, match=rf"MFGTX_APP_SESSION_UPLOAD_MB .*above 0, got '{text}'"):
        UploadLimit.from_settings()


def test_the_session_limit_comes_from_the_environment_then_the_app_config(monkeypatch, tmp_path):
    monkeypatch.syspath_prepend(str(ROOT / "app"))
    from _uploads import DEFAULT_SESSION_MB, UploadLimit

    config = tmp_path / "mfgtx-app.toml"
    config.write_text("session_upload_mb = 75\n")
    monkeypatch.setenv("MFGTX_APP_CONFIG", str(config))
    monkeypatch.delenv("MFGTX_APP_SESSION_UPLOAD_MB", raising=False)
    assert UploadLimit.from_settings() == UploadLimit(75)
    monkeypatch.setenv("MFGTX_APP_SESSION_UPLOAD_MB", "2.5")
    assert UploadLimit.from_settings().session_bytes == int(2.5 * MB)
    monkeypatch.delenv("MFGTX_APP_SESSION_UPLOAD_MB")
    config.write_text('session_upload_mb = "lots"\n')
    with pytest.raises(ValueError, match=r"mfgtx-app.toml: session_upload_mb .* got 'lots'"):
        UploadLimit.from_settings()
    monkeypatch.setenv("MFGTX_APP_CONFIG", str(tmp_path / "none.toml"))
    assert UploadLimit.from_settings().session_mb == DEFAULT_SESSION_MB


def test_a_bad_session_limit_stops_the_dashboard_with_one_line():
    env = {**os.environ, "MFGTX_APP_SESSION_UPLOAD_MB": "lots"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "app" / "main.py")],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "mfgtx dashboard: MFGTX_APP_SESSION_UPLOAD_MB must be a number of megabytes above 0, "
        "got 'lots'"
    ), done.stderr
