"""mfgtx dashboard: ``streamlit run app/main.py`` (see README, "The dashboard").

Sign-in: OIDC through ``st.login`` when ``[auth]`` is in the Streamlit secrets, or a shared
password (``app_password`` in the secrets). Without either the app only serves a server bound
to localhost; on any other bind address it asks for sign-in to be configured.
"""

from __future__ import annotations

import hmac
import logging
import os
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # pages import _common

LOCAL = {"localhost", "127.0.0.1", "::1"}
logging.basicConfig(level=logging.INFO)


def _secret(key: str) -> object:
    try:
        return st.secrets.get(key)
    except (FileNotFoundError, KeyError, AttributeError):  # no secrets file at all
        return None


def signed_in() -> bool:
    """True when the visitor may see the app; otherwise draws the sign-in and returns False."""
    if _secret("auth") is not None:
        if st.user.is_logged_in:
            st.sidebar.button("Sign out", on_click=st.logout)
            return True
        st.title("mfgtx dashboard")
        st.button("Sign in", on_click=st.login)
        return False
    password = _secret("app_password")
    if password:
        if st.session_state.get("signed_in"):
            return True
        st.title("mfgtx dashboard")
        given = st.text_input("Password", type="password")
        if given and hmac.compare_digest(given.encode(), str(password).encode()):
            st.session_state["signed_in"] = True
            st.rerun()
        elif given:
            st.error("Wrong password.")
        return False
    address = st.get_option("server.address") or "localhost"
    if address in LOCAL or os.environ.get("MFGTX_APP_NO_AUTH") == "1":
        return True
    st.error(
        f"The server listens on {address}, not only on localhost, and no sign-in is "
        "configured: set [auth] (OIDC) or app_password in .streamlit/secrets.toml, or set "
        "MFGTX_APP_NO_AUTH=1 to run open on purpose."
    )
    return False


st.set_page_config(page_title="mfgtx dashboard", layout="wide")
if signed_in():
    nav = st.navigation(
        [
            st.Page("pages/overview.py", title="Overview", default=True),
            st.Page("pages/quality.py", title="Quality & RUL"),
            st.Page("pages/forecast.py", title="Forecast"),
            st.Page("pages/defects.py", title="Defect inspection"),
            st.Page("pages/evaluation.py", title="Evaluation"),
        ]
    )
    nav.run()
