"""Tests of mfgtx.baselines and mfgtx.metrics (a package, so its conftest has a unique name)."""
