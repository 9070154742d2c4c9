"""The demo's score cache: a second start skips scoring only when nothing it depends on changed."""

from __future__ import annotations

import shutil
from pathlib import Path

from mfgtx._files import atomic_write_bytes
from mfgtx.jobs.demo import _record_scores, demo_configs, estimate_seconds, scores_up_to_date

SAMPLE = Path(__file__).resolve().parents[2] / "sample_data"


def _quality_job(tmp_path: Path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("sensors.csv", "quality.csv"):
        shutil.copy(SAMPLE / name, data / name)
    job = demo_configs(data, tmp_path / "out")["sample_quality"]
    output = Path(str(job.score.output.path))
    output.parent.mkdir(parents=True)
    atomic_write_bytes(output, b"scores")  # as score() writes it: recorded as mfgtx's
    return job, data, output


def test_scores_are_reused_only_for_the_same_bundle_and_input(tmp_path) -> None:
    job, data, _ = _quality_job(tmp_path)
    assert not scores_up_to_date(job, "bundle-a")  # no record yet: score
    _record_scores(job, "bundle-a")
    assert scores_up_to_date(job, "bundle-a")
    assert not scores_up_to_date(job, "bundle-b")  # retrained: another bundle id
    with open(data / "sensors.csv", "a", encoding="utf-8") as f:
        f.write("L3,L3-0012,2026-03-22T04:47:00+00:00,173.0,4.6,1.8,10.5\n")
    assert not scores_up_to_date(job, "bundle-a")  # new rows in the input


def test_scores_changed_by_a_person_are_rescored(tmp_path) -> None:
    job, _, output = _quality_job(tmp_path)
    _record_scores(job, "bundle-a")
    atomic_write_bytes(output, b"other scores")  # mfgtx's, but not the demo's (mfgtx score)
    assert not scores_up_to_date(job, "bundle-a")
    _record_scores(job, "bundle-a")
    assert scores_up_to_date(job, "bundle-a")
    output.write_bytes(b"scores, with a note")  # not what mfgtx wrote any more
    assert not scores_up_to_date(job, "bundle-a")


def test_every_demo_job_has_measured_estimates() -> None:
    from mfgtx.jobs.demo import _SECONDS, JOBS

    assert set(_SECONDS) == set(JOBS)
    for name in JOBS:
        for phase in ("train", "score"):
            full, quick = (estimate_seconds(name, phase, quick=q) for q in (False, True))
            assert 0 < quick <= full, (name, phase)


def test_a_person_waiting_sees_one_bar_that_ends_full(tmp_path, monkeypatch, capsys) -> None:
    """At a terminal the demo shows one bar for all jobs and phases, advancing by each phase's
    estimate, and turns training's own bars into log lines."""
    import mfgtx.cli.demo as cli_demo
    import mfgtx.jobs.demo as jobs_demo
    from mfgtx.cli import main

    seen: dict = {}

    def fake_run_demo(data, out, **kwargs):
        seen.update(kwargs)
        plan = [
            {"job": "a", "phase": "train", "seconds": 10.0},
            {"job": "a", "phase": "score", "seconds": 2.0},
            {"job": "b", "phase": "score", "seconds": 3.0},
        ]
        yield {"job": "demo", "start": True, "train": ["a"], "minutes": 0.25, "plan": plan}
        yield {"job": "a", "training": "sensor", "bundle": "A", "model": "a model", "minutes": 0.2}
        kwargs["on_step"](1, 0.5)  # training's steps keep the clock moving
        yield {"job": "a", "command": "train", "bundle": "A", "seconds": 9.0, "verdict": "v"}
        yield {"job": "a", "command": "score", "windows": 3, "windows_per_s": 1.0, "output": "o"}
        yield {"job": "b", "command": "train", "bundle": "B", "reused": True}
        yield {"job": "b", "command": "score", "windows": 3, "windows_per_s": 1.0, "output": "p"}

    monkeypatch.setattr(jobs_demo, "run_demo", fake_run_demo)
    monkeypatch.setattr(cli_demo, "_watched", lambda: True)
    assert main(["demo", "--no-app", "--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert seen["progress"] == "log" and seen["on_step"] is not None
    assert "demo" in captured.err and "100%" in captured.err and "left" in captured.err
    assert "a: trained A" in captured.out and "b: reusing B" in captured.out
