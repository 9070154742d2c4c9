"""Sending one message to the job's alert targets through Apprise, secrets masked.

Apprise is imported here, when there is something to send, never before: it loads a plugin
per service. Each target (``alerts.to[i]``) is sent to on its own, so one target that is
down is named in the result while the others still receive the message. A ``${VAR}`` in a
target is read from the environment now; its value, and a password written in a URL, are
masked (``****``) in every message this module returns and in every log record that Apprise,
``requests`` and ``urllib3`` write while it sends. A target is named in messages by its
place and scheme (``to[1] (mailto)``), never by its URL.

Each target gets its own message (:func:`send`): after a failed delivery, only the targets
that did not take an alert are sent it again.
"""

from __future__ import annotations

import logging
import os
import re
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any
from urllib.parse import quote, unquote

from mfgtx.jobfile.alerts import VARIABLE, AlertsSection

__all__ = ["Masked", "send"]

log = logging.getLogger(__name__)

#: Loggers that may write a target's URL (or its path, which may hold a token) while sending.
_SENDERS = ("apprise", "requests", "requests_oauthlib", "oauthlib", "urllib3")
_USERINFO = re.compile(r"^[^:/?#]+://[^/?#@]*?:([^/?#@]+)@")
#: Longest failure text kept per target.
_WHY_CHARS = 300


class Masked(logging.Filter):
    """Replaces every secret in a log record's text with ``****`` (the record passes)."""

    def __init__(self, secrets: set[str]) -> None:
        super().__init__()
        forms = {s for s in secrets if s} | {quote(s, safe="") for s in secrets if s}
        self.secrets = sorted(forms, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, "****")
        return text

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            try:
                text = record.getMessage()
            except (TypeError, ValueError):
                text = str(record.msg)
            record.msg, record.args = self(text), None
        return True


def _expanded(url: str, environ: Mapping[str, str]) -> tuple[str, set[str], str | None]:
    """``(url with ${VAR} replaced, the secrets in it, what is missing or None)``."""
    secrets: set[str] = set()
    missing = [name for name in VARIABLE.findall(url) if name not in environ]
    if missing:
        return url, secrets, f"${{{missing[0]}}} is not set in this process's environment"

    def value(match: re.Match[str]) -> str:
        secrets.add(environ[match.group(1)])
        return environ[match.group(1)]

    full = VARIABLE.sub(value, url.strip())
    password = _USERINFO.match(full)
    if password:
        secrets |= {password.group(1), unquote(password.group(1))}
    return full, secrets, None


@contextmanager
def _masked_logs(mask: Masked, captured: list[str]) -> Iterator[None]:
    """While sending: ``mask`` on the loggers of :data:`_SENDERS`, and Apprise's warnings
    and errors collected into ``captured`` (the reason a target did not take a message)."""

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            captured.append(mask(record.getMessage()))

    names = [n for n in list(logging.root.manager.loggerDict) if n.split(".")[0] in _SENDERS]
    loggers = [logging.getLogger(n) for n in {*names, *_SENDERS}]
    collect = Collect(logging.WARNING)
    for logger in loggers:
        logger.addFilter(mask)
    apprise_log = logging.getLogger("apprise")
    apprise_log.addHandler(collect)
    try:
        yield
    finally:
        apprise_log.removeHandler(collect)
        for logger in loggers:
            logger.removeFilter(mask)


def send(
    section: AlertsSection,
    messages: Mapping[int, tuple[str, str]],
    *,
    environ: Mapping[str, str] | None = None,
) -> dict[int, str]:
    """Send each target ``i`` of ``section`` its message ``messages[i]`` (title, body);
    why each target that did not take its message did not (``to[i] (scheme): <why>``,
    secrets masked; empty: all took theirs). Never raises: a failure to send is the
    result, for the caller to record and retry."""
    environ = os.environ if environ is None else environ
    targets = {i: _expanded(section.to[i], environ) for i in messages}
    mask = Masked(set().union(*(secrets for _, secrets, _ in targets.values())))
    with warnings.catch_warnings():  # Apprise's e-mail plugin imports the deprecated imghdr
        warnings.simplefilter("ignore", DeprecationWarning)
        failed = _send_each(section, targets, messages, mask)
    return {i: mask(f"to[{i}] ({section.scheme(i)}): {why}") for i, why in failed.items()}


def _send_each(
    section: AlertsSection,
    targets: Mapping[int, tuple[str, set[str], str | None]],
    messages: Mapping[int, tuple[str, str]],
    mask: Masked,
) -> dict[int, str]:
    """Why each target that did not take its message did not."""
    try:
        import apprise
    except ImportError:
        return {i: "Apprise is not installed (pip install apprise)" for i in targets}
    failed: dict[int, str] = {}
    asset = apprise.AppriseAsset(storage_mode="memory")
    for i, (url, _, missing) in targets.items():
        if missing is not None:
            failed[i] = missing
            continue
        title, body = messages[i]
        captured: list[str] = []
        try:
            with _masked_logs(mask, captured):
                client: Any = apprise.Apprise(asset=asset)
                if not client.add(url):
                    failed[i] = "not a URL Apprise can send to"
                    continue
                ok = client.notify(
                    body=body,
                    title=title,
                    notify_type=apprise.NotifyType.WARNING,
                    body_format=apprise.NotifyFormat.TEXT,
                )
        except Exception as e:  # a plugin's own failure must not fail the job
            ok, captured = False, [*captured, mask(f"{type(e).__name__}: {e}")]
        if not ok:
            failed[i] = ("; ".join(dict.fromkeys(captured)) or "not delivered")[:_WHY_CHARS]
    return failed
