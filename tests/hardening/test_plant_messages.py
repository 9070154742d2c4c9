"""Messages a person reads in a terminal, in plant words: warnings as one line without Python's
source line, YAML errors as ``file:line:column: what is wrong`` in the words of someone
editing the file, duplicate keys refused."""

from __future__ import annotations

import warnings

import pytest

from mfgtx import cli
from mfgtx.cli import jobs as job_commands
from mfgtx.jobfile._schema import load_yaml
from mfgtx.jobs import ConfigError


def test_cli_shows_a_warning_as_one_plain_line(monkeypatch, capsys) -> None:
    def audit(args) -> int:
        warnings.warn(
            "fold 0: every window of 2 lot(s) was purged\n(L1, L2)", UserWarning, stacklevel=2
        )
        return 0

    monkeypatch.setattr(job_commands, "audit", audit)
    assert cli.main(["audit", "job.yaml"]) == 0
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if "warning" in x]
    assert lines == ["mfgtx audit: warning: fold 0: every window of 2 lot(s) was purged (L1, L2)"]
    assert "UserWarning" not in err and "warnings.warn(" not in err and ".py:" not in err


@pytest.mark.parametrize(
    "text, where, words",
    [
        ("data:\n  source: a: b\n", "job.yaml:2:12:", "a ':' where a value was expected"),
        ("data:\n  source: x\n bad: 1\n", "job.yaml:3:2:", "indentation does not line up"),
        ("data:\n\tsource: x\n", "job.yaml:2:1:", "a tab character: indent job files with"),
        ('data:\n  source: "x\n', "job.yaml:3:1:", "a quote opened on line 2 is never closed"),
        ("a: [1, 2\nb: 3\n", "job.yaml:2:2:", "a list opened with '[' on line 1 is not closed"),
        ("a: 1\nb:\n  c: 1\na: 2\n", "job.yaml:4:1:", "duplicate key 'a' (first on line 1)"),
    ],
)
def test_yaml_errors_name_the_place_in_plain_words(text, where, words) -> None:
    with pytest.raises(ConfigError) as err:
        load_yaml(text, file="job.yaml")
    message = str(err.value)
    assert message.startswith(f"{where} not valid YAML: "), message
    assert words in message, message
    for parser_word in ("<block", "scalar", "stream", "mapping values", "token"):
        assert parser_word not in message, message
