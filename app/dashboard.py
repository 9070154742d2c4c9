"""mfgtx dashboard pages (started through ``app/main.py``; see README, "The dashboard").

``st.navigation`` is called on every run: before sign-in it holds only the sign-in page, so
no page of ``app/views/`` can be reached by its URL without signing in (see ``_auth.py``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the views import _common

import _auth

logging.basicConfig(level=logging.INFO)
# never a traceback in the browser, whatever config the server was started with
st.set_option("client.showErrorDetails", "none")
st.set_option("client.toolbarMode", "viewer")
st.set_page_config(page_title="mfgtx dashboard", layout="wide")

VIEWS = Path(__file__).resolve().parent / "views"

if _auth.signed_in():
    _auth.sign_out_button()
    pages = [
        st.Page(VIEWS / "plant.py", title="Plant", default=True),
        st.Page(VIEWS / "watch.py", title="Watch"),
        st.Page(VIEWS / "compare.py", title="Compare & promote"),
        st.Page(VIEWS / "overview.py", title="Overview"),
        st.Page(VIEWS / "quality.py", title="Quality & RUL"),
        st.Page(VIEWS / "forecast.py", title="Forecast"),
        st.Page(VIEWS / "defects.py", title="Defect inspection"),
        st.Page(VIEWS / "evaluation.py", title="Evaluation"),
        st.Page(VIEWS / "score.py", title="Score a file"),
    ]
    st.navigation(pages).run()
else:
    st.navigation(
        [st.Page(_auth.sign_in_page, title="Sign in", url_path="sign-in", default=True)],
        position="hidden",
    ).run()
