"""No library words where a plant user reads (issue 37), for every bundle the demo writes.

What is read: every dashboard page's text (messages, tables, metrics, labels, chart titles
and axis labels), the report of every bundle, the ``mfgtx evaluate`` text (the report table
and verdict, the JSON summary, the warnings on stderr) and the column names and decisions of
every score output. None may hold ``p_0``/``p_1``, ``class 1``, ``logits``, ``kmeans``, a
traceback, the name of a Python class of mfgtx (collected from the package: its public
classes) or of the libraries under it (:data:`LIBRARY_CLASSES`), or a metric's key
(``log_loss``: a metric is shown by its plain name, :data:`mfgtx.metrics.PLAIN`).
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import re
from functools import cache

import pandas as pd
import pytest

import mfgtx

from .test_demo_bundles import BUNDLE_KEYS, KIND_OF_PAGE, PAGES, _app

#: class names of the libraries under mfgtx that its messages used to show
LIBRARY_CLASSES = ("LogisticRegression", "SensorEncoder", "DefectViT", "CausalForecaster",
                   "TemperatureScaler", "DataFrame", "KeyError", "ValueError", "NoneType")  # fmt: skip
#: library words, each a pattern
WORDS = (r"\bp_[0-9]\b", r"\bclass 1\b", r"\blogits?\b", r"Traceback", r"\bk-?means\b")
#: metric keys that are not words (a metric is shown by its plain name)
METRIC_KEYS = ("log_loss", "nasa_score", "average_precision", "balanced_accuracy",
               "false_alarm_rate", "roc_auc", "ece", "brier", "rmse", "mse", "mae", "r2", "f1")  # fmt: skip
#: a class name as code writes it: two capitalised words run together (SensorEncoder)
_CAMEL = re.compile(r"[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*")


@cache
def mfgtx_class_names() -> frozenset[str]:
    """The CamelCase names of mfgtx's public classes (every module's ``__all__``)."""
    names: set[str] = set()
    for info in pkgutil.walk_packages(mfgtx.__path__, "mfgtx."):
        if info.name.startswith(("mfgtx.cli.__main__", "mfgtx.__main__")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if isinstance(obj, type) and obj.__module__.startswith("mfgtx"):
                if _CAMEL.fullmatch(name):
                    names.add(name)
    return frozenset(names)


@cache
def _pattern() -> re.Pattern[str]:
    classes = sorted(mfgtx_class_names() | set(LIBRARY_CLASSES), key=len, reverse=True)
    words = [*classes, *METRIC_KEYS]
    return re.compile("|".join([*WORDS, r"\b(?:" + "|".join(words) + r")\b"]))


def library_words(text: str) -> list[str]:
    """The library words in ``text``, each with a little of what is around it."""
    return [text[max(0, m.start() - 60) : m.end() + 60] for m in _pattern().finditer(text)]


def check(text: str, where: object) -> None:
    """Fail (``AssertionError``) on a library word in ``text``, naming ``where``."""
    found = library_words(text)
    assert found == [], (where, found)


def test_the_guard_knows_the_words() -> None:
    classes = mfgtx_class_names()
    assert {"TemperatureScaler", "SensorEncoder", "DefectViT", "EvaluationReport"} <= classes
    assert library_words("P(class 1) from the logits of a SensorEncoder, p_1 and p_0")
    assert len(library_words("TemperatureScaler.fit: Traceback")) == 2
    assert library_words("6 kmeans regimes; on log_loss")
    # plant words pass: names from the classes, metrics by their plain names
    plain = "p_bad 41%, decision: bad; temp_1 (°C); probability error ↓; class 12 of 3"
    assert library_words(plain) == []
    with pytest.raises(AssertionError, match="where"):
        check("the model beats a linear fit on rmse", "where")


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def page_text(at) -> str:
    """Everything a page shows in words: messages, tables, metrics, widgets' labels and
    options, chart titles, axis titles and labels."""
    parts: list[str] = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "error", "warning",
                 "info", "success", "exception"):  # fmt: skip
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [f"{m.label} {m.value}" for m in at.metric]
    parts += [df.value.to_csv() for df in at.dataframe]
    for kind in ("selectbox", "radio", "multiselect"):
        parts += [f"{w.label} {' '.join(map(str, w.options))}" for w in getattr(at, kind)]
    for kind in ("slider", "select_slider", "button", "checkbox", "toggle", "expander", "tabs"):
        parts += [str(getattr(w, "label", "")) for w in at.get(kind)]
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        parts += _strings(spec.get("layout", {}))
        parts += [s for trace in spec.get("data", []) for s in _strings(trace)]
    return "\n".join(parts)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_pages_show_no_library_words(demo_env, page) -> None:
    names = [n for n, (k, _) in demo_env["jobs"].items() if KIND_OF_PAGE.get(page) in (k, "any")]
    for bundle in names or [None]:
        at = _app(demo_env["out"], page, BUNDLE_KEYS.get(page), bundle)
        text = page_text(at)
        assert text.strip(), (page, bundle)
        check(text, (page, bundle))


@pytest.mark.slow
def test_attention_bars_name_the_model_inputs(demo_env) -> None:
    """The sensor attention bars are labelled with the bundle's channel names and units
    (the regimes model reads its sensors and one channel per regime), never numbered."""
    for bundle in ("sample_quality", "sample_regimes"):
        job = demo_env["jobs"][bundle][1]
        predictor = mfgtx.load(job.bundle)
        at = _app(demo_env["out"], "views/quality.py", "quality_bundle", bundle)
        labels = [
            str(x)
            for chart in at.get("plotly_chart")
            for trace in json.loads(chart.proto.spec).get("data", [])
            if trace.get("type") == "bar"
            for x in trace.get("x") or []
        ]
        numbered = [x for x in labels if re.fullmatch(r"(sensor|input) \d+", x)]
        assert not numbered, (bundle, labels)
        if predictor.explained_model.config.tokens == "sensor":
            named = [c.split(" (")[0] for c in labels]
            assert set(predictor.channel_names) <= set(named), (bundle, labels)


#: a log record on stderr (``2026-12-04 17:06:18,989 INFO mfgtx...``): for whoever debugs
_LOG_RECORD = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO) ", re.MULTILINE)


def cli_text(out: str, err: str) -> str:
    """What ``mfgtx`` says to a person: stdout but the JSON summary (for machines: its
    verdict and how-sure sentences are kept), and stderr but the info log records."""
    lines = out.rstrip("\n").split("\n")
    summary = json.loads(lines[-1])
    said = [*lines[:-1], str(summary.get("verdict", "")), str(summary.get("how_sure", ""))]
    said += [line for line in err.splitlines() if not _LOG_RECORD.match(line)]
    return "\n".join(said)


@pytest.mark.slow
def test_reports_cli_and_scores_hold_no_library_words(demo, capsys, monkeypatch) -> None:
    from mfgtx.baselines import EvaluationReport
    from mfgtx.cli import main

    for name, (kind, job) in demo["jobs"].items():
        bundle = mfgtx.load(job.bundle)
        metrics = dict(bundle.bundle.manifest.get("metrics") or {})
        report = EvaluationReport.from_dict(metrics)
        check(report.to_markdown(), (name, "report"))  # what `mfgtx train` prints
        # `mfgtx evaluate` on the job: stdout (the report, the summary) and stderr
        monkeypatch.setattr("mfgtx.cli.jobs.job_config", lambda args, job=job: job)
        capsys.readouterr()
        code = main(["evaluate", f"{name}.yaml"])
        out, err = capsys.readouterr()
        assert code == 0, (name, err)
        check(cli_text(out, err), (name, "mfgtx evaluate"))
        scored = pd.read_parquet(job.score.output.path)
        assert library_words(" ".join(scored.columns)) == [], (name, list(scored.columns))
        if "decision" in scored:
            words = {"bad", "good"} if kind == "sensor" else {"defect", "good"}
            assert set(scored["decision"].dropna()) <= words, (name, set(scored["decision"]))


def test_attention_labels_carry_units_and_never_guess_names() -> None:
    from .test_figures import _maps, token_labels

    units = {"temp": "°C"}
    assert token_labels(_maps([0.5, 0.5]), ["temp", "flow"], None, units) == ["temp (°C)", "flow"]
    # a bundle that names fewer inputs than the map has: numbered, not sensor names guessed
    assert token_labels(_maps([0.3, 0.3, 0.4]), ["temp", "flow"], None) == [
        "input 1", "input 2", "input 3",
    ]  # fmt: skip
