"""Overview: the model bundles found, their metrics against the baselines, split audits, data."""

from __future__ import annotations

import json
import re

import pandas as pd
import streamlit as st
from _bundles import find_bundles
from _common import guarded
from _freshness import freshness
from _settings import app_config
from _trust import show_trust

from mfgtx.baselines import baseline_words, model_words
from mfgtx.metrics import plain_meanings, plain_name
from mfgtx.split import duration_text

TASK_WORDS = {
    "classification": "classification",
    "regression": "regression",
    "forecast": "forecast",
}


#: what each kind's model is, in words (the class name is for the bundle's loader)
MODEL_WORDS = {
    "sensor": "Transformer on sensor readings",
    "forecast": "forecasting Transformer",
    "vit": "vision Transformer on images",
}


def bundle_model_words(kind: str | None, model_class: str, manifest: dict) -> str:
    """The bundle's model in words: what it is and, for an ensemble, how many members."""
    words = MODEL_WORDS.get(kind or "", "model")
    members = (manifest.get("split") or {}).get("ensemble_members")
    if "Ensemble" in model_class:
        words += f", {members} cross-fitted members" if members else ", ensemble"
    return words


def _metrics_table(metrics: dict) -> pd.DataFrame:
    """One row per predictor; each metric's column says which way is better."""
    rows = metrics.get("rows") or []
    higher = metrics.get("higher_is_better") or {}

    def name(m: str) -> str:
        arrow = {True: " ↑", False: " ↓"}.get(higher.get(m), "")
        return plain_name(m) + arrow

    return pd.DataFrame(
        [
            {
                # in words, never the class behind it (SensorEncoder, LogisticRegression)
                "predictor": (model_words if r.get("kind") == "model" else baseline_words)(
                    r["name"]
                ),
                "kind": r.get("kind", ""),
                **{name(k): v for k, v in r["metrics"].items()},
            }
            for r in rows
        ]
    )


def audit_words(text: str) -> str:
    """``gap=0 days 00:30:00`` (pandas' text of a Timedelta, in the audit of bundles written
    before the audit wrote durations in words) as ``gap=30 min``; the class names and
    clustering words older audits wrote (``the SensorScaler (standard)``, ``3 kmeans regimes
    of [...]``) in plant words, as the audit writes them now."""
    pattern = r"-?\d+ days? \d{2}:\d{2}:\d{2}(?:\.\d+)?"
    text = re.sub(pattern, lambda m: duration_text(pd.Timedelta(m.group(0))), text)
    text = text.replace("the SensorScaler (", "the sensor scaling (")
    text = re.sub(
        r"(\d+) kmeans regimes of", r"\1 operating regimes grouped by similar settings of", text
    )
    text = re.sub(r"(\d+) column regimes of", r"\1 operating regimes read from", text)
    return text.replace(" (Regimes.fit(windows, train))", "")


def judged_on(metrics: dict) -> str:
    """E.g. "Judged on 60 test images from 3 test lots"."""
    unit = metrics.get("unit") or "windows"
    n = metrics.get("n_test")
    lots = next(
        (d.get("n_groups") for d in metrics.get("differences") or [] if d.get("n_groups")), None
    )
    text = f"Judged on {n} test {unit}"
    if lots and str(lots) != str(n):
        text += f" from {lots} test lots"
    elif lots:
        text += " (one per test lot)"
    primary = metrics.get("primary")
    higher = (metrics.get("higher_is_better") or {}).get(primary)
    arrow = {True: " (↑ higher is better)", False: " (↓ lower is better)"}.get(higher, "")
    return f"{text}; primary metric: **{plain_name(str(primary))}**{arrow}"


@guarded
def overview() -> None:
    cfg = app_config()
    st.title("Overview")
    st.caption(
        f"Models from `{cfg.models_dir}`, data from `{cfg.data_dir}` (settings: {cfg.source})."
    )
    bundles, problems = find_bundles(cfg.models_dir)
    for p in problems:
        st.warning(f"Refused bundle: {p}")
    for b in bundles:
        for w in b.warnings:  # what the checks warned about (a file it does not list...)
            st.warning(f"{b.path.name}: {w}")
    if not bundles:
        st.info(f"No model bundles in {cfg.models_dir}.")
    else:
        st.subheader("Model bundles")
        st.dataframe(
            pd.DataFrame(
                [
                    {
                        "bundle": b.path.name,
                        "kind": b.kind,
                        "model": bundle_model_words(b.kind, b.model_class, b.manifest),
                        "task": TASK_WORDS.get(b.task or "", b.task or "not recorded"),
                        "created (UTC)": b.manifest.get("created_utc"),
                        "parameters": b.manifest["model"].get("parameters"),
                        "signature": b.signature,
                        "id": b.bundle_id[:12],
                    }
                    for b in bundles
                ]
            ),
            hide_index=True,
        )
    for b in bundles:
        with st.expander(f"{b.path.name}: metrics and split audit", expanded=True):
            metrics = b.manifest.get("metrics") or {}
            if metrics.get("rows"):
                trust = show_trust(b.manifest, details=False, lead="Verdict.")
                st.markdown(judged_on(metrics))
                st.dataframe(_metrics_table(metrics), hide_index=True)
                shown = dict.fromkeys(k for r in metrics["rows"] for k in r.get("metrics", {}))
                st.caption("  \n".join(plain_meanings(shown)))  # what each column means
                for line in trust.details:  # "How sure: ...", recomputed in plant words
                    st.markdown(line)
            else:
                st.write("No metrics stored in this bundle.")
            audit = b.manifest.get("audit") or {}
            checks = audit.get("checks") or []
            if checks:
                failed = [c for c in checks if not c["passed"]]
                label = "passed" if not failed else f"{len(failed)} check(s) FAILED"
                st.markdown(f"Split audit: **{label}** ({len(checks)} checks)")
                st.dataframe(
                    pd.DataFrame(
                        [
                            {
                                "check": c["name"].replace("_", " "),
                                "passed": c["passed"],
                                "detail": audit_words(c["detail"]),
                            }
                            for c in checks
                        ]
                    ),
                    hide_index=True,
                )
                not_checked = audit.get("not_checked") or []
                if not_checked:
                    st.markdown(
                        "Not checked: "
                        + "; ".join(f"{c['name']} ({c['reason']})" for c in not_checked)
                    )
            else:
                st.write("No split audit stored in this bundle.")
            report = {
                "bundle": b.path.name,
                "bundle_id": b.bundle_id,
                "metrics": metrics,
                "audit": audit,
                "split": b.manifest.get("split"),
                "calibration": b.manifest.get("calibration"),
            }
            st.download_button(
                "Download this bundle's report (JSON)",
                json.dumps(report, indent=2, default=str).encode("utf-8"),
                file_name=f"{b.path.name}_report.json",
                mime="application/json",
                key=f"report-{b.path.name}",
                on_click="ignore",
            )
    time_names = [  # the bundles' time columns first, then their label times
        str(((b.manifest.get("input_spec") or {}).get("columns") or {}).get(key) or "")
        for key in ("time", "label_time")
        for b in bundles
    ]
    freshness(cfg.data_dir, [t for t in dict.fromkeys(time_names) if t])


overview()
