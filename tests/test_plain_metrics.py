"""Every metric has one plain name and meaning (:data:`mfgtx.metrics.PLAIN`), and the docs'
table is that table."""

from __future__ import annotations

from pathlib import Path

from mfgtx.metrics import HIGHER_IS_BETTER, PLAIN, plain_meanings, plain_name

DOCS = Path(__file__).resolve().parents[1] / "docs" / "evaluation.md"


def test_every_metric_has_a_plain_name_and_a_meaning() -> None:
    assert set(PLAIN) == set(HIGHER_IS_BETTER)
    names = [name for name, _ in PLAIN.values()]
    assert len(set(names)) == len(names)  # one name per metric
    for key, (name, meaning) in PLAIN.items():
        assert "_" not in name and key not in name.split() and meaning, key
    assert plain_name("log_loss") == "probability error" and plain_name("ece") == "calibration gap"
    assert plain_meanings(["ece", "not_a_metric"]) == (f"calibration gap: {PLAIN['ece'][1]}",)


def test_the_docs_table_is_the_code_table() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for key, (name, meaning) in PLAIN.items():
        assert f"| `{key}` | {name} | {meaning} |" in text, key
