"""Regenerates docs/screenshot.png: the first view of a 12-block transformer train step
(benchmarks/models.py), as `%jaxpr` opens it: the forward, backward and update phases, the
blocks of each folded into one "block ×12".

Usage: .venv/bin/python docs/make_screenshot.py   (needs Graphviz `dot` and chromium)
"""

import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "benchmarks"))

import models  # noqa: E402

import jaxviz  # noqa: E402
from jaxviz.render.dot import render_svg, view_to_dot  # noqa: E402


def main() -> None:
    program = jaxviz.trace(models.train_step, models.init_params(12), models.tokens())
    graph = program.graph
    svg = render_svg(view_to_dot(graph.view("auto")))
    page = ("<html><head><style>svg{width:100%;height:auto}</style></head>"
            "<body style='margin:0;background:white'>"
            f"<div style='padding:6px 10px;font:14px monospace'>{program.summary()}</div>{svg}</body></html>")
    with tempfile.NamedTemporaryFile("w", suffix=".html", delete=False) as f:
        f.write(page)
    out = os.path.join(HERE, "screenshot.png")
    subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1400,1400", f"--screenshot={out}", f.name], check=True,
                   capture_output=True)
    os.unlink(f.name)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
