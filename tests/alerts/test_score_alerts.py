"""``mfgtx score`` raises the alerts of its job file: limits crossed, once per lot."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest
import yaml

from mfgtx.jobs import load_config, score
from tests.alerts.conftest import free_port
from tests.cli.conftest import summary


def _job(quality_bundle, tmp_path: Path, to: list[str], **sections: object) -> Path:
    """The quality job scoring into ``tmp_path`` with alerts to ``to`` on limits crossed
    (``p_bad`` above -1: every lot crosses it; above 2: none)."""
    job, _ = quality_bundle
    data = yaml.safe_load(Path(job).read_text())
    data["score"] = {"output": {"path": str(tmp_path / "scores.parquet")}}
    data["limits"] = {"p_bad": {"alarm_above": -1}}
    data["alerts"] = {"to": to, "on": ["limit"]}
    data.update(sections)
    path = tmp_path / "line3.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _alerts(db: Path) -> pd.DataFrame:
    with sqlite3.connect(db) as conn:
        return pd.read_sql("SELECT * FROM history_alerts ORDER BY opened_at, subject", conn)


def _lots(out: Path) -> list[str]:
    """The subjects of the lots in the output: ``line L1, lot L1-0001`` (the scores carry the
    job's key column ``line``)."""
    rows = pd.read_parquet(out)
    pairs = zip(rows["line"], rows["lot"], strict=True)
    return sorted({f"line {line}, lot {lot}" for line, lot in pairs})


def test_a_limit_crossed_arrives_once_at_the_webhook_and_the_mailbox_over_two_runs(
    quality_bundle, tmp_path, receiver, mailbox
) -> None:
    job = _job(quality_bundle, tmp_path, [receiver.url(), mailbox.url()])
    first = score(load_config(job))
    lots = _lots(tmp_path / "scores.parquet")
    n = len(lots)
    assert n > 1 and first.alerts == f"{n} opened, {n} sent, 0 failed, 0 cleared; {n} open"
    assert f"; alerts: {first.alerts}" in first.message
    second = score(load_config(job))
    assert second.alerts == f"0 opened, 0 sent, 0 failed, 0 cleared; {n} open"

    assert len(receiver.posts) == 1 and len(mailbox.mails) == 1
    body = receiver.posts[0]["body"]
    assert body["title"] == f"mfgtx line3: {n} alerts"
    listed = [line for line in body["message"].splitlines() if line.startswith("- ")]
    assert sorted(line[2:].split(": p_bad ")[0] for line in listed) == lots
    assert all("is above the alarm limit -1 (window ending " in line for line in listed)
    sender, to, mail = mailbox.mails[0]
    assert (sender, to) == ("mfgtx@plant.example", ["line3-lead@plant.example"])
    assert f"Subject: mfgtx line3: {n} alerts" in mail and lots[0] in mail

    got = _alerts(tmp_path / "history.db")
    assert sorted(got["subject"]) == lots and set(got["reason"]) == {"limit:p_bad"}
    assert set(got["state"]) == {"open"} and set(got["delivery"]) == {"sent"}
    assert set(got["source"]) == {"score:line3"} and set(got["attempts"]) == {1}


def test_alerts_clear_when_the_lots_are_within_limits_and_open_anew(
    quality_bundle, tmp_path, receiver, capsys
) -> None:
    job = _job(quality_bundle, tmp_path, [receiver.url()])
    first = score(load_config(job))
    n = int(first.alerts.split(" opened")[0])
    within = score(load_config(job, ["limits.p_bad.alarm_above=2"]))
    assert within.alerts == f"0 opened, 0 sent, 0 failed, {n} cleared; 0 open"
    again = score(load_config(job))
    assert again.alerts == f"{n} opened, {n} sent, 0 failed, 0 cleared; {n} open"
    assert len(receiver.posts) == 2
    got = _alerts(tmp_path / "history.db")
    assert got["state"].value_counts().to_dict() == {"cleared": n, "open": n}
    by_lot = got.groupby("subject")["state"].apply(sorted)
    assert all(states == ["cleared", "open"] for states in by_lot)

    from mfgtx.cli import main

    assert main(["history", str(job), "--alerts", "--runs", str(2 * n)]) == 0
    listed = capsys.readouterr().out.strip().splitlines()[:-1]
    assert sum(" open line L" in x for x in listed) == n  # an open alert: no "until"
    assert sum(" cleared until 20" in x for x in listed) == n


def test_a_receiver_that_is_down_never_fails_the_job_and_the_next_run_delivers(
    quality_bundle, tmp_path, serve, capsys
) -> None:
    from mfgtx.cli import main

    port = free_port()
    job = _job(quality_bundle, tmp_path, [f"json://127.0.0.1:{port}/hook"])
    assert main(["score", str(job)]) == 0
    out, err = capsys.readouterr()
    said = summary(out)
    n = len(_lots(tmp_path / "scores.parquet"))
    assert said["alerts"].startswith(f"{n} opened, 0 sent, {n} failed, 0 cleared; {n} open ")
    assert "(delivery failed: to[0] (json): " in said["alerts"]
    assert (
        "WARNING mfgtx.alerts.notify: " in err
        and "not sent to every target, retried next run" in err
    )
    got = _alerts(tmp_path / "history.db")
    assert all(d.startswith("failed: to[0] (json): ") for d in got["delivery"])

    receiver = serve(port)
    assert main(["score", str(job)]) == 0
    said = summary(capsys.readouterr().out)
    assert said["alerts"] == f"0 opened, {n} sent, 0 failed, 0 cleared; {n} open"
    assert len(receiver.posts) == 1 and receiver.posts[0]["body"]["title"].endswith(f"{n} alerts")
    assert set(_alerts(tmp_path / "history.db")["attempts"]) == {2}

    assert main(["history", str(job), "--alerts"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert (summary(lines[-1])["alerts"], summary(lines[-1])["open"], len(lines)) == (n, n, n + 1)
    assert all(
        ", lot L" in x and " open line L" in x and ": limit:p_bad: p_bad " in x for x in lines[:-1]
    )
    assert all(x.endswith("[delivery sent, 2 attempt(s)]") for x in lines[:-1])


def test_alerts_need_the_history(quality_bundle, tmp_path) -> None:
    from mfgtx.jobs import ConfigError

    job = _job(quality_bundle, tmp_path, ["json://127.0.0.1:9/hook"])
    with pytest.raises(ConfigError, match=r"line3.yaml: alerts: need the history"):
        load_config(job, ["history=off"])


def test_a_history_that_cannot_be_written_leaves_alerts_unchecked_not_the_job_failed(
    quality_bundle, tmp_path, receiver
) -> None:
    with sqlite3.connect(tmp_path / "history.db") as db:
        db.execute("CREATE TABLE setpoints (tag TEXT, value REAL)")
    outcome = score(load_config(_job(quality_bundle, tmp_path, [receiver.url()])))
    assert outcome.alerts == "not checked: alerts need the history, which did not record this run"
    assert outcome.output_rows > 0 and receiver.posts == []
