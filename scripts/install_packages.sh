#!/usr/bin/env bash
# Installs Python packages into a venv, as `pip install ARGS...` would: with uv where it
# can be had (a fresh clone's test venv here: 28 s, against 186 s with pip), else with pip,
# which reads this machine's own pip configuration. Either compiles the modules it
# installs: where PYTHONDONTWRITEBYTECODE is set (as on this machine), Python would
# otherwise compile every module again in every process that imports it. `--no-compile`
# leaves that to the processes, for a venv that one process uses once (the oldest JAX's:
# its core suite compiles what it imports for 8 CPU-s, where compiling the whole venv at
# install takes 20).
# Usage: bash scripts/install_packages.sh [--no-compile] VENV PIP-INSTALL-ARGUMENTS...
set -euo pipefail
uv_compile=--compile-bytecode pip_compile=--compile
if [ "${1:-}" = --no-compile ]; then
  uv_compile=--no-compile-bytecode pip_compile=--no-compile
  shift
fi
venv=$1
shift
python="$venv/bin/python"
if "$python" -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 \
   && "$python" -m uv pip install -q --python "$python" "$uv_compile" "$@"; then
  exit 0
fi
echo "jaxviz: uv could not install $*; pip does" >&2
"$python" -m pip install -q --disable-pip-version-check "$pip_compile" "$@" 2>&1 | { grep -v "^WARNING: Location" || true; }
