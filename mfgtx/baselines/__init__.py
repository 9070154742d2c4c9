"""mfgtx.baselines: simple baselines fitted on the model's own split, and the comparison report.

Every evaluation reports the model next to baselines fitted on exactly the same training
windows and scored on exactly the same test windows; a Transformer that loses to gradient
boosting says so. Typical use::

    baselines = fit_baselines(windows, train_idx, "regression", scaler=scaler)
    report = compare("regression", windows, test_idx, model_pred, baselines)
    markdown = report.to_markdown()   # the table for a meeting; report.to_json() for files
    report.standing().level           # "use", "care", "do_not_rely" or "unknown"

Every baseline has ``name``, ``fit(windows, train_idx, scaler=None) -> self`` and
``predict(windows, idx)``; classifiers also ``predict_proba``. The learned ones use the
leakage-free window :func:`summary_features`.
"""

from mfgtx.baselines._base import Baseline
from mfgtx.baselines.classification import (
    GradientBoostingClassifier,
    LogisticRegression,
    MajorityClass,
)
from mfgtx.baselines.compare import PRIMARY_METRIC, bootstrap_differences, compare
from mfgtx.baselines.features import (
    SUMMARY_STATS,
    summary_cache,
    summary_feature_names,
    summary_features,
)
from mfgtx.baselines.forecast import (
    LinearRidge,
    Naive,
    SeasonalNaive,
    TrainMeanForecast,
    forecast_baseline,
)
from mfgtx.baselines.image import HogLogistic, MajorityImageClass, hog_features
from mfgtx.baselines.regression import GradientBoosting, Ridge, TrainMean
from mfgtx.baselines.report import Difference, EvaluationReport, ReportRow
from mfgtx.baselines.standing import Standing, baseline_words, model_words, standing_of
from mfgtx.baselines.suite import default_baselines, fit_baselines
from mfgtx.baselines.sweep_table import SweepTable, SweepTrial

__all__ = [
    "PRIMARY_METRIC",
    "SUMMARY_STATS",
    "Baseline",
    "Difference",
    "EvaluationReport",
    "GradientBoosting",
    "GradientBoostingClassifier",
    "HogLogistic",
    "LinearRidge",
    "LogisticRegression",
    "MajorityClass",
    "MajorityImageClass",
    "Naive",
    "ReportRow",
    "Ridge",
    "SeasonalNaive",
    "Standing",
    "SweepTable",
    "SweepTrial",
    "TrainMean",
    "TrainMeanForecast",
    "baseline_words",
    "bootstrap_differences",
    "compare",
    "default_baselines",
    "fit_baselines",
    "forecast_baseline",
    "hog_features",
    "model_words",
    "standing_of",
    "summary_cache",
    "summary_feature_names",
    "summary_features",
]
