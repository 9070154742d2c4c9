"""``notify``: one alert per (subject, reason), sent once, cleared, opened again, retried."""

from __future__ import annotations

import logging

import pandas as pd
import pytest
import sqlalchemy as sa

from mfgtx.alerts import Finding, notify
from mfgtx.alerts.ledger import alerts
from mfgtx.history.tables import ALERTS
from mfgtx.jobfile.alerts import AlertsSection
from tests.alerts.conftest import free_port

RUL = Finding("machine M07", "limit:rul_cycles", "rul_cycles 22 is below the alarm limit 30")
BAD = Finding("line L3, lot L3-017", "flagged", "decided bad, p_bad 0.91")


def _alerts(store) -> pd.DataFrame:
    with store.transaction() as conn:
        rows = conn.execute(sa.select(ALERTS).order_by(ALERTS.c.opened_at)).mappings().all()
    return pd.DataFrame(rows, columns=list(ALERTS.c.keys()))


def _run(store, section, findings, checked=("machine M07", "line L3, lot L3-017"), **kw):
    return notify(store, section, findings, source="score:line3", checked_subjects=checked, **kw)


def test_an_alert_is_sent_once_while_it_stays_open(store, receiver) -> None:
    section = AlertsSection(to=(receiver.url(),))
    first = _run(store, section, [RUL, BAD])
    second = _run(store, section, [RUL, BAD])
    assert (first.opened, first.sent, first.failed, first.open) == (2, 2, 0, 2)
    assert (second.opened, second.sent, second.cleared, second.open) == (0, 0, 0, 2)
    assert len(receiver.posts) == 1
    body = receiver.posts[0]["body"]
    assert body["title"] == "mfgtx line3: 2 alerts" and body["type"] == "warning"
    assert "- machine M07: rul_cycles 22 is below the alarm limit 30" in body["message"]
    assert "- line L3, lot L3-017: decided bad, p_bad 0.91" in body["message"]
    got = _alerts(store)
    assert got["state"].tolist() == ["open"] * 2 and got["delivery"].tolist() == ["sent"] * 2
    assert got["attempts"].tolist() == [1, 1] and got["delivered_at"].notna().all()
    assert (got["last_seen_at"] >= got["opened_at"]).all()


def test_an_alert_clears_when_its_subject_is_checked_without_it_and_comes_back_new(
    store, receiver
) -> None:
    section = AlertsSection(to=(receiver.url(),))
    _run(store, section, [RUL, BAD])
    unchecked = _run(store, section, [BAD], checked=["line L3, lot L3-017"])
    assert unchecked.cleared == 0  # machine M07 was not scored: its alert stays open
    cleared = _run(store, section, [BAD])
    assert (cleared.cleared, cleared.open, cleared.sent) == (1, 1, 0)
    back = _run(store, section, [RUL, BAD])
    assert (back.opened, back.sent, back.open) == (1, 1, 2)
    got = _alerts(store)
    rul = got[got["reason"] == "limit:rul_cycles"]
    assert rul["state"].tolist() == ["cleared", "open"] and rul["cleared_at"].notna().tolist() == [
        True,
        False,
    ]
    assert len(receiver.posts) == 2 and receiver.posts[1]["body"]["title"].endswith(": 1 alert")
    assert "machine M07" in receiver.posts[1]["body"]["message"]


def test_another_source_neither_clears_nor_resends_the_alert(store, receiver) -> None:
    section = AlertsSection(to=(receiver.url(),))
    _run(store, section, [RUL])
    watch = notify(store, section, [], source="watch:line3", checked_subjects=["machine M07"])
    assert (watch.cleared, watch.open) == (0, 0)
    assert _alerts(store)["state"].tolist() == ["open"]


def test_alerts_on_leaves_out_the_other_reasons(store, receiver) -> None:
    section = AlertsSection(to=(receiver.url(),), on=("limit",))
    outcome = _run(store, section, [RUL, BAD])
    assert outcome.opened == 1 and _alerts(store)["reason"].tolist() == ["limit:rul_cycles"]


