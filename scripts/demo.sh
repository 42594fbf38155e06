#!/usr/bin/env bash
# The main job: open the demo notebooks in JupyterLab (prints the URL).
#   bash scripts/demo.sh            # JupyterLab on demo_notebooks/
#   bash scripts/demo.sh --headless # execute every demo, write HTML copies to demo_output/
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh "demo,test" graphviz
if [ "${1:-}" = "--headless" ]; then
  mkdir -p demo_output
  for nb in demo_notebooks/*.ipynb; do
    echo "jaxviz: executing $nb"
    .venv/bin/jupyter nbconvert --to html --execute --allow-errors \
      --ExecutePreprocessor.timeout=600 --output-dir demo_output "$nb"
  done
  echo "jaxviz: HTML copies written to $(pwd)/demo_output/"
  exit 0
fi
port="${JAXVIZ_PORT:-8888}"
extra=()
if [ "$(id -u)" = 0 ]; then
  # JupyterLab refuses to run as root unless told to (containers, fresh cloud machines).
  echo "jaxviz: running as root: starting JupyterLab with --allow-root"
  extra+=(--allow-root)
fi
echo "jaxviz: starting JupyterLab on demo_notebooks/ — open the URL printed below (port $port)"
exec .venv/bin/jupyter lab --no-browser --ip=127.0.0.1 --port="$port" \
  --ServerApp.root_dir="$(pwd)/demo_notebooks" "${extra[@]}"
