#!/usr/bin/env bash
# Creates .venv (if needed) and installs jaxviz with the given extras, plus Debian's
# graphviz/chromium when missing and we are allowed to (root + apt-get).
# Usage: source-free; call as: bash scripts/setup_env.sh EXTRAS [apt-packages...]
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-test}"; shift || true
need_apt=()
for pkg in "$@"; do
  case "$pkg" in
    graphviz) command -v dot >/dev/null 2>&1 || need_apt+=(graphviz) ;;
    chromium) command -v chromium >/dev/null 2>&1 || need_apt+=(chromium) ;;
    *) need_apt+=("$pkg") ;;
  esac
done
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "jaxviz: installing Debian packages: ${need_apt[*]}"
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need_apt[@]}" >/dev/null
  else
    echo "jaxviz: missing ${need_apt[*]} (not root, skipping; tests that need them are skipped)" >&2
  fi
fi
# The JupyterLab extension's npm packages (labextension/node_modules) download while the
# Python packages install: npm waits on the network, the install mostly on the CPU.
ext=labextension out=jaxviz/labextension
npm_ci=
if command -v npm >/dev/null 2>&1 \
   && { [ ! -d "$ext/node_modules" ] || [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; }; then
  (cd "$ext" && npm ci --no-audit --no-fund --loglevel=error 2>&1 | { grep -v "^npm warn" || true; }) &
  npm_ci=$!
fi
[ -x .venv/bin/python ] || python3 -m venv .venv
stamp=".venv/.jaxviz-installed-$extras"
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  # The extension is built below, once its npm packages are in: not by the editable
  # build's hook (hatch-jupyter-builder), which would install them again.
  SKIP_JUPYTER_BUILDER=1 bash scripts/install_packages.sh .venv -e ".[$extras]"
  touch "$stamp"
fi
# jaxviz's own modules (installed editable, so not compiled by the install), with the
# tests' and benchmarks': compiled once here, where PYTHONDONTWRITEBYTECODE is set (as on
# this machine), each kernel and script would compile them again (0.45 CPU-s a kernel).
.venv/bin/python -m compileall -q -j 0 jaxviz tests benchmarks >/dev/null
[ -z "$npm_ci" ] || wait "$npm_ci"
# The JupyterLab extension (labextension/ → jaxviz/labextension) and the standalone viewer
# (→ jaxviz/static/viewer.js): built from source when npm
# is there and a source changed, then linked into the venv so that JupyterLab loads it.
if command -v npm >/dev/null 2>&1; then
  viewer=jaxviz/static/viewer.js  # the standalone viewer, built by the same `npm run build`
  if [ ! -f "$out/install.json" ] || [ ! -f "$viewer" ] \
     || [ -n "$(find "$ext/src" "$ext/style" "$ext/package.json" "$ext/tsconfig.json" "$ext/build-viewer.mjs" \
                "$ext/build-schema.mjs" jaxviz/schema jaxviz/visual.json -newer "$out/install.json" -print -quit)" ] \
     || [ -n "$(find "$ext/src" "$ext/style" "$ext/build-viewer.mjs" jaxviz/visual.json -newer "$viewer" -print -quit)" ]; then
    echo "jaxviz: building the JupyterLab extension"
    log=$(cd "$ext" && PATH="$PWD/../.venv/bin:$PATH" npm run build 2>&1) || { echo "$log"; exit 1; }
  fi
fi
if [ -f jaxviz/labextension/package.json ]; then
  dest=.venv/share/jupyter/labextensions/jaxviz
  if [ "$(readlink "$dest" 2>/dev/null)" != "$PWD/jaxviz/labextension" ]; then
    mkdir -p "$(dirname "$dest")" && rm -rf "$dest" && ln -s "$PWD/jaxviz/labextension" "$dest"
  fi
fi
