#!/usr/bin/env bash
# The one command that runs every check on a fresh machine: installs what it needs, then
# lints (ruff, the import contracts, pyright; for the TypeScript: the message types
# generated from jaxviz/schema/messages.json up to date, eslint, prettier), runs the
# whole test suite on the newest supported JAX (.venv/; slow tests included) and the core
# suite on the oldest (.venv-jax-oldest/, made on first use). Extra arguments go to the
# whole suite's pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test graphviz chromium
# The oldest JAX's venv is made meanwhile (mostly downloads), its suite run at the end.
oldest_log=$(mktemp)
bash scripts/test_jax_versions.sh --oldest --prepare >"$oldest_log" 2>&1 &
oldest_venv=$!
.venv/bin/ruff check jaxviz tests benchmarks
.venv/bin/lint-imports  # the import contracts in pyproject.toml: one-way flow, no cycles
.venv/bin/pyright  # basic type checking of jaxviz/ ([tool.pyright] in pyproject.toml)
if command -v npm >/dev/null 2>&1; then  # labextension/: eslint.config.mjs, .prettierrc.json
  (cd labextension && npm run --silent lint && npm run --silent format:check)
fi
status=0
.venv/bin/python -m pytest -q -p no:cacheprovider "$@" || status=$?
wait "$oldest_venv" || { cat "$oldest_log"; status=1; }
rm -f "$oldest_log"
bash scripts/test_jax_versions.sh --oldest || status=1
exit $status
