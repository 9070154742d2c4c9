"""The verdict ``mfgtx evaluate`` prints (its Markdown and its JSON summary line) is the one
standing of :mod:`mfgtx.baselines.standing`, the same the report and the dashboard show."""

from __future__ import annotations

import json
import sys
from types import SimpleNamespace

from mfgtx.baselines import Difference, EvaluationReport, ReportRow
from mfgtx.baselines import standing as rule


def _report() -> EvaluationReport:
    rows = (
        ReportRow("SensorEncoder", "model", {"rmse": 11.9}),
        ReportRow("Ridge", "baseline", {"rmse": 12.0}),
    )
    d = Difference("SensorEncoder", "Ridge", "rmse", -0.1, -0.5, 0.4, 0.95, n_groups=9)
    return EvaluationReport("regression", 40, rows, "rmse", differences=(d,))


def _evaluate(monkeypatch, tmp_path, capsys) -> tuple[str, dict]:
    import mfgtx.cli.jobs as cli_jobs
    import mfgtx.jobs.evaluate  # noqa: F401 - the module, patched below
    from mfgtx.cli import main

    ev = sys.modules["mfgtx.jobs.evaluate"]
    predictor = SimpleNamespace(bundle_id="b" * 64, task="regression")
    monkeypatch.setattr(cli_jobs, "job_config", lambda args: SimpleNamespace())
    monkeypatch.setattr(
        ev, "evaluate", lambda config: (ev._summary(predictor, _report(), True, {}), _report())
    )
    job = tmp_path / "job.yaml"
    job.write_text("bundle: b\n")
    assert main(["evaluate", str(job)]) == 0
    out = capsys.readouterr().out
    return out, json.loads(out.strip().splitlines()[-1])


def test_evaluate_prints_the_standing_once_in_words_and_as_a_level(
    monkeypatch, tmp_path, capsys
) -> None:
    out, summary = _evaluate(monkeypatch, tmp_path, capsys)
    expected = _report().standing()
    assert summary["standing"] == expected.level == "care"
    assert summary["verdict"] == expected.headline
    assert f"Verdict: {expected.headline}" in out and "SensorEncoder beats" not in out


def test_a_new_rule_changes_every_line_evaluate_prints(monkeypatch, tmp_path, capsys) -> None:
    forced = rule.Standing("do_not_rely", "Forced by the test.")
    monkeypatch.setattr(rule, "standing", lambda r, m=None: forced)
    out, summary = _evaluate(monkeypatch, tmp_path, capsys)
    assert summary["standing"] == "do_not_rely"
    assert summary["verdict"] == "Do not rely on it. Forced by the test."
    assert "Verdict: Do not rely on it. Forced by the test." in out
