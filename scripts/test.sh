#!/usr/bin/env bash
# The one command that runs every check on a fresh machine: installs what it needs, then
# lints (ruff, the import contracts, pyright; for the TypeScript: the message types
# generated from jaxviz/schema/messages.json up to date, eslint, prettier), runs the
# whole test suite on the newest supported JAX (.venv/; slow tests included) and the core
# suite on the oldest (.venv-jax-oldest/, made on first use). Extra arguments go to the
# whole suite's pytest, run as one process (without them, the browser tests run in a
# second process beside the rest, followed there by the TypeScript unit tests and the
# oldest JAX's core suite).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test graphviz chromium
# The oldest JAX's venv is made meanwhile (mostly downloads); its exit status, once made,
# is written to $oldest_made (what the suite run on it waits for).
oldest_log=$(mktemp) oldest_made=$(mktemp)
: >"$oldest_made"
(made=0; bash scripts/test_jax_versions.sh --oldest --prepare >"$oldest_log" 2>&1 || made=$?
 echo "$made" >"$oldest_made") &
oldest_venv=$!
.venv/bin/ruff check jaxviz tests benchmarks
.venv/bin/lint-imports  # the import contracts in pyproject.toml: one-way flow, no cycles
.venv/bin/pyright  # basic type checking of jaxviz/ ([tool.pyright] in pyproject.toml)
if command -v npm >/dev/null 2>&1; then  # labextension/: eslint.config.mjs, .prettierrc.json
  (cd labextension && npm run --silent lint && npm run --silent format:check)
fi
status=0
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ $# -gt 0 ]; then
  "${pytest[@]}" "$@" || status=$?
  wait "$oldest_venv" || true
  if [ "$(cat "$oldest_made")" = 0 ]; then
    bash scripts/test_jax_versions.sh --oldest || status=1
  else
    cat "$oldest_log"; status=1
  fi
else
  # The browser tests (marked `browser` in tests/conftest.py) mostly wait on Chromium,
  # JupyterLab and kernels: run in a pytest process of their own beside the rest, they
  # use the core the rest leaves idle; they end first, and the TypeScript unit tests and
  # the oldest JAX's core suite follow them there. Their reports follow the rest's.
  side=tests/test_labextension_unit.py
  beside_log=$(mktemp)
  (
    side_status=0
    "${pytest[@]}" -m browser || side_status=1
    "${pytest[@]}" "$side" || side_status=1
    while [ ! -s "$oldest_made" ]; do sleep 1; done
    if [ "$(cat "$oldest_made")" = 0 ]; then
      bash scripts/test_jax_versions.sh --oldest || side_status=1
    else
      echo "jaxviz: the oldest JAX's venv could not be made:"; cat "$oldest_log"; side_status=1
    fi
    exit $side_status
  ) >"$beside_log" 2>&1 &
  beside=$!
  "${pytest[@]}" -m "not browser" --ignore="$side" || status=$?
  wait "$beside" || status=1
  echo "jaxviz: the browser tests (pytest -m browser), $side and the oldest JAX's core suite"
  cat "$beside_log"
  rm -f "$beside_log"
  wait "$oldest_venv" || true
fi
rm -f "$oldest_log" "$oldest_made"
exit $status
