"""mfgtx.alerts: alerts declared in the job file, delivered once per subject and reason
through Apprise, recorded in the history (issue 38, being built)."""
