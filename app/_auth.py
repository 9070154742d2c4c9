"""Who may see the dashboard: OIDC, a shared password, or nobody until sign-in is set up.

Sign-in comes from the Streamlit secrets (``app/.streamlit/secrets.toml`` beside the app, or
``~/.streamlit/secrets.toml``):

- ``[auth]`` (OIDC through ``st.login``; needs ``streamlit[auth]``), or
- ``app_password_hash`` (from ``mfgtx hash-password``), or ``app_password`` in plain text
  (works, with a warning in the server log).

Without either, the dashboard serves only a server bound to localhost; on any other address,
the empty one (all interfaces) included, every page shows only how to configure sign-in,
unless ``MFGTX_APP_NO_AUTH=1`` runs it open on purpose. Wrong passwords are counted per client
address: after :data:`MAX_FAILURES` within :data:`WINDOW_S` seconds that address must wait.
Every run records whether its session is signed in (``_uploads.record_session``): only those
sessions may upload files, and a session that signs out loses its uploads.
"""

from __future__ import annotations

import hmac
import logging
import os
import time
from dataclasses import dataclass, field

import _uploads
import streamlit as st

from mfgtx.passwords import verify_password

log = logging.getLogger("mfgtx.app.auth")

LOCAL = {"localhost", "127.0.0.1", "::1"}
MAX_FAILURES = 5
WINDOW_S = 300.0


def _secret(key: str) -> object:
    try:
        return st.secrets.get(key)
    except (FileNotFoundError, KeyError, AttributeError):  # no secrets file at all
        return None


def bound_locally() -> bool:
    """True only when the server listens on a loopback address (the empty address, which
    Streamlit binds to every interface, is not local)."""
    return (st.get_option("server.address") or "") in LOCAL


@dataclass
class _Failures:
    times: dict[str, list[float]] = field(default_factory=dict)

    def recent(self, who: str) -> list[float]:
        now = time.monotonic()
        kept = [t for t in self.times.get(who, []) if now - t < WINDOW_S]
        self.times[who] = kept
        return kept


@st.cache_resource
def _failures() -> _Failures:
    return _Failures()  # one per server process, shared by every session


def _client() -> str:
    try:
        ip = st.context.ip_address
    except Exception:  # outside a browser session
        return "unknown"
    return ip if isinstance(ip, str) and ip else "unknown"


def _password_ok(given: str) -> bool:
    stored = _secret("app_password_hash")
    if stored:
        return verify_password(given, str(stored))
    plain = _secret("app_password")
    log.warning("app_password is stored in plain text; use app_password_hash (mfgtx hash-password)")
    return hmac.compare_digest(given.encode(), str(plain).encode())


def mode() -> str:
    """``oidc``, ``password``, ``open`` (local, or open on purpose) or ``refused``."""
    if _secret("auth") is not None:
        return "oidc"
    if _secret("app_password_hash") or _secret("app_password"):
        return "password"
    if bound_locally() or os.environ.get("MFGTX_APP_NO_AUTH") == "1":
        return "open"
    return "refused"


def signed_in() -> bool:
    """Whether this session may see the pages (never draws anything); recorded for the
    upload guard, which takes files only from signed-in sessions."""
    how = mode()
    if how == "oidc":
        ok = bool(st.user.is_logged_in)
    elif how == "password":
        ok = bool(st.session_state.get("mfgtx_signed_in"))
    else:
        ok = how == "open"
    _uploads.record_session(ok)
    return ok


def sign_in_page() -> None:
    """The only page before sign-in: the sign-in form, or how to configure sign-in."""
    st.title("mfgtx dashboard")
    how = mode()
    if how == "oidc":
        st.button("Sign in", on_click=st.login)
        return
    if how == "refused":
        address = st.get_option("server.address") or "all interfaces"
        st.error(
            f"This dashboard listens on {address}, not only on this computer, and no sign-in "
            "is configured. Set app_password_hash (from `mfgtx hash-password`) or an [auth] "
            "section (OIDC) in app/.streamlit/secrets.toml, or bind it to 127.0.0.1. To run "
            "it open on purpose, set MFGTX_APP_NO_AUTH=1."
        )
        log.warning("refused to serve %s without sign-in (bound to %s)", _client(), address)
        return
    who = _client()
    failures = _failures()
    if len(failures.recent(who)) >= MAX_FAILURES:
        st.error(f"Too many wrong passwords from {who}; try again in a few minutes.")
        return
    with st.form("sign_in"):
        given = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Sign in")
    if not (submitted and given):
        return
    if _password_ok(given):
        st.session_state["mfgtx_signed_in"] = True
        log.info("signed in: %s", who)
        st.rerun()
    failures.times.setdefault(who, []).append(time.monotonic())
    log.warning("wrong dashboard password from %s", who)
    st.error("Wrong password.")


def sign_out_button() -> None:
    """A sign-out button in the sidebar, when there is someone to sign out."""
    how = mode()
    if how == "oidc":
        st.sidebar.button("Sign out", on_click=st.logout)
    elif how == "password":

        def sign_out() -> None:
            st.session_state.pop("mfgtx_signed_in", None)

        st.sidebar.button("Sign out", on_click=sign_out)
    elif not bound_locally():
        st.sidebar.warning("Open dashboard: no sign-in (MFGTX_APP_NO_AUTH=1).")
