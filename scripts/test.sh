#!/usr/bin/env bash
# The one command that runs every check on a fresh machine: installs what it needs, then
# lints (ruff, the import contracts, pyright; for the TypeScript: the message types
# generated from jaxviz/schema/messages.json up to date, eslint, prettier), runs the
# whole test suite on the newest supported JAX (.venv/; slow tests included) and the core
# suite on the oldest (.venv-jax-oldest/, made on first use). Extra arguments go to the
# whole suite's pytest, run as one process (without them, the browser tests and the
# TypeScript's unit tests run in a second process beside the rest).
set -euo pipefail
cd "$(dirname "$0")/.."
# Python keeps the bytecode it compiles: where PYTHONDONTWRITEBYTECODE is set (as on this
# machine), each process compiled again what it imported (pytest its rewritten test
# modules and plugins, jaxviz among them; the oldest JAX's suite all of its venv).
unset PYTHONDONTWRITEBYTECODE
# The core suite on the oldest JAX, its venv made first (.venv-jax-oldest/, on first use):
# after the browser tests, beside the rest, which end last.
oldest_suite() {
  bash scripts/test_jax_versions.sh --oldest
}
bash scripts/setup_env.sh test graphviz chromium
.venv/bin/ruff check jaxviz tests benchmarks
.venv/bin/lint-imports  # the import contracts in pyproject.toml: one-way flow, no cycles
# pyright (basic type checking of jaxviz/: [tool.pyright] in pyproject.toml) beside the
# TypeScript's linters (labextension/: eslint.config.mjs, .prettierrc.json): a core each.
type_and_ts_lints() {
  local pyright_log pyright ok=0
  pyright_log=$(mktemp)
  .venv/bin/pyright >"$pyright_log" 2>&1 &
  pyright=$!
  if command -v npm >/dev/null 2>&1; then
    (cd labextension && npm run --silent lint && npm run --silent format:check) || ok=1
  fi
  wait "$pyright" || ok=1
  cat "$pyright_log"
  rm -f "$pyright_log"
  return $ok
}
status=0
pytest=(.venv/bin/python -m pytest -q -p no:cacheprovider)
if [ $# -gt 0 ]; then
  type_and_ts_lints || exit 1
  "${pytest[@]}" "$@" || status=$?
  oldest_suite || status=1
else
  # The browser tests (marked `browser` in tests/conftest.py, in files named *_browser.py)
  # mostly wait on Chromium, JupyterLab and kernels: run in a pytest process of their own
  # beside the rest, they use the core the rest leaves idle. The type checker and the
  # TypeScript's linters come before them there, then the TypeScript's unit tests (marked
  # `typescript`; the process is given their file, as it collects only the files it runs),
  # the oldest JAX's suite after them: that lane still ends before the rest. Their reports
  # follow the rest's.
  browser_log=$(mktemp) browser_status=$(mktemp) oldest_suite_log=$(mktemp)
  { type_and_ts_lints >"$browser_log" 2>&1 || echo 1 >"$browser_status"
    "${pytest[@]}" -m "typescript or browser" tests/test_labextension_unit.py tests/*_browser.py >>"$browser_log" 2>&1 || echo 1 >>"$browser_status"
    echo 0 >>"$browser_status"
    oldest_suite >"$oldest_suite_log" 2>&1; } &
  second_lane=$!
  "${pytest[@]}" -m "not browser and not typescript" || status=$?
  wait "$second_lane" || status=1
  [ "$(head -n 1 "$browser_status")" = 0 ] || status=1
  echo "jaxviz: pyright, the TypeScript's linters and unit tests, the browser tests (pytest -m 'typescript or browser')"
  cat "$browser_log" "$oldest_suite_log"
  rm -f "$browser_log" "$browser_status" "$oldest_suite_log"
fi
exit $status
