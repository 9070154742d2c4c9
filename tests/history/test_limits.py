"""The job file's ``limits:``: read and checked once, breaches named in plant words."""

import pytest

from mfgtx._config import ConfigError
from mfgtx.jobfile.config import build_job
from mfgtx.jobfile.limits import Limit


def test_limits_are_read_by_column() -> None:
    job = build_job(
        {"limits": {"rul_cycles": {"alarm_below": 30}, "Massetemp_°C": {"spec": [230, 240]}}},
        "job.yaml",
    )
    assert job.limits["rul_cycles"] == Limit(alarm_below=30.0)
    assert job.limits["Massetemp_°C"].lines() == {"spec low": 230.0, "spec high": 240.0}
    assert build_job({}, "job.yaml").limits == {}


@pytest.mark.parametrize(
    ("limit", "message"),
    [
        ({}, "limits.p_bad: name at least one of"),
        ({"spec": [240, 230]}, "limits.p_bad: spec: low 240 is not below high 230"),
        ({"spec": [1]}, r"limits.p_bad: spec: expected \[low, high\]"),
        ({"alarm_below": 5, "alarm_above": 2}, "alarm_below 5 is not below alarm_above 2"),
        ({"alarm_belw": 5}, "limits.p_bad.alarm_belw: unknown key; did you mean 'alarm_below'"),
    ],
)
def test_a_wrong_limit_is_refused_naming_its_key(limit, message) -> None:
    with pytest.raises(ConfigError, match=message):
        build_job({"limits": {"p_bad": limit}}, "job.yaml")


def test_a_breach_is_said_in_plant_words_and_a_value_within_is_quiet() -> None:
    rul = Limit(alarm_below=30)
    assert rul.breach(22.5) == "22.5 is below the alarm limit 30"
    assert rul.breach(30) is None and rul.breach(float("nan")) is None
    spec = Limit(spec=(230, 240))
    assert spec.breach(241) == "241 is outside the spec 230 to 240"
    assert spec.breach(235) is None
    assert Limit(alarm_above=0.8).breach(0.9) == "0.9 is above the alarm limit 0.8"
