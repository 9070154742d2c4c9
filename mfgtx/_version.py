"""The version of mfgtx (one place: the package, the CLI and bundle manifests read it)."""

__version__ = "0.2.0"
