"""What the interactive graph outside JupyterLab costs in bytes (``jaxviz/render/embed.py``).

1. The standalone viewer once: the script (``jaxviz/static/viewer.js``), as it travels in
   an output (gzip + base64), and what that adds to an ``.ipynb`` (JSON-encoded).
2. Per graph output: its ``text/html`` without the viewer (the static drawing, the payload
   as JSON, the loader) against the static HTML alone.
3. A notebook with 10 graphs (transformer train steps of 1 to 10 blocks, and small MLPs):
   the bytes the interactive HTML adds to the saved ``.ipynb`` over the static HTML alone,
   and its ratio to 10 × the viewer (what carrying the viewer in every output would add).

Usage: ``.venv/bin/python benchmarks/bench_frontends.py``. Prints its figures; not a unit
test.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax.numpy as jnp  # noqa: E402
import nbformat  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.render import embed  # noqa: E402

N_GRAPHS = 10


def kb(n: int) -> str:
    return f"{n / 1024:,.1f} KiB"


def programs() -> list:
    """10 programs: train steps of 1, 2, 4 and 8 blocks, and 6 small MLPs."""
    out = []
    for layers in (1, 2, 4, 8):
        out.append(jaxviz.trace(models.train_step, models.init_params(layers), models.tokens()))
    for depth in range(1, N_GRAPHS - len(out) + 1):
        out.append(jaxviz.trace(mlp, jnp.ones((4, 8)), [jnp.ones((8, 8))] * depth))
    return out


def mlp(x, ws):
    for w in ws:
        x = jnp.tanh(x @ w)
    return (x ** 2).mean()


def notebook_bytes(bundles: list[dict]) -> int:
    nb = nbformat.v4.new_notebook()
    for bundle in bundles:
        cell = nbformat.v4.new_code_cell("%%jaxpr\n...")
        cell.outputs = [nbformat.v4.new_output("display_data", data=bundle)]
        nb.cells.append(cell)
    return len(nbformat.writes(nb).encode("utf-8"))


def main() -> None:
    if embed.viewer_payload() is None:
        sys.exit(f"{embed.VIEWER_PATH} is not built: run `npm run build` in labextension/")
    script = embed.VIEWER_PATH.stat().st_size
    packed = len(embed.viewer_payload())
    in_ipynb = notebook_bytes([{"text/html": f'<script class="jaxviz-viewer">{embed.viewer_payload()}</script>'}]) \
        - notebook_bytes([{"text/html": ""}])
    raw_in_ipynb = notebook_bytes([{"text/html": f"<script>{embed.viewer_source()}</script>"}]) \
        - notebook_bytes([{"text/html": ""}])
    print("viewer, once per page:")
    print(f"  script {kb(script)}; in an output (gzip+base64) {kb(packed)}; "
          f"in the .ipynb {kb(in_ipynb)} (the script as JSON-escaped text would be {kb(raw_in_ipynb)}, "
          f"{raw_in_ipynb / in_ipynb:.1f}x)")

    embed.PLACEMENT = embed.ViewerPlacement()  # a fresh session: the first output carries it
    interactive = [p._repr_mimebundle_() for p in programs()]
    static = []
    for bundle in interactive:
        html = bundle["text/html"]
        start = html.index('<div class="jaxviz-static">') + len('<div class="jaxviz-static">')
        end = html.index('</div><div class="jaxviz-scripts"')
        static.append({**bundle, "text/html": html[start:end]})
    print("per graph output (text/html, a later output: no viewer):")
    for i, (a, b) in enumerate(zip(interactive, static)):
        if i == 0:
            continue
        added = len(a["text/html"]) - len(b["text/html"])
        print(f"  {b['text/plain'].splitlines()[0][:60]:<60} static {kb(len(b['text/html'])):>10}"
              f" · interactive adds {kb(added):>10}")
    carried = sum('class="jaxviz-viewer"' in b["text/html"] for b in interactive)
    added = notebook_bytes(interactive) - notebook_bytes(static)
    print(f"a notebook with {N_GRAPHS} graphs ({carried} output carries the viewer):")
    print(f"  .ipynb with static HTML {kb(notebook_bytes(static))}, interactive {kb(notebook_bytes(interactive))}:"
          f" adds {kb(added)}")
    print(f"  ratio to {N_GRAPHS} x viewer ({kb(N_GRAPHS * in_ipynb)}): {added / (N_GRAPHS * in_ipynb):.3f}")


if __name__ == "__main__":
    main()
