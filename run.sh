#!/usr/bin/env bash
# Set up (or update) the project's virtualenv in .venv, then run a task.
#
#   ./run.sh demo    set up, then run the demo (the main job)
#   ./run.sh test    set up, then run ruff, the import-layer contracts, mypy, the docs build and the test suite
#   ./run.sh bench   set up, then run the attention benchmark (extra args are passed on)
#
# Needs only Python >= 3.11 (python3 on PATH, or set PYTHON=/path/to/python).
# Installs pinned versions from constraints.txt, including the CPU build of torch.
# With a CUDA build of torch already in .venv, set MFGTX_KEEP_TORCH=1 (see README).
set -euo pipefail
cd "$(dirname "$0")"

task="${1:-}"
[ $# -gt 0 ] && shift
case "$task" in
  demo|test|bench) ;;
  *) echo "usage: ./run.sh demo|test|bench [args...]" >&2; exit 2 ;;
esac

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "error: mfgtx needs Python >= 3.11; '$PYTHON' is $("$PYTHON" --version 2>&1 || echo missing)" >&2
  exit 2
fi

VENV=.venv
if [ ! -x "$VENV/bin/python" ]; then
  echo "creating virtualenv $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi

# Reinstall only when what we install from has changed.
constraints=constraints.txt
if [ "${MFGTX_KEEP_TORCH:-0}" = "1" ]; then
  constraints="$VENV/constraints-keep-torch.txt"
  grep -v '^torch==' constraints.txt > "$constraints"
fi
stamp="$VENV/.mfgtx-setup"
want="$(cat pyproject.toml "$constraints" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  if [ -f "$stamp" ]; then  # an update: a few packages at most, quietly
    echo "updating mfgtx's pinned dependencies in $VENV" >&2
    quiet=(--quiet)
  else  # the first set-up downloads torch and the rest: show pip's progress
    echo "first set-up: installing mfgtx and its pinned dependencies into $VENV" >&2
    echo "(about 85 packages with the CPU build of torch, about 2 GB installed: a few minutes)" >&2
    quiet=(--progress-bar on)
  fi
  "$VENV/bin/python" -m pip install "${quiet[@]}" --disable-pip-version-check \
    -c "$constraints" -e ".[dev,docs]"
  echo "$want" > "$stamp"
fi

case "$task" in
  demo)
    exec "$VENV/bin/mfgtx" demo "$@" ;;
  test)
    "$VENV/bin/ruff" check .
    "$VENV/bin/ruff" format --check .
    "$VENV/bin/lint-imports" --no-cache   # the import layers (pyproject.toml)
    "$VENV/bin/mypy"                      # the types of mfgtx/ ([tool.mypy] in pyproject.toml)
    site="$(mktemp -d)"                   # the docs site: a broken link or anchor fails
    NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --site-dir "$site" \
      || { rm -rf "$site"; exit 1; }
    rm -rf "$site"
    exec "$VENV/bin/python" -m pytest "$@" ;;
  bench)
    exec "$VENV/bin/python" benchmarks/attention.py "$@" ;;
esac
