"""What a view must draw, computed the slow way from the model's edges and parent chains
(not from the graph's edge buckets, which are made per group on first use): shared by the
tests that check lazily made buckets against it (test_scale, test_corpus)."""

from __future__ import annotations

from typing import Any


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
