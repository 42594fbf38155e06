#!/usr/bin/env bash
# The core test suite (`pytest -m core`: tracing, graph, render, magics, a real kernel,
# recompiles, errors, JAX internals) on every supported JAX minor, its latest patch, each in its own venv that
# holds the user's JAX, jaxviz and the test tools only (no Flax/Equinox/optax: their releases
# pin JAX ranges of their own). Prints a pass/fail table; fails if any version fails.
#   bash scripts/test_jax_versions.sh                # every supported minor
#   bash scripts/test_jax_versions.sh 0.6.2 0.9.2    # these versions only
#   bash scripts/test_jax_versions.sh --oldest       # the oldest, in .venv-jax-oldest/ (CI)
#   bash scripts/test_jax_versions.sh -- -x -k trace # pytest arguments after --
#   bash scripts/test_jax_versions.sh --oldest --prepare  # make the venv only
# Venvs: .venv-jax-VERSION/ (or $JAXVIZ_VENVS/jax-VERSION/), made once per version with
# $JAXVIZ_PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
# Keep in step with pyproject.toml's jax range and jaxviz/jax_versions.py.
SUPPORTED=(0.6.2 0.7.2 0.8.3 0.9.2 0.10.2)
CORE_TEST_DEPS=(pytest pytest-timeout "hypothesis>=6" "pydot>=2" "nbclient>=0.10" "nbformat>=5"
                "ipykernel>=6" "jupyter_client>=8")

versions=() pytest_args=() oldest=0 prepare=0
while [ $# -gt 0 ]; do
  case "$1" in
    --oldest) oldest=1; versions=("${SUPPORTED[0]}") ;;
    --prepare) prepare=1 ;;
    --) shift; pytest_args=("$@"); break ;;
    *) versions+=("$1") ;;
  esac
  shift
done
[ ${#versions[@]} -gt 0 ] || versions=("${SUPPORTED[@]}")

venv_for() {
  if [ "$oldest" = 1 ]; then echo .venv-jax-oldest
  elif [ -n "${JAXVIZ_VENVS:-}" ]; then echo "$JAXVIZ_VENVS/jax-$1"
  else echo ".venv-jax-$1"; fi
}

# A venv with exactly JAX $2 (and its jaxlib), then jaxviz on top: installing jaxviz must
# keep the user's JAX, which is checked.
make_venv() {
  local venv=$1 version=$2
  local stamp="$venv/.jaxviz-jax-$version"
  if [ -f "$stamp" ] && [ ! pyproject.toml -nt "$stamp" ]; then return 0; fi
  if [ ! -f "$stamp" ]; then  # a new venv; else only jaxviz's dependencies changed
    rm -rf "$venv" && "${JAXVIZ_PYTHON:-python3}" -m venv "$venv"
    bash scripts/install_packages.sh --no-compile "$venv" "jax==$version" "jaxlib==$version" || return 1
  fi
  # No JupyterLab extension build here: the core suite does not use it.
  SKIP_JUPYTER_BUILDER=1 bash scripts/install_packages.sh --no-compile "$venv" -e . "${CORE_TEST_DEPS[@]}" || return 1
  local now
  now=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("jax"))')
  if [ "$now" != "$version" ]; then
    echo "jaxviz: installing jaxviz replaced JAX $version with $now in $venv" >&2
    return 1
  fi
  touch "$stamp"
}

results=() failed=0
for version in "${versions[@]}"; do
  venv=$(venv_for "$version")
  echo "jaxviz: core suite on JAX $version ($venv)"
  start=$SECONDS
  if ! make_venv "$venv" "$version"; then
    results+=("$version|install failed|$((SECONDS - start))s"); failed=1; continue
  fi
  if [ "$prepare" = 1 ]; then results+=("$version|venv ready|$((SECONDS - start))s"); continue; fi
  log=$(mktemp)
  set +e
  "$venv/bin/python" -m pytest -q -p no:cacheprovider -m core "${pytest_args[@]}" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  summary=$(grep -E "^=* ?[0-9]+ (passed|failed|error)|(passed|failed|skipped|error).* in [0-9.]+s" "$log" | tail -1 | tr -d '=' | sed 's/^ *//;s/ *$//' || true)
  rm -f "$log"
  [ "$rc" = 0 ] && status=PASS || { status=FAIL; failed=1; }
  results+=("$version|$status: ${summary:-pytest exit $rc}|$((SECONDS - start))s")
done

printf '\n%-8s | %-60s | %s\n' "JAX" "core suite" "time (venv + tests)"
for row in "${results[@]}"; do
  IFS='|' read -r version status took <<<"$row"
  printf '%-8s | %-60s | %s\n' "$version" "$status" "$took"
done
exit $failed