def test_a_receiver_that_is_down_is_recorded_and_the_next_run_delivers(
    store, serve, caplog
) -> None:
    port = free_port()
    section = AlertsSection(to=(f"json://127.0.0.1:{port}/hook",))
    with caplog.at_level(logging.WARNING, logger="mfgtx.alerts"):
        down = _run(store, section, [RUL])
    assert (down.opened, down.sent, down.failed) == (1, 0, 1)
    assert down.why is not None and down.why.startswith("to[0] (json): ")
    assert "not sent to every target, retried next run: to[0] (json): " in caplog.text
    got = _alerts(store)
    assert got["delivery"][0].startswith("failed: to[0] (json): ")
    assert got["attempts"].tolist() == [1] and got["delivered_at"].isna().all()

    receiver = serve(port)
    up = _run(store, section, [RUL])
    assert (up.opened, up.sent, up.failed) == (0, 1, 0)
    assert len(receiver.posts) == 1 and "(open since " in receiver.posts[0]["body"]["message"]
    got = _alerts(store)
    assert got["delivery"].tolist() == ["sent"] and got["attempts"].tolist() == [2]
    _run(store, section, [RUL])
    assert len(receiver.posts) == 1


def test_each_target_gets_each_alert_once_when_another_target_was_down(
    store, receiver, serve
) -> None:
    port = free_port()
    section = AlertsSection(to=(receiver.url(), f"json://127.0.0.1:{port}/late"))
    first = _run(store, section, [RUL])
    assert (first.sent, first.failed) == (0, 1) and first.why is not None
    assert first.why.startswith("to[1] (json): ") and "to[0]" not in first.why
    assert len(receiver.posts) == 1
    assert _alerts(store)["delivery"][0].startswith("failed: to[1] (json): ")
    late = serve(port)
    second = _run(store, section, [RUL, BAD])  # the retry of RUL, and BAD new
    assert (second.opened, second.sent, second.failed) == (1, 2, 0)
    assert [p["body"]["title"] for p in receiver.posts] == ["mfgtx line3: 1 alert"] * 2
    assert "line L3, lot L3-017" in receiver.posts[1]["body"]["message"]
    assert "machine M07" not in receiver.posts[1]["body"]["message"]  # it had it already
    (post,) = late.posts
    assert post["body"]["title"] == "mfgtx line3: 2 alerts"
    assert _alerts(store)["delivery"].tolist() == ["sent", "sent"]


def test_secrets_from_the_environment_reach_the_receiver_and_nothing_else(
    store, receiver, monkeypatch, caplog
) -> None:
    password, token = "s3cret-Pa55word", "tok-4f9e1c2b7a"
    monkeypatch.setenv("MFGTX_TEST_HOOK_PASSWORD", password)
    monkeypatch.setenv("MFGTX_TEST_HOOK_TOKEN", token)
    down = f"json://plant:${{MFGTX_TEST_HOOK_PASSWORD}}@127.0.0.1:{free_port()}/${{MFGTX_TEST_HOOK_TOKEN}}"
    up = f"json://plant:${{MFGTX_TEST_HOOK_PASSWORD}}@127.0.0.1:{receiver.port}/hook/${{MFGTX_TEST_HOOK_TOKEN}}"
    section = AlertsSection(to=(up, down))
    with caplog.at_level(logging.DEBUG):
        outcome = _run(store, section, [RUL])
    import base64

    (post,) = receiver.posts
    assert post["path"] == f"/hook/{token}"  # the variables were read
    assert post["headers"]["Authorization"] == (
        "Basic " + base64.b64encode(f"plant:{password}".encode()).decode()
    )
    assert outcome.failed == 1 and "****" in caplog.text  # something was masked
    stored = _alerts(store).to_json()
    for secret in (password, token):
        assert secret not in caplog.text
        assert secret not in str(outcome)
        assert secret not in stored
    assert "MFGTX_TEST_HOOK_PASSWORD" not in stored  # delivery names a target, not its URL


def test_a_variable_not_set_is_a_failed_delivery_naming_it(store, monkeypatch) -> None:
    monkeypatch.delenv("MFGTX_TEST_UNSET", raising=False)
    section = AlertsSection(to=("json://127.0.0.1:9/${MFGTX_TEST_UNSET}",))
    outcome = _run(store, section, [RUL])
    assert outcome.why == (
        "to[0] (json): ${MFGTX_TEST_UNSET} is not set in this process's environment"
    )


