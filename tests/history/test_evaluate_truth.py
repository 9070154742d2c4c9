"""``mfgtx evaluate`` with a truth table keeps it in the history, joined to earlier scores."""

from __future__ import annotations

import pandas as pd

from mfgtx.history import predictions_with_truth, read_history
from mfgtx.jobfile._sql import read_engine
from mfgtx.jobs import evaluate, load_config, score


def test_truth_that_evaluate_reads_later_joins_to_the_scored_windows(
    quality_bundle, plant, tmp_path
) -> None:
    job, _ = quality_bundle
    out = tmp_path / "scores.parquet"
    scored = score(load_config(job, [f"score.output.path={out}"]))
    lots = sorted(pd.read_parquet(out)["lot"].astype(str).unique())
    truth = tmp_path / "inspections.csv"
    given = {lot: i % 2 for i, lot in enumerate(lots[:-1])}  # the last lot not inspected yet
    pd.DataFrame({"lot": list(given), "defect": list(given.values())}).to_csv(truth, index=False)
    evaluate(load_config(job, [
        f"score.output.path={out}",
        f"evaluate={{source: {{path: {plant / 'sensors.csv'}}}, truth: {{path: {truth}}}}}",
    ]))  # fmt: skip
    engine = read_engine(f"sqlite:///{tmp_path / 'history.db'}")
    joined = predictions_with_truth(
        read_history(engine, "history.db"), lots[0], lots[-1], target="defect"
    )
    engine.dispose()
    assert len(joined) == scored.output_rows
    by_lot = joined["truth"].fillna("(none)").groupby(joined["lot"]).agg(set).to_dict()
    assert by_lot == {
        **{lot: {str(float(v))} for lot, v in given.items()},
        lots[-1]: {"(none)"},
    }
    assert set(joined.loc[joined["truth"].notna(), "truth_source"]) == {str(truth)}
