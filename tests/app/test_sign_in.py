"""No page of the dashboard is reachable without sign-in when it serves the network."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from mfgtx.passwords import hash_password

from .conftest import MAIN
from .test_dashboard import PAGES, _texts

PASSWORD = "night shift line 3"


@pytest.fixture
def network_bind(monkeypatch):
    """The server option of a dashboard started with --server.address 0.0.0.0 (or none)."""
    import streamlit as st
    from streamlit import config

    monkeypatch.delenv("MFGTX_APP_NO_AUTH", raising=False)
    before = st.get_option("server.address")

    def bind(address: str) -> None:
        config.set_option("server.address", address)

    yield bind
    config.set_option("server.address", before)


def _page(page: str, *, reachable: bool = True, **secrets: object) -> AppTest:
    """The app after asking for ``page``; with ``reachable=False`` the page must not be
    among the pages the app serves (only the sign-in page is)."""
    at = AppTest.from_file(str(MAIN), default_timeout=180)
    for k, v in secrets.items():
        at.secrets[k] = v
    at.run()
    if reachable:
        return at.switch_page(page).run()
    with pytest.raises(ValueError, match=r"Known pages: \['Sign in'\]"):
        at.switch_page(page)
    return at


def _nothing_of_the_page_shown(at: AppTest) -> None:
    assert not at.exception, at.exception
    assert not at.dataframe and not at.get("plotly_chart") and not at.metric
    assert [t.value for t in at.title] == ["mfgtx dashboard"]  # the sign-in page's title only


@pytest.mark.parametrize("address", ["0.0.0.0", "", "10.1.2.3"])
@pytest.mark.parametrize("page", PAGES)
def test_every_page_refuses_an_open_network_bind(app_env, network_bind, address, page):
    network_bind(address)
    at = _page(page, reachable=False)
    _nothing_of_the_page_shown(at)
    assert any("no sign-in is configured" in t for t in _texts(at.error))


@pytest.mark.parametrize("page", PAGES)
def test_every_page_asks_for_the_password_first(app_env, network_bind, page):
    network_bind("0.0.0.0")
    at = _page(page, reachable=False, app_password_hash=hash_password(PASSWORD, iterations=1000))
    _nothing_of_the_page_shown(at)
    assert [t.label for t in at.text_input] == ["Password"]


def test_a_hashed_password_signs_in_and_out(app_env, network_bind):
    network_bind("0.0.0.0")
    at = _page(
        PAGES[1], reachable=False, app_password_hash=hash_password(PASSWORD, iterations=1000)
    )
    at.text_input[0].input(PASSWORD)
    at.button[0].click().run()
    at.switch_page(PAGES[1]).run()  # signed in: the page is served now
    assert not at.exception and at.metric  # the quality page's prediction
    at.sidebar.button[0].click().run()  # sign out
    _nothing_of_the_page_shown(at)


def test_wrong_passwords_are_throttled_per_client(app_env, network_bind):
    import streamlit as st

    st.cache_resource.clear()
    network_bind("0.0.0.0")
    at = _page(
        PAGES[0], reachable=False, app_password_hash=hash_password(PASSWORD, iterations=1000)
    )
    for _ in range(5):
        at.text_input[0].input("guess")
        at.button[0].click().run()
        assert "Wrong password." in _texts(at.error)
    at.run()
    assert any("Too many wrong passwords" in t for t in _texts(at.error))
    assert not at.text_input  # no form to try again on


def test_open_on_purpose_says_so(app_env, network_bind, monkeypatch):
    network_bind("0.0.0.0")
    monkeypatch.setenv("MFGTX_APP_NO_AUTH", "1")
    at = _page(PAGES[0])
    assert not at.exception and at.dataframe
    assert any("Open dashboard: no sign-in" in t for t in _texts(at.sidebar.warning))


def test_localhost_needs_no_sign_in(app_env, network_bind):
    network_bind("127.0.0.1")
    at = _page(PAGES[1])
    assert not at.exception and at.metric


def test_with_a_signing_key_the_overview_refuses_unsigned_bundles(app_env, monkeypatch):
    monkeypatch.setenv("MFGTX_BUNDLE_KEY", "k" * 40)
    at = _page(PAGES[0])
    assert not at.exception
    assert any(
        t.startswith("Refused bundle: sample_quality") and "is not signed" in t
        for t in _texts(at.warning)
    ), _texts(at.warning)
    assert not any("sample_quality" in set(df.value.get("bundle", [])) for df in at.dataframe)
