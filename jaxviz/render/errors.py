"""An explained tracer error as a MIME bundle (HTML with the provenance graph, and text)
and as ``rich`` renderables (a terminal); the provenance path is drawn by ``render.dot``
with its ``Marks``."""

from __future__ import annotations

from typing import Any

from rich.panel import Panel
from rich.text import Text
from rich.tree import Tree

from ..errors.explanation import Explanation
from ..graph import LEGEND
from ..marks import Marks
from ..text import esc
from ..visual import HTML_COLOR, PATH_COLOR, PATH_END_FILL, TERMINAL_STYLE
from .dot import DotUnavailable, dot_available, render_svg, view_to_dot


def _code_html(text: str) -> str:
    """Inline code for backquoted spans in our sentences."""
    parts = esc(text).split("`")
    return "".join(f"<code>{p}</code>" if k % 2 else p for k, p in enumerate(parts))


def explanation_dot(e: Explanation) -> str | None:
    """Graphviz DOT of the provenance graph, the path highlighted."""
    if e.graph is None:
        return None
    refused = frozenset(("n", n.id) for n in e.graph.nodes if n.kind == "output")
    marks = Marks(path=frozenset(("n", n) for n in e.path), path_ends=refused)
    return view_to_dot(e.graph.view("all"), legend=False, marks=marks).source


def explanation_mimebundle(e: Explanation) -> dict[str, Any]:
    svg = None
    dot = explanation_dot(e) if dot_available() else None
    if dot is not None:
        try:
            svg = render_svg(dot)
        except DotUnavailable:
            svg = None
    return {"text/plain": e.text(), "text/html": explanation_html(e, svg)}


def explanation_html(e: Explanation, svg: str | None) -> str:
    parts = [f'<div class="jaxviz-explanation" style="border-left:4px solid {PATH_COLOR};'
             'padding:4px 10px;margin:4px 0;font-size:13px">',
             f'<div style="font-weight:bold;color:{PATH_COLOR}">jaxviz · {esc(e.kind)}</div>',
             f"<div>{_code_html(e.headline())}.</div>"]
    if e.line is not None:
        t = e.line.text
        num = e.line.cell_line if e.line.cell_line is not None else e.line.line
        if e.line.expression:
            code = (esc(t[: e.line.col]) + f'<mark style="background:{PATH_END_FILL};color:inherit;'
                    f'border-bottom:2px solid {PATH_COLOR}">{esc(e.line.expression)}</mark>'
                    + esc(t[e.line.end_col:]))
        else:
            code = esc(t)
        parts.append(f'<div style="color:{HTML_COLOR["detail"]};font-size:11px;margin-top:4px">{esc(e.line.where())}</div>'
                     f'<pre style="margin:2px 0;padding:4px;background:{HTML_COLOR["code_background"]}">'
                     f'<span style="color:{HTML_COLOR["line_number"]}">{num} │ </span>{code}</pre>')
    why = e.why_lines()[1:]
    if why:
        parts.append("<ul style='margin:4px 0'>" + "".join(f"<li>{_code_html(w.strip().lstrip('← '))}</li>"
                                                           for w in why) + "</ul>")
    for note in e.notes:
        parts.append(f'<div style="color:{HTML_COLOR["note"]};font-size:12px">note: {esc(note)}</div>')
    if e.fixes:
        items = []
        for k, f in enumerate(e.fixes):
            code = (f'<pre style="margin:2px 0;padding:4px;background:{HTML_COLOR["fix_background"]}">'
                    f'{esc(f.code)}</pre>' if f.code else "")
            note = f'<div style="color:{HTML_COLOR["detail"]};font-size:11px">{esc(f.note)}</div>' if f.note else ""
            first = ' style="font-weight:bold"' if k == 0 else ""
            items.append(f"<li><span{first}>{_code_html(f.title)}</span>{code}{note}</li>")
        parts.append(f'<div style="margin-top:6px"><b>Fixes</b>, best first:<ol style="margin:2px 0">'
                     f'{"".join(items)}</ol></div>')
    if e.graph is not None:
        legend = (f'<span style="color:{PATH_COLOR}">red</span>: the path from the inputs '
                  "to the refused value")
        body = (f'<div style="overflow:auto;max-height:600px">{svg}</div>' if svg is not None else
                "<pre style='font-size:12px'>" + esc("\n".join(e.path_lines())) + "</pre>")
        parts.append(f'<details open><summary><b>Provenance</b> ({legend})</summary>{body}</details>')
    parts.append(f"<details><summary style='color:{HTML_COLOR['detail']}'>JAX's message</summary>"
                 "<pre style='font-size:11px;"
                 f"white-space:pre-wrap'>{esc(e.jax_message)}</pre></details></div>")
    return "".join(parts)


def explanation_rich(e: Explanation) -> Any:
    body = Text()
    body.append(e.headline() + ".\n", style="bold")
    if e.line is not None:
        body.append(f"{e.line.where()}\n", style="dim")
        num = f"{e.line.cell_line if e.line.cell_line is not None else e.line.line} │ "
        body.append(num, style="dim")
        t = e.line.text
        if e.line.expression:
            body.append(t[: e.line.col])
            body.append(e.line.expression, style=f"bold underline {PATH_COLOR}")
            body.append(t[e.line.end_col:] + "\n")
        else:
            body.append(t + "\n")
    for w in e.why_lines()[1:]:
        body.append("• " + w.strip().replace("`", "") + "\n")
    for note in e.notes:
        body.append(f"note: {note}\n", style=TERMINAL_STYLE["note"])
    yield Panel(body, title=f"jaxviz · {e.kind}", border_style=PATH_COLOR, expand=False)
    path = e.path_lines()
    if path:
        tree = Tree("[bold]provenance[/bold] (path from the inputs to the value)")
        for p in path:
            color = LEGEND["traced"]["color"] if not p.startswith(" ") and not p.startswith("→") else None
            tree.add(Text(p.strip(), style=f"bold {color}" if color else (PATH_COLOR if p.startswith("→") else "")))
        yield tree
    if e.fixes:
        fixes = Text("fixes, best first:\n", style="bold")
        for k, f in enumerate(e.fixes, 1):
            fixes.append(f"{k}. {f.title.replace('`', '')}\n", style="bold" if k == 1 else "")
            for c in f.code.splitlines():
                fixes.append(f"     {c}\n", style=TERMINAL_STYLE["fix"])
            if f.note:
                fixes.append(f"     ({f.note})\n", style="dim")
        yield fixes
