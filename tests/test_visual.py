"""The visual language has one source, ``jaxviz/visual.json``: the kernel's renderers and
the browser's read it, no code or hand-written CSS spells out a colour (the CSS's theme,
light and dark, is generated from it) (the parity of
the two DOTs, built from it, is checked in ``tests/test_labextension_unit.py``)."""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from jaxviz import costs, graph, visual, widgets
from jaxviz.render import dot

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "jaxviz" / "visual.json"
# A colour written in code: #rgb, #rgba, #rrggbb, #rrggbbaa, rgb(), rgba(), hsl(), hsla(), or
# a terminal colour named in a rich style (style="bold red").
TERMINAL_COLOURS = "black|red|green|yellow|blue|magenta|cyan|white|grey|gray|orange"
COLOUR = re.compile(r"(?<![\w&])#(?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{6}|[0-9A-Fa-f]{3,4})\b|\b(?:rgba?|hsla?)\("
                    rf"|style=f?[\"'][^\"']*(?<![\w-])(?:{TERMINAL_COLOURS})(?![\w-])")
STYLE = ROOT / "labextension" / "style"
# Generated from visual.json by labextension/build-visual.mjs (checked below), or built.
GENERATED = {STYLE / "visual.css", STYLE / "page.css"}
BUILT = [ROOT / "jaxviz" / "labextension", ROOT / "jaxviz" / "static" / "viewer.js"]
CODE_SUFFIXES = {".py", ".ts", ".js", ".mjs", ".css", ".html", ".json", ".svg"}


def _drawing_sources() -> list[Path]:
    return sorted([*(ROOT / "jaxviz").rglob("*.py"), *(ROOT / "labextension" / "src").rglob("*.ts")])


def _sources_that_may_not_hold_colours() -> list[Path]:
    found = [*(ROOT / "jaxviz").rglob("*"), *(ROOT / "labextension" / "src").rglob("*"), *STYLE.rglob("*")]
    return sorted(p for p in found
                  if p.is_file() and p.suffix in CODE_SUFFIXES and p != DATA and p not in GENERATED
                  and not any(p == b or b in p.parents for b in BUILT) and "__pycache__" not in p.parts)


def test_every_colour_is_written_in_visual_json_only():
    """Python renderers, TypeScript and the CSS name a colour by its role in visual.json;
    only the CSS generated from it spells one out."""
    sources = _sources_that_may_not_hold_colours()
    assert {ROOT / "jaxviz" / "render" / "html.py", ROOT / "jaxviz" / "widgets.py",
            ROOT / "labextension" / "src" / "standalone" / "viewer.ts", STYLE / "base.css"} <= set(sources)
    written = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}"
               for p in sources
               for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
               if COLOUR.search(line)]
    assert not written, "colours written outside jaxviz/visual.json:\n" + "\n".join(written)


def test_the_colour_check_finds_colours():
    lines = ['color:#c00;', "background:#F7F7F7", "fill: rgba(0, 0, 0, 0.5)", "'#E8590C'", "#a15c0080",
             'Text(note, style="yellow")', "Text(w, style='bold red')"]
    assert all(COLOUR.search(line) for line in lines)
    assert not any(COLOUR.search(line) for line in ["# a comment", "issue #17", "&#1234;", "f(#)",
                                                    'style="bold"', 'Text(w, style=TERMINAL_STYLE["note"])',
                                                    "style='white-space:nowrap'"])


def _resolve(value, data) -> str:
    """A theme value as build-visual.mjs writes it into CSS."""
    if isinstance(value, str):
        return value
    if "from" in value:
        found = data
        for key in value["from"].split("."):
            found = found[key]
        assert isinstance(found, str), value
        return found
    return f"color-mix(in srgb, {value['tint']} {value['percent']}%, var(--jp-layout-color0))"


def _css_blocks(css: str) -> list[tuple[str, dict[str, str]]]:
    """Each rule of a generated file: its selector and its custom properties."""
    css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
    return [(" ".join(selector.split()), dict(re.findall(r"--([\w-]+):\s*([^;]+);", body)))
            for selector, body in re.findall(r"([^{}]+)\{([^}]*)\}", css)]


def test_generated_css_holds_visual_json_s_theme_light_and_dark():
    data = json.loads(DATA.read_text("utf-8"))
    graph_rules = _css_blocks((STYLE / "visual.css").read_text("utf-8"))
    page_rules = _css_blocks((STYLE / "page.css").read_text("utf-8"))
    expected_graph = [{f"jp-jaxviz-{k}": _resolve(v, data) for k, v in data["theme"][t].items()}
                      for t in ("light", "dark")]
    expected_page = [{f"jp-{k}": _resolve(v, data) for k, v in data["page"][t].items()} for t in ("light", "dark")]
    assert [props for _, props in graph_rules] == expected_graph
    assert [props for _, props in page_rules] == expected_page
    (light, _), (dark, _) = graph_rules
    assert light == ".jp-jaxviz-graph"
    assert "body[data-jp-theme-light='false'] .jp-jaxviz-graph" in dark and ".vscode-dark" in dark
    # An open group's light fill is the DOT's: the CSS repaints the SVG with the same colour.
    assert expected_graph[0]["jp-jaxviz-cluster-call"] == visual.GROUP_FILL["call"]
    assert expected_graph[0]["jp-jaxviz-box-fill"] == visual.BOX_FILL


def test_the_generated_css_reaches_jupyterlab_and_the_standalone_viewer():
    assert "@import url('visual.css');" in (STYLE / "index.css").read_text("utf-8")
    assert "import './visual.css';" in (STYLE / "index.js").read_text("utf-8")
    viewer = (ROOT / "labextension" / "src" / "standalone" / "viewer.ts").read_text("utf-8")
    assert "from '../../style/visual.css'" in viewer and "from '../../style/page.css'" in viewer
    for script in ("build", "build:prod"):
        assert "npm run build:visual" in json.loads((ROOT / "labextension" / "package.json").read_text("utf-8"))[
            "scripts"][script]


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js not installed")
def test_build_visual_check_finds_the_generated_css_up_to_date():
    done = subprocess.run(["node", "build-visual.mjs", "--check"], cwd=ROOT / "labextension",
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr


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
    assert widgets.STAGE_COLORS is visual.STAGE_COLORS and visual.HTML_COLOR is visual.VISUAL["html"]
    assert visual.TERMINAL_STYLE is visual.VISUAL["terminal"]


def test_visual_is_a_leaf_that_imports_nothing_from_jaxviz():
    tree = ast.parse((ROOT / "jaxviz" / "visual.py").read_text("utf-8"))
    imported = [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m == "" or m.startswith("jaxviz")], imported


def test_code_and_fix_blocks_follow_the_page_s_theme():
    """An error explanation's code and fix blocks sit behind the theme's own text colour: in
    a dark theme a fixed light background would leave light text on light grey. They take
    JupyterLab's theme variables, with the light value where a page has none."""
    for role in ("code_background", "fix_background", "detail", "line_number"):
        value = visual.HTML_COLOR[role]
        assert "var(--jp-" in value, (role, value)
    assert re.search(r"var\(--jp-layout-color2, #F7F7F7\)", visual.HTML_COLOR["code_background"])
