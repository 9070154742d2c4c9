"""The command-line tests' small sample plant, for the kinds' tests."""

from tests.cli.conftest import plant  # noqa: F401 (a fixture)

# the toy kind registers itself when imported: only its tests import it (not the doctest run)
collect_ignore = ["toy"]
