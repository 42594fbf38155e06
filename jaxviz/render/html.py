"""An HTML rendering that needs no Graphviz: the summary, the inputs colour-coded by
kind, and the group tree as nested ``<details>`` (collapsible in any browser, GitHub and
nbviewer included)."""

from __future__ import annotations

from typing import Any

from ..costs import group_heat
from ..graph import Graph, repeat_text, size_text
from ..text import esc
from ..visual import CLUSTER, HTML_COLOR, LEGEND, LEGEND_ORDER
from .devices import run_report_html
from .dot import responsive_svg

MAX_LISTED_NODES = 400  # per group; more is listed as a count
MAX_LISTED_TOTAL = 3000  # in the whole listing


REPEAT_STYLE = (f"background:{LEGEND['repeat']['color']};border:3px double {CLUSTER['color']};padding:0 4px;"
                "border-radius:3px")


def legend_html(graph: Graph | None = None) -> str:
    """The colour chips; with ``graph``, a "×N" chip when it has folded repeated layers."""
    items = []
    for kind in (k for k in LEGEND_ORDER if k != "repeat"):
        spec = LEGEND[kind]
        items.append(f'<span class="jaxviz-chip" title="{esc(spec["label"])}" '
                     f'style="background:{spec["color"]};padding:0 6px;border-radius:3px;'
                     f'margin-right:4px;color:{HTML_COLOR["on_fill"]}">{esc(spec["text"])}</span>')
    if graph is not None and any(g.kind == "repeat" for g in graph.groups):
        spec = LEGEND["repeat"]
        items.append(f'<span class="jaxviz-chip jaxviz-chip-repeat" title="{esc(spec["label"])}" '
                     f'style="{REPEAT_STYLE};margin-right:4px;color:{HTML_COLOR["on_fill"]}">{esc(spec["text"])}</span>')
    return f'<div class="jaxviz-legend" style="font-size:11px;margin:4px 0">{"".join(items)}</div>'


def inputs_html(program: Any) -> str:
    if not program.inputs:
        return ""
    rows = []
    for i in program.inputs:
        color = LEGEND[i.kind]["color"]
        what = i.aval.text if i.aval else (i.value or "")
        weak = " <i>(weak type)</i>" if i.weak_type else ""
        rows.append(f'<tr><td><code>{esc(i.name)}</code></td><td><span style="background:{color};'
                    f'padding:0 5px;border-radius:3px">{i.kind}</span></td><td><code>{esc(what)}</code>'
                    f'{weak}</td><td>{esc(i.source or "")}</td></tr>')
    table = ('<table class="jaxviz-inputs" style="font-size:12px"><tr><th>input</th><th>kind</th>'
             '<th>value</th><th>from</th></tr>' + "".join(rows) + "</table>")
    counts = ", ".join(f"{sum(i.kind == k for i in program.inputs)} {k}"
                       for k in ("traced", "static", "constant", "captured")
                       if any(i.kind == k for i in program.inputs))
    opened = " open" if len(rows) <= 8 else ""
    return f'<details{opened} style="font-size:12px"><summary>inputs ({counts})</summary>{table}</details>'



def _node_line(graph: Graph, nid: int) -> str:
    n = graph.nodes[nid]
    outs = ", ".join(a.text for a in n.outputs)
    where = f' <span style="color:{HTML_COLOR["source"]}">{esc(n.source.short())}</span>' if n.source else ""
    color = LEGEND.get(n.input_kind or n.kind, LEGEND["eqn"])["color"]
    lits = f" {esc(', '.join(n.literals))}" if n.literals else ""
    return (f'<li data-node="{nid}"><span style="border-left:4px solid {color};padding-left:4px">'
            f'<code>{esc(n.label)}{lits}</code></span> → <code>{esc(outs)}</code>{where}</li>')


def group_html(graph: Graph, gid: int, open_depth: int, budget: list[int] | None = None) -> str:
    """Nested ``<details>``; at most ``MAX_LISTED_TOTAL`` lines in all (``budget`` counts
    down), so the listing of a huge program stays a page, not megabytes."""
    budget = [MAX_LISTED_TOTAL] if budget is None else budget
    g = graph.groups[gid]
    take = max(min(len(g.nodes), MAX_LISTED_NODES, budget[0]), 0)
    budget[0] -= take
    parts = [_node_line(graph, n) for n in g.nodes[:take]]
    if len(g.nodes) > take:
        parts.append(f"<li>… {len(g.nodes) - take} more</li>")
    if budget[0] > 0:
        children = "".join(group_html(graph, c, open_depth, budget) for c in g.groups)
    elif g.groups:
        children = f"<li>… {len(g.groups)} groups not listed (use --expand or program.to_dot())</li>"
    else:
        children = ""
    body = f'<ul style="margin:2px 0 2px 8px;padding-left:10px">{children}{"".join(parts)}</ul>'
    if gid == 0:
        return body
    where = f" · {esc(g.source.short())}" if g.source else ""
    opened = " open" if g.depth <= open_depth else ""
    heat = group_heat(graph, gid)
    cost = (f' <span class="jaxviz-cost" title="estimated cost, share of the program\'s FLOPs" style="background:'
            f'{heat.fill};color:{heat.font};padding:0 4px;border-radius:3px">{esc(heat.text)}</span>') if heat else ""
    title = f"<b>{esc(g.repeat or g.name)}</b>"
    what = g.kind
    if g.kind == "repeat":  # "block ×48": drawn as a stack, says what it folds
        title = f'<b class="jaxviz-repeat" style="{REPEAT_STYLE}">{esc(g.name)}</b>'
        what = esc(repeat_text(graph, gid))
    return (f'<li style="list-style:none"><details{opened} data-group="{gid}"><summary>{title}'
            f' <span style="color:{HTML_COLOR["detail"]}">({what}, {size_text(graph, gid)}{where})</span>{cost}</summary>{body}</details></li>')


def program_html(program: Any, svg: str | None = None, note: str | None = None) -> str:
    """The notebook's HTML view: summary, inputs, the graph (SVG if given) or the listing."""
    graph = program.graph
    header = f'<div class="jaxviz-summary" style="font-family:monospace;font-size:12px">{esc(program.summary())}</div>'
    printed = ""
    if program.trace_output:
        printed = (f'<div class="jaxviz-side-effect" style="color:{HTML_COLOR["note"]};font-size:12px">'
                   "printed while tracing (runs once per compile, not on every call): "
                   f"<code>{esc(program.trace_output.strip()[:500])}</code></div>")
    notes = "".join(f'<div style="color:{HTML_COLOR["note"]};font-size:12px">{esc(n)}</div>' for n in program.notes)
    if getattr(program, "run_report", None) is not None:  # the "Run" section
        notes += run_report_html(program.run_report)
    if svg is not None:
        body = f'<div class="jaxviz-svg" style="overflow:auto;max-height:900px">{responsive_svg(svg)}</div>'
    else:
        expanded = graph.expansion(program.expand)
        depth = max((graph.groups[g].depth for g in expanded), default=0)
        body = f'<div class="jaxviz-listing" style="font-size:12px">{group_html(graph, 0, depth)}</div>'
    extra = f'<div style="color:{HTML_COLOR["source"]};font-size:11px">{esc(note)}</div>' if note else ""
    return (f'<div class="jaxviz-program">{header}{notes}{printed}{inputs_html(program)}'
            f"{legend_html(graph)}{body}{extra}</div>")
