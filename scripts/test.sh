#!/usr/bin/env bash
# The one command that runs every check on a fresh machine: installs what it needs, then
# lints and runs the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh test graphviz chromium
.venv/bin/ruff check jaxviz tests benchmarks
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
