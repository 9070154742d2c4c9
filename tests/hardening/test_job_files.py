"""Job files that would exhaust the machine, or leave a broken bundle, are refused at once."""

from __future__ import annotations

import time

import pytest

from mfgtx.jobs import ConfigError, load_config

BOMB = """name: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
name: *h
"""


@pytest.mark.parametrize("where", ["name", "windows"])
def test_a_yaml_alias_bomb_is_refused_at_once(tmp_path, where) -> None:
    job = tmp_path / "bomb.yaml"
    job.write_text(BOMB.replace("name: *h", f"{where}: *h"))
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=r"bomb.yaml:2:\d+: .*alias \*a is not allowed"):
        load_config(job)
    assert time.perf_counter() - t0 < 5  # it took > 120 s and 6 GB before


def test_a_merge_key_is_an_alias_too(tmp_path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("base: &b {window: 30}\nwindows:\n  <<: *b\n")
    with pytest.raises(ConfigError, match="alias"):
        load_config(job)


def test_deep_nesting_and_huge_files_are_refused(tmp_path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError, match="nested more than 50 levels"):
        load_config(deep)
    huge = tmp_path / "huge.yaml"
    with huge.open("w") as f:
        f.write("name: x\n# " + "x" * 5_000_000 + "\n")
    with pytest.raises(ConfigError, match="more than a job file"):
        load_config(huge)


def test_yaml_errors_read_file_line_column(tmp_path) -> None:
    job = tmp_path / "job.yaml"
    job.write_text("windows:\n  window: 30\n  stride: [1,\n")
    with pytest.raises(ConfigError, match=r"^job.yaml:4:1: not valid YAML: "):
        load_config(job)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("1.5", "test_size must be a share of the lots between 0 and 1 .* or a whole number"),
        ("0", "test_size must be"),
        ("-0.2", "test_size must be"),
    ],
)
def test_split_sizes_are_shares_or_whole_counts(value, message) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, [f"split.test_size={value}"])


def test_split_sizes_that_leave_nothing_to_train_on_are_refused() -> None:
    with pytest.raises(ConfigError, match="must leave lots to train on"):
        load_config(None, ["split.test_size=0.6", "split.val_size=0.4"])
    assert load_config(None, ["split.test_size=3", "split.val_size=0.3"]).split.test_size == 3