def test_no_target_records_the_alerts_pending_and_a_target_named_later_takes_them(
    store, receiver
) -> None:
    """``to: []`` (the demo): alerts are recorded for the dashboard and sent to nobody; once a
    target is named, the next run sends what is still open."""
    first = _run(store, AlertsSection(to=()), [RUL, BAD])
    assert (first.opened, first.sent, first.failed, first.open) == (2, 0, 0, 2)
    assert set(alerts(store)["delivery"]) == {"pending"} and not receiver.posts
    later = _run(store, AlertsSection(to=(receiver.url(),)), [RUL, BAD])
    assert (later.opened, later.sent) == (0, 2) and len(receiver.posts) == 1


def test_a_finding_names_a_known_reason() -> None:
    with pytest.raises(ValueError, match="reason 'drifted': expected one of"):
        Finding("sensor x", "drifted", "moved")
    with pytest.raises(
        ValueError, match="only limit, drift, dead, constant, missing, range name a column"
    ):
        Finding("machine M07", "limit", "below")
    with pytest.raises(ValueError, match="only limit, drift"):
        Finding("model q", "error:p_bad", "doubled")
    assert Finding("model q", "range:temperature_c", "outside").reason == "range:temperature_c"


def test_postgresql_history_sends_once_clears_and_retries(receiver, serve, pg_schema) -> None:
    from mfgtx.history import open_history

    store = open_history(pg_schema, "pg")
    port = free_port()
    section = AlertsSection(to=(receiver.url(), f"json://127.0.0.1:{port}/hook"))
    first = _run(store, section, [RUL, BAD])
    assert (first.opened, first.failed, first.open) == (2, 2, 2)
    serve(port)
    again = _run(store, section, [RUL])
    assert (again.opened, again.sent, again.cleared, again.open) == (0, 1, 1, 1)
    got = _alerts(store)
    by_reason = got.set_index("reason")
    assert by_reason.loc["limit:rul_cycles", ["state", "delivery"]].tolist() == ["open", "sent"]
    assert by_reason.loc["flagged", "state"] == "cleared"  # cleared before it was sent
    assert by_reason.loc["flagged", "delivery"].startswith("failed: to[1] (json): ")
    assert len(receiver.posts) == 1  # the first target took it the first time


def test_an_smtp_password_from_the_environment_is_masked_when_the_login_fails(
    store, mailbox, monkeypatch, caplog
) -> None:
    password = "Sm7p-hunter2-pass"
    monkeypatch.setenv("MFGTX_TEST_SMTP_PASSWORD", password)
    url = mailbox.url().replace("mailto://", "mailto://lead:${MFGTX_TEST_SMTP_PASSWORD}@")
    section = AlertsSection(to=(url,))
    with caplog.at_level(logging.DEBUG):
        outcome = _run(store, section, [RUL])  # the local server refuses every login
    assert set(mailbox.logins) == {("lead", password)}  # the variable was read
    assert outcome.failed == 1 and mailbox.mails == []
    assert outcome.why is not None and outcome.why.startswith("to[0] (mailto): ")
    assert password not in caplog.text and password not in str(outcome)
    assert password not in _alerts(store).to_json()


def test_resolved_tells_once_when_a_sent_alert_clears(store, receiver) -> None:
    section = AlertsSection(to=(receiver.url(),), resolved=True)
    _run(store, section, [RUL, BAD])
    cleared = _run(store, section, [BAD])
    assert cleared.cleared == 1 and cleared.sent == 0
    _run(store, section, [BAD])
    assert [p["body"]["title"] for p in receiver.posts] == [
        "mfgtx line3: 2 alerts",
        "mfgtx line3: 1 resolved",
    ]
    assert receiver.posts[1]["body"]["message"].startswith(
        "- machine M07: limit:rul_cycles cleared (open since "
    )


def test_apprise_is_imported_only_to_send() -> None:
    import subprocess
    import sys

    code = (
        "import sys, mfgtx.jobs, mfgtx.alerts, mfgtx.cli.history; print('apprise' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
