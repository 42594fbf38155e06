"""``rich`` renderables for terminals and plain IPython: the summary, inputs coloured by
kind and the group tree, in the same colours as the drawings."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from ..costs import group_heat
from ..graph import LEGEND, Graph, repeat_text, size_text
from ..visual import TERMINAL_STYLE
from .devices import run_report_table

MAX_NODES_PER_GROUP = 40


def _styled(kind: str, text: str) -> Text:
    return Text(text, style=f"bold {LEGEND[kind]['color']}")


def inputs_table(program: Any) -> Table:
    table = Table(title="inputs", show_header=True, header_style="bold", box=None)
    for col in ("input", "kind", "value", "from"):
        table.add_column(col)
    for i in program.inputs:
        what = i.aval.text if i.aval else (i.value or "")
        table.add_row(i.name, _styled(i.kind, i.kind), what + (" (weak)" if i.weak_type else ""), i.source or "")
    return table


def group_tree(graph: Graph, expanded: frozenset[int], gid: int = 0, tree: Tree | None = None) -> Tree:
    """Groups as a tree; only expanded groups list their members."""
    g = graph.groups[gid]
    where = f" [dim]{g.source.short()}[/dim]" if g.source else ""
    what = repeat_text(graph, gid) if g.kind == "repeat" else g.kind  # "48 identical block layers"
    label = f"[bold]{g.repeat or g.name}[/bold] [dim]({what}, {size_text(graph, gid)})[/dim]{where}"
    heat = group_heat(graph, gid)
    if heat is not None:
        label += f" [{heat.font} on {heat.fill}] {heat.text} [/]"
    node = tree.add(label) if tree is not None else Tree(label)
    if gid not in expanded:
        return node
    for child in g.groups:
        group_tree(graph, expanded, child, node)
    for nid in g.nodes[:MAX_NODES_PER_GROUP]:
        n = graph.nodes[nid]
        outs = ", ".join(a.text for a in n.outputs)
        kind = n.input_kind or ("output" if n.kind == "output" else None)
        label = _styled(kind, n.label) if kind else Text(n.label)
        line = Text.assemble(label, f" → {outs}" if outs else "",
                             (f"  {n.source.short()}" if n.source else "", "dim"))
        node.add(line)
    if len(g.nodes) > MAX_NODES_PER_GROUP:
        node.add(f"[dim]… {len(g.nodes) - MAX_NODES_PER_GROUP} more[/dim]")
    return node


def program_renderables(program: Any) -> Any:
    yield Text(program.summary(), style="bold")
    if program.trace_output:
        yield Text(f"printed while tracing (once per compile): {program.trace_output.strip()[:300]}",
                   style=TERMINAL_STYLE["note"])
    for note in program.notes:
        yield Text(note, style=TERMINAL_STYLE["note"])
    if getattr(program, "run_report", None) is not None:  # the "Run" section
        yield run_report_table(program.run_report)
    if program.inputs:
        yield inputs_table(program)
    yield group_tree(program.graph, program.graph.expansion(program.expand))
