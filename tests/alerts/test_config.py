"""The job file's ``alerts:``: read and checked once, each error naming its key."""

from __future__ import annotations

import pytest

from mfgtx._config import ConfigError
from mfgtx.jobfile.alerts import ALERT_ON, AlertsSection
from mfgtx.jobfile.config import build_job, load_config


def test_alerts_are_read_with_every_reason_by_default(tmp_path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text(
        "alerts:\n"
        "  to:\n"
        "    - json://alerts.plant.local:8080/mfgtx\n"
        "    - mailtos://lead:${SMTP_PASSWORD}@mail.plant.local?to=line3@plant.example\n"
        "  on: [flagged_lot, limit]\n"
    )
    config = load_config(job)
    assert config.alerts is not None and config.alerts.on == ("flagged_lot", "limit")
    # kept as written: the password is read from the environment only when sending
    assert config.alerts.to[1].startswith("mailtos://lead:${SMTP_PASSWORD}@")
    assert config.to_dict()["alerts"]["to"][1] == config.alerts.to[1]
    assert build_job({"alerts": {"to": "json://h/x"}}, "job.yaml").alerts == AlertsSection(
        to=("json://h/x",), on=ALERT_ON
    )
    assert build_job({}, "job.yaml").alerts is None


@pytest.mark.parametrize(
    ("alerts", "message"),
    [
        ({}, "job.yaml: alerts.to: required key is missing"),
        ({"to": ["alerts.plant.local/hook"]}, r"alerts: to\[0\]: expected an Apprise URL"),
        ({"to": ["json://h/${1X}"]}, r"alerts: to\[0\]: \$\{1X\} is not an environment variable"),
        (
            {"to": ["json://h"], "on": ["flagged"]},
            r"alerts.on\[0\]: must be one of \['flagged_lot'",
        ),
        ({"to": ["json://h"], "on": []}, "alerts: on: name at least one of"),
        ({"to": ["json://h"], "on": ["limit", "limit"]}, "alerts: on: each reason once"),
        ({"to": ["json://h"], "onn": ["limit"]}, "alerts.onn: unknown key; did you mean 'on'"),
    ],
)
def test_a_wrong_alerts_section_is_refused_naming_its_key(alerts, message) -> None:
    with pytest.raises(ConfigError, match=message):
        build_job({"alerts": alerts}, "job.yaml")


def test_a_url_is_not_echoed_in_the_error_it_may_hold_a_password() -> None:
    with pytest.raises(ConfigError) as e:
        build_job({"alerts": {"to": ["lead:hunter2@mail.plant.local"]}}, "job.yaml")
    assert "hunter2" not in str(e.value)
