"""mfgtx.watch: whether the data a bundle scores still looks like its training data, and
whether the model still holds where the truth has arrived (``mfgtx watch``, issue 38).

- :mod:`~mfgtx.watch.profile`: the training profile a bundle records (per sensor and regime:
  count, missing share, range, mean, spread, quantiles);
- :mod:`~mfgtx.watch.drift`: recent readings against it (drift, range, missing, dead,
  constant);
- :mod:`~mfgtx.watch.regimes`: the operating regime of each recent row;
- :mod:`~mfgtx.watch.validity`: the model's realized error and interval coverage on lots
  whose truth arrived, against its own test figures;
- :mod:`~mfgtx.watch.report`: the :class:`WatchReport`, its verdict and findings;
- :mod:`~mfgtx.watch.judge`: one watch of a bundle from what the job read.

The thresholds are :class:`mfgtx.jobfile.watch.WatchSettings` (the job file's ``watch:``).
"""

from mfgtx.jobfile.watch import WatchSettings
from mfgtx.watch.drift import SensorCheck, check_inputs, check_sensor
from mfgtx.watch.judge import interval_nominal, watch
from mfgtx.watch.profile import PROFILE_KEY, SensorProfile, TrainingProfile, profile_of
from mfgtx.watch.report import Finding, WatchReport
from mfgtx.watch.validity import ModelCheck, check_model, reported_figures

__all__ = [
    "PROFILE_KEY",
    "Finding",
    "ModelCheck",
    "SensorCheck",
    "SensorProfile",
    "TrainingProfile",
    "WatchReport",
    "WatchSettings",
    "check_inputs",
    "check_model",
    "check_sensor",
    "interval_nominal",
    "profile_of",
    "reported_figures",
    "watch",
]
