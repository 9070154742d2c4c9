"""Who hears of what the plant's jobs find: the job file's ``alerts:`` section.

Each target is one Apprise URL (``json://``, ``mailto://``, ``msteams://``, ``slack://``...,
https://github.com/caronc/apprise/wiki). A password or token is written as ``${VAR}`` and
taken from the environment only when an alert is sent: the job file, the bundle that
records it and the history never hold it, and every message masks it::

    alerts:
      to:
        - json://alerts.plant.local:8080/mfgtx
        - mailtos://shift-lead:${SMTP_PASSWORD}@mail.plant.local?to=line3@plant.example
      on: [flagged_lot, limit]     # default: all four
      resolved: true               # also say when an alert clears (default: false)

``on`` names which findings raise an alert (:data:`ALERT_ON`): ``flagged_lot`` (a lot the
model decides is bad), ``limit`` (a prediction beyond the job's ``limits:``), ``drift`` (an
input that no longer looks like the training data, a dead sensor) and ``not_valid`` (a model
the watch judges no longer valid).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

__all__ = ["ALERT_ON", "AlertsSection", "variables"]

AlertOn = Literal["flagged_lot", "limit", "drift", "not_valid"]
#: What may raise an alert (``alerts.on``).
ALERT_ON: tuple[AlertOn, ...] = get_args(AlertOn)

#: ``${VAR}`` in a target URL: taken from the environment when sending (only the braced
#: form: a ``$`` elsewhere is part of the URL).
VARIABLE = re.compile(r"\$\{([^}]*)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://.+")


def variables(url: str) -> list[str]:
    """The environment variables ``url`` names (``${VAR}``), in order.

    Example:
        >>> variables("mailtos://lead:${SMTP_PASSWORD}@mail.plant.local")
        ['SMTP_PASSWORD']
    """
    return VARIABLE.findall(url)


@dataclass(frozen=True)
class AlertsSection:
    """Who hears of what the job finds (Apprise URLs) and which findings raise an alert;
    each alert is sent once, until it clears (:mod:`mfgtx.alerts`).

    Args:
        to: Apprise URLs, one per target; ``${VAR}`` is read from the environment when
            sending (a variable that is not set then is a failed delivery, retried on the
            next run). ``[]``: alerts are recorded in the history and shown on the
            dashboard, sent to nobody (``pending`` until a target is named, then sent).
        on: which findings raise an alert: any of ``flagged_lot``, ``limit``, ``drift``,
            ``not_valid`` (default: all).
        title: the start of each message's title (default: ``mfgtx``, then the job's name).
        resolved: also tell the targets when an alert they were sent clears (Grafana's
            "resolved" message); told once, a failure is logged and not retried.

    Example:
        >>> AlertsSection(to=("json://127.0.0.1:8080/hook",)).on
        ('flagged_lot', 'limit', 'drift', 'not_valid')
    """

    to: tuple[str, ...]
    on: tuple[AlertOn, ...] = ALERT_ON
    title: str = "mfgtx"
    resolved: bool = False

    def __post_init__(self) -> None:
        for i, url in enumerate(self.to):
            if not _SCHEME.match(url.strip()):
                raise ValueError(
                    f"to[{i}]: expected an Apprise URL such as json://host/path or "
                    f"mailto://host?to=someone@plant.example, found one without scheme://"
                )
            for name in variables(url):
                if not _NAME.match(name):
                    raise ValueError(
                        f"to[{i}]: ${{{name}}} is not an environment variable name "
                        "(letters, digits and _)"
                    )
        if not self.on:
            raise ValueError(f"on: name at least one of {list(ALERT_ON)}, or leave alerts out")
        if len(set(self.on)) != len(self.on):
            raise ValueError(f"on: each reason once, found {list(self.on)}")
        if not self.title.strip():
            raise ValueError("title: expected some text")

    def scheme(self, i: int) -> str:
        """The scheme of target ``i`` (``json``, ``mailto``...): how messages name it."""
        return self.to[i].strip().split("://", 1)[0].lower()
