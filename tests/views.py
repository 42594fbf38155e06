"""What a view must draw, computed the slow way from the model's edges and parent chains
(not from the graph's edge buckets, which are made per group on first use): shared by the
tests that check lazily made buckets against it (test_scale, test_corpus); and where dot
puts a first view's inputs and outputs (test_first_view, test_corpus)."""

from __future__ import annotations

import re
from typing import Any

from jaxviz.render.dot import svg_items


def visible_item(graph: Any, expanded: frozenset[int], node_id: int) -> tuple[str, int]:
    """The item a view draws for a node: the outermost closed group around it, else the
    node itself (read from the parent chain, not from the graph's edge buckets)."""
    chain = []
    g = graph.nodes[node_id].group
    while g is not None:
        chain.append(g)
        g = graph.groups[g].parent
    closed = [g for g in reversed(chain) if g not in expanded]
    return ("g", closed[0]) if closed else ("n", node_id)


def edges_problem(graph: Any, request: Any) -> str:
    """'' when ``graph.view(request)`` draws each value crossing between two visible items
    once, between the items around its ends, with its type; else what differs."""
    view = graph.view(request)
    drawn = {(e.src, e.dst): sorted(a.text for a in e.avals) for e in view.edges}
    expected: dict[tuple[Any, Any], dict[str, str]] = {}
    for e in graph.edges:
        a, b = (visible_item(graph, view.expanded, n) for n in (e.src, e.dst))
        if a != b:
            expected.setdefault((a, b), {})[f"{e.src}:{e.var}"] = e.aval.text
    wanted = {pair: sorted(values.values()) for pair, values in expected.items()}
    if drawn == wanted:
        return ""
    wrong = sorted({(k, tuple(v)) for k, v in drawn.items()} ^ {(k, tuple(v)) for k, v in wanted.items()},
                   key=str)[:3]
    return f"view {request!r}: drawn and expected edges differ, e.g. {wrong}"


def rows_problem(program: Any, svg: str) -> str | None:
    """Where the first view, as dot lays it out (``svg``), has an input below the top of
    anything but the top row (inputs, captured values, the legend), or an output above
    the bottom of anything but the bottom row; None when the rows hold."""
    graph = program.graph
    items = svg_items(svg)
    root = graph.groups[0]
    top_row = {f"n{n}" for n in root.nodes if graph.nodes[n].kind in ("input", "const")}
    top_row |= {f"g{c}" for c in root.groups if graph.groups[c].kind == "inputs"}
    bottom_row = {f"n{n}" for n in root.nodes if graph.nodes[n].kind == "output"}
    bottom_row |= {f"g{c}" for c in root.groups if graph.groups[c].kind == "outputs"}
    rest = {k: box for k, (box, _) in items.items()
            if k not in top_row | bottom_row and re.fullmatch(r"(cluster_)?[ng]\d+", k)}
    inputs = {k: items[k][0] for k in top_row if k in items}
    outputs = {k: items[k][0] for k in bottom_row if k in items}
    top = min(box[1] for box in rest.values())
    bottom = max(box[3] for box in rest.values())
    low = {k: box[3] for k, box in inputs.items() if box[3] > top}
    high = {k: box[1] for k, box in outputs.items() if box[1] < bottom}
    if low or high:
        return f"inputs reaching below {top:.0f} pt: {low}; outputs above {bottom:.0f} pt: {high}"
    return None
