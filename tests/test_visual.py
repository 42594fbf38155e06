"""The visual language has one source, ``jaxviz/visual.json``: the kernel's renderers and
the browser's read it, and no drawing code carries a copy of its colours (the parity of
the two DOTs, built from it, is checked in ``tests/test_labextension_unit.py``)."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

from jaxviz import costs, graph, visual
from jaxviz.render import dot

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "jaxviz" / "visual.json"
HEX = re.compile(r"#[0-9A-Fa-f]{6}\b")
# Files that hold colours of the file's palette for another reason than the graph's
# picture. White is left out: pages paint their own background with it.
NOT_THE_GRAPH = {
    "jaxviz/widgets.py": "the live monitor's stage colours (trace, lower, compile)",
    "labextension/src/standaloneviewer.ts": "JupyterLab's theme colours for pages without them, "
                                            "and the dark theme's tints of base.css",
}


def _colours(value) -> set[str]:
    if isinstance(value, dict):
        return set().union(*map(_colours, value.values()))
    if isinstance(value, list):
        return set().union(*map(_colours, value))
    return {value.upper()} if isinstance(value, str) and HEX.fullmatch(value) else set()


def _drawing_sources() -> list[Path]:
    files = [*(ROOT / "jaxviz").rglob("*.py"), *(ROOT / "labextension" / "src").glob("*.ts")]
    return sorted(p for p in files if str(p.relative_to(ROOT)) not in NOT_THE_GRAPH)


def test_no_drawing_code_copies_a_colour_of_the_visual_language():
    palette = _colours(json.loads(DATA.read_text("utf-8"))) - {"#FFFFFF"}
    assert len(palette) > 30  # the legend, group fills, heat stops, marks
    copies = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
              for p in _drawing_sources()
              for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
              if any(c.upper() in palette for c in HEX.findall(line))]
    assert not copies, "colours copied out of jaxviz/visual.json:\n" + "\n".join(copies)


def test_no_drawing_code_copies_the_legend_s_wording():
    data = json.loads(DATA.read_text("utf-8"))
    sentences = [spec["label"] for spec in [*data["legend"].values(), *data["marks"].values()]]
    sentences = [s for s in sentences if len(s) > 12]  # not "output": what is long is the wording
    assert len(sentences) >= 10
    copies = [f"{p.relative_to(ROOT)}: {s!r}" for p in _drawing_sources() for s in sentences
              if s in p.read_text("utf-8")]
    assert not copies, "legend wording copied out of jaxviz/visual.json:\n" + "\n".join(copies)


def test_python_reads_the_file():
    data = json.loads(DATA.read_text("utf-8"))
    assert graph.LEGEND == data["legend"] and graph.LEGEND is visual.LEGEND
    assert list(costs.HEAT_STOPS) == data["heat"]["stops"] and costs.HEAT_MIN_FLOPS == data["heat"]["min_flops"]
    assert dot.MARK_STYLE is visual.MARK_STYLE and dot.GROUP_FILL is visual.GROUP_FILL


def test_visual_is_a_leaf_that_imports_nothing_from_jaxviz():
    tree = ast.parse((ROOT / "jaxviz" / "visual.py").read_text("utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m == "" or m.startswith("jaxviz")], imported


def _css_vars(block: str) -> dict[str, str]:
    return dict(re.findall(r"--jp-jaxviz-([\w-]+):\s*(#[0-9a-fA-F]{6});", block))


def test_light_theme_css_draws_open_groups_in_the_file_s_colours():
    """base.css restyles the SVG for JupyterLab's themes; in the light one an open group
    keeps the DOT's fill (a copy the CSS cannot avoid: it cannot read the SVG's fill)."""
    css = (ROOT / "labextension" / "style" / "base.css").read_text("utf-8")
    first = css.index("--jp-jaxviz-cluster-call:")  # the light block comes first
    light = _css_vars(css[css.rindex("{", 0, first):css.index("}", first)])
    for kind in ("call", "transform", "eqn", "jaxpr", "repeat", "phase"):
        assert light[f"cluster-{kind}"].upper() == visual.GROUP_FILL[kind], kind
    assert light["cluster-other"].upper() == visual.CLUSTER_FILL
    assert light["phase-line"].upper() == visual.PHASE["color"]
    assert set(re.findall(r"var\(--jaxviz-fill, (#[0-9a-fA-F]{6})\)", css)) == {visual.BOX_FILL.lower()}
