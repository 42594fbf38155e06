"""Graph model view → Graphviz DOT (via the ``graphviz`` package) → SVG.

Expanded groups are clusters; collapsed groups are single boxes that state their size and
their input/output values, so a view of any program stays small enough for ``dot``.
"""

from __future__ import annotations

import functools
import re
import shutil
from contextlib import AbstractContextManager
from typing import Any
from xml.etree import ElementTree

import graphviz

from ..costs import comm_label, cost_label, group_heat, own_comm_label
from ..graph import Graph, Item, View, VisibleEdge, repeat_text, size_text
from ..marks import Marks
from ..visual import (
    BOX_FILL,
    CLUSTER,
    CLUSTER_FILL,
    COLLECTIVE_PRIMITIVES,
    COMM_STYLE,
    DOT_DENSE,
    DOT_EDGE,
    DOT_GRAPH,
    DOT_NODE,
    GROUP_FILL,
    LEGEND,
    LEGEND_CLUSTER,
    LEGEND_FONTSIZE,
    LEGEND_ORDER,
    MARK_STYLE,
    MAX_CURVED_EDGES,
    MAX_LABELLED_EDGES,
    PATH_COLOR,
    PATH_END_FILL,
    PHASE,
    REPEAT_BOX,
    REPEAT_CLUSTER_STYLE,
)

# The colours, shapes and limits come from jaxviz/visual.json, which the browser's
# renderer (labextension/src/graph/dot.ts) reads too. This renderer is the reference: the
# browser's DOT is checked against it (tests/test_labextension_unit.py).


def _mark(attrs: dict[str, str], item: Item, marks: Marks | None, cluster: bool = False) -> dict[str, str]:
    if marks is not None and (item in marks.path or item in marks.path_ends):
        attrs.update(color=PATH_COLOR, penwidth="2.5")
        if item in marks.path_ends:
            attrs["fillcolor"] = PATH_END_FILL
    status = marks.status.get(item) if marks is not None else None
    if marks is None or status is None:
        return attrs
    style = MARK_STYLE[status]
    note = marks.notes.get(item)
    attrs.update(color=style["color"], penwidth="2", fillcolor=style["fillcolor"])
    attrs["class"] = f"{attrs.get('class', '')} jaxviz-{status}".strip()
    if status == "removed":
        attrs["style"] = f"{attrs.get('style', 'filled')},dashed"
    if note:
        sep = " · " if cluster else "\n"
        attrs["label"] = f"{attrs.get('label', '')}{sep}{note}"
        attrs["tooltip"] = f"{attrs.get('tooltip', '')}\n{status}: {note}"
    return attrs


class DotUnavailable(RuntimeError):
    """The Graphviz ``dot`` binary is not installed: render another way."""


@functools.lru_cache(maxsize=1)
def dot_available() -> bool:
    return shutil.which("dot") is not None


def item_id(item: Item) -> str:
    return f"{item[0]}{item[1]}"


def node_attrs(graph: Graph, nid: int) -> dict[str, str]:
    """DOT attributes of a node (an equation, an input, an output)."""
    n = graph.nodes[nid]
    where = f"\n{n.source.short()}" if n.source else ""
    tooltip = [n.label]
    if n.outputs:
        tooltip.append("→ " + ", ".join(a.text for a in n.outputs))
    tooltip += [f"{k}={v}" for k, v in n.params.items()]
    if n.source:
        tooltip.append(f"{n.source.short()}: {n.source.text or ''}")
    if n.flops or n.bytes:
        tooltip.append(f"cost (estimate): {cost_label(n.flops, n.bytes)}")
    attrs = {"id": f"n{nid}", "class": f"jaxviz-{n.kind}", "tooltip": "\n".join(tooltip)}
    placed = f"\n{n.params['sharding']}" if n.params.get("sharding") else ""  # an input's or output's sharding
    if n.kind == "eqn":
        # A scan's initial carry 0.0 beside its name reads as a version: tooltip only.
        holds = graph.groups[n.group].holder == nid
        lits = f" {', '.join(n.literals)}" if n.literals and not holds else ""
        collective = n.primitive in COLLECTIVE_PRIMITIVES  # a communication node keeps its colour in any theme
        attrs.update(label=f"{n.label}{lits}{where}", shape="box", style="rounded,filled",
                     fillcolor=LEGEND["collective" if collective else "eqn"]["color"],
                     **{"class": "jaxviz-collective"} if collective else {})
    elif n.kind == "output":
        look = LEGEND["lost" if n.input_kind == "lost" else "output"]  # lost: computed, dropped
        attrs.update(label=f"{n.label}\n{n.outputs[0].text if n.outputs else ''}{placed}",
                     shape=look["shape"], style=look.get("style", "filled"), fillcolor=look["color"])
    else:
        kind = n.input_kind or "traced"
        aval = f"\n{n.outputs[0].text}" if n.outputs else ""
        attrs.update(label=f"{n.label}{aval}{placed}", shape=LEGEND[kind]["shape"], style="filled",
                     fillcolor=LEGEND[kind]["color"])
    return attrs


def group_box_attrs(graph: Graph, gid: int, ins: list[str], outs: list[str]) -> dict[str, str]:
    """DOT attributes of a collapsed group's box."""
    g = graph.groups[gid]
    title = g.repeat or g.name
    where = f"\n{g.source.short()}" if g.source else ""
    size = "" if g.kind in ("inputs", "outputs") else f"\n{size_text(graph, gid)}"
    label = f"{title}{size}{where}"
    tooltip = f"{title} ({g.kind}): {g.n_eqns} equations\nin: {', '.join(ins) or '-'}\nout: {', '.join(outs) or '-'}"
    if g.kind == "repeat":
        tooltip += f"\n{repeat_text(graph, gid)}: expand to see each"
    attrs = {"id": f"g{gid}", "class": f"jaxviz-group jaxviz-group-{g.kind}", "label": label,
             "shape": "box3d", "style": "filled", "fillcolor": GROUP_FILL.get(g.kind, BOX_FILL),
             "tooltip": tooltip, **(REPEAT_BOX if g.kind == "repeat" else {}), **(PHASE if g.kind == "phase" else {})}
    if g.parent is not None and graph.groups[g.parent].kind == "repeat":
        # The layers of an open fold: one straight column, which stays where it is when
        # one of them is opened (measured in benchmarks/bench_scale.py).
        attrs["group"] = f"repeat_g{g.parent}"
    heat = group_heat(graph, gid)  # estimated FLOPs/bytes, coloured by share of the program
    if heat is not None:
        attrs.update(label=f"{label}\n{heat.text}", fillcolor=heat.fill, fontcolor=heat.font,
                     tooltip=f"{tooltip}\ncost (estimate): {heat.text} of the program's FLOPs")
    comm = comm_label(graph, gid)  # what its compiled collectives move: the outline, beside the fill
    if comm is not None:
        attrs.update(COMM_STYLE, label=f"{attrs['label']}\n{comm}",
                     tooltip=f"{attrs['tooltip']}\ncommunication (compiled HLO): {comm}")
    return attrs


def cluster_label(graph: Graph, gid: int) -> str:
    """The label of an expanded group's cluster: ``block ×48 (48 × 107 eqns) · cell line 5``."""
    g = graph.groups[gid]
    where = f" · {g.source.short()}" if g.source else ""
    comm = own_comm_label(graph, gid)  # collectives fused from several of its groups' operations
    return f"{g.repeat or g.name} ({size_text(graph, gid)}){where}{f' · {comm}' if comm else ''}"


def chain_label(graph: Graph, chain: list[int]) -> str:
    """The title of open groups that only wrap one another, drawn as one cluster:
    ``forward › loss_fn › GPT (584 eqns) · cell line 5``."""
    path = " › ".join(graph.chain_path(chain))
    return f"{path} › {cluster_label(graph, chain[-1])}" if path else cluster_label(graph, chain[-1])


def cluster_attrs(graph: Graph, gid: int) -> dict[str, str]:
    """DOT attributes of an expanded group's cluster."""
    kind = graph.groups[gid].kind
    return {"label": cluster_label(graph, gid), "id": f"cluster_g{gid}",
            "style": REPEAT_CLUSTER_STYLE if kind == "repeat" else "rounded,filled",
            "fillcolor": GROUP_FILL.get(kind, CLUSTER_FILL), **CLUSTER, **(PHASE if kind == "phase" else {})}


# graphviz quotes every name and attribute value with three regular expressions, and a view
# repeats a few colours, shapes, fonts and ids hundreds of times: each text is quoted once
# (by type too: graphviz's ``nohtml`` strings quote otherwise).
_quoted = functools.lru_cache(maxsize=65536, typed=True)(graphviz.quoting.quote)


def _quoted_edge_end(identifier: str) -> str:
    node, _, rest = identifier.partition(":")
    if not rest:
        return _quoted(node)
    return graphviz.quoting.quote_edge(identifier)


def _attribute_list(label: str | None = None, kwargs: Any = None, attributes: Any = None) -> str:
    """graphviz's ``attr_list`` (a plain dict's items sorted, as it sorts them) with the
    quoting remembered."""
    items = [("label", label)] if label is not None else []
    for mapping in (kwargs, attributes):
        if mapping:
            pairs = mapping.items() if hasattr(mapping, "items") else mapping
            items += sorted(pairs) if type(mapping) is dict else list(pairs)
    content = " ".join(f"{_quoted(k)}={_quoted(v)}" for k, v in items if v is not None)
    return f" [{content}]" if content else ""


class _Digraph(graphviz.Digraph):
    """graphviz's ``Digraph``, writing the same DOT source, with each text quoted once."""

    _quote = staticmethod(_quoted)
    _quote_edge = staticmethod(_quoted_edge_end)
    _attr_list = staticmethod(_attribute_list)

    @staticmethod
    def _a_list(label: str | None = None, kwargs: Any = None, attributes: Any = None) -> str:
        return _attribute_list(label, kwargs, attributes)[2:-1]


def view_to_dot(view: View, legend: bool = True, edge_labels: bool | None = None,
                marks: Marks | None = None) -> graphviz.Digraph:
    """``marks``: what to highlight: a status per node/group (a diff's
    added/removed/changed), a path (an explained tracer error's)."""
    graph = view.graph
    dot = _Digraph(name=graph.name, format="svg")
    dot.attr(**DOT_GRAPH, rankdir="TB")
    dot.attr("node", **DOT_NODE)
    dot.attr("edge", **DOT_EDGE)
    ins: dict[Item, list[str]] = {}
    outs: dict[Item, list[str]] = {}
    for e in view.edges:
        outs.setdefault(e.src, []).append(e.label)
        ins.setdefault(e.dst, []).append(e.label)
    _emit_group(dot, view, 0, ins, outs, marks)
    labelled = len(view.edges) <= MAX_LABELLED_EDGES if edge_labels is None else edge_labels
    if len(view.edges) > MAX_LABELLED_EDGES:
        # Dense views: cheaper layout, and straight edges past MAX_CURVED_EDGES (routing
        # splines around clusters is most of dot's time there, and reads no better).
        splines = "line" if len(view.edges) > MAX_CURVED_EDGES else "polyline"
        dot.attr(**DOT_DENSE, splines=splines)
    loop_back, loops = loop_edges(view)
    rows, depths = _edge_rows(view), _cluster_depths(view)
    for e in view.edges:
        attrs = {"tooltip": ", ".join(a.text for a in e.avals[:8])}
        if labelled:
            attrs["label"] = e.label
        if (e.src, e.dst) in loop_back:
            attrs["constraint"] = "false"
        elif e.src in rows["source"] or e.dst in rows["sink"]:
            attrs.update(_row_minlen(graph, depths, e.dst if e.src in rows["source"] else e.src))
        if e.weak:
            attrs.update(style="dashed", color=LEGEND["weak"]["color"])
        if marks is not None and marks.on_path(e.src, e.dst):
            attrs.update(color=PATH_COLOR, penwidth="2.5")
        dot.edge(item_id(e.src), item_id(e.dst), **attrs)
    _emit_phase_order(dot, view)
    _emit_loop_exits(dot, loops)
    _emit_row_anchors(dot, view, rows, depths, loop_back)
    if legend:
        _emit_legend(dot, graph, marks)
    return dot


def _emit_phase_order(dot: graphviz.Digraph, view: View) -> None:
    """Forward above backward above update: an invisible anchor between each two, below
    every last item of one phase and above every first item of the next."""
    for k, (ends, starts) in enumerate(view.phase_order()):
        anchor = f"phase_order_{k}"
        dot.node(anchor, label="", shape="point", style="invis", width="0", height="0")
        for item in ends:
            dot.edge(item_id(item), anchor, style="invis")
        for item in starts:
            dot.edge(anchor, item_id(item), style="invis")


def loop_edges(view: View) -> tuple[set[tuple[Item, Item]], list[tuple[list[Item], list[Item]]]]:
    """An open loop (a scan, a while, a pmap) whose equation's node feeds its body and takes
    its results back is a cycle, which dot breaks where it likes: the equation lands below
    its body, and the program's inputs beside it rather than on the top row. Its node is
    drawn as the loop's entry: the edges of the results back into it do not rank (drawn
    upward, as a loop's back edge), and what reads the loop's results stands below its
    body. Returns those back edges, and per such loop the items whose results go back
    and the items outside it that read its results."""
    graph = view.graph
    holders = {graph.groups[g].holder: g for g in view.expanded if graph.groups[g].holder is not None}
    if not holders:
        return set(), []
    feeds: set[int] = set()
    back: dict[int, list[VisibleEdge]] = {}
    readers: dict[int, list[Item]] = {}
    for e in view.edges:
        if e.src[0] == "n" and e.src[1] in holders:
            holder = e.src[1]
            if _inside(graph, e.dst, holders[holder]):
                feeds.add(holder)
            else:
                readers.setdefault(holder, []).append(e.dst)
        if e.dst[0] == "n" and e.dst[1] in holders and e.src != e.dst and _inside(graph, e.src, holders[e.dst[1]]):
            back.setdefault(e.dst[1], []).append(e)
    looping = [h for h in back if h in feeds]
    return ({(e.src, e.dst) for h in looping for e in back[h]},
            [(sorted({e.src for e in back[h]}), sorted(set(readers.get(h, [])))) for h in looping if h in readers])


# The invisible node on the program's top row (its inputs) and on its bottom row (its
# outputs): dot's ``newrank`` (which lets clusters share ranks) ignores ``rank=source``
# and ``rank=sink``, so every other item is ranked below (above) the anchor by an edge.
ROW_ANCHORS = {"source": "inputs_row", "sink": "outputs_row"}


def _emit_row_anchors(dot: graphviz.Digraph, view: View, rows: dict[str, set[Item]], depths: dict[int, int],
                      loop_back: set[tuple[Item, Item]]) -> None:
    """The program's inputs on the top row and its outputs on the bottom row (``rows``:
    ``_edge_rows``), whatever the view: an invisible edge from the top row's anchor into
    each item that nothing else ranks below something (no edge into it), and from each
    item with no edge out of it to the bottom row's anchor."""
    graph = view.graph
    items = {("n", n) for g in view.expanded for n in graph.groups[g].nodes}
    items |= {("g", c) for g in view.expanded for c in graph.groups[g].groups if c not in view.expanded}
    ranked = [e for e in view.edges if (e.src, e.dst) not in loop_back and e.src != e.dst]
    if rows["source"]:
        fed = {e.dst for e in ranked}
        for item in sorted(items - fed - rows["source"]):
            _rank_edge(dot, ROW_ANCHORS["source"], item_id(item), _row_minlen(graph, depths, item))
    if rows["sink"]:
        feeding = {e.src for e in ranked}
        for item in sorted(items - feeding - rows["sink"]):
            _rank_edge(dot, item_id(item), ROW_ANCHORS["sink"], _row_minlen(graph, depths, item))


def _cluster_depths(view: View) -> dict[int, int]:
    """Per open group, how many clusters hold what is drawn directly in it (a group that
    only wraps its one open child is drawn as one cluster with it)."""
    graph = view.graph
    depths = {0: 0}
    for gid in sorted(view.expanded - {0}, key=lambda g: graph.groups[g].depth):
        parent = graph.groups[gid].parent or 0
        wrapped = parent != 0 and graph.open_chain(parent, view.expanded)[1:2] == [gid]
        depths[gid] = depths.get(parent, 0) + (0 if wrapped else 1)
    return depths


def _row_minlen(graph: Graph, depths: dict[int, int], item: Item) -> dict[str, str]:
    """An edge between the top or bottom row and an item inside open groups spans a rank
    more per open group around it (a title and a margin each, ``depths``:
    ``_cluster_depths``): the groups' borders stay clear of the row. Nothing for an item
    outside every open group."""
    clusters = depths.get(_group_of(graph, item), 0)
    return {"minlen": str(1 + clusters)} if clusters else {}


def _group_of(graph: Graph, item: Item) -> int:
    """The group a visible item is drawn in."""
    group = graph.nodes[item[1]].group if item[0] == "n" else graph.groups[item[1]].parent
    return 0 if group is None else group


def _edge_rows(view: View) -> dict[str, set[Item]]:
    """The items of the program's top row (its inputs: nodes and closed boxes) and of its
    bottom row (its outputs)."""
    graph = view.graph
    root = graph.groups[0]
    rows: dict[str, set[Item]] = {
        "source": {("n", n) for n in root.nodes if graph.nodes[n].kind in ("input", "const")},
        "sink": {("n", n) for n in root.nodes if graph.nodes[n].kind == "output"}}
    for c in root.groups:
        kind = graph.groups[c].kind
        if c not in view.expanded and kind in ("inputs", "outputs"):
            rows["source" if kind == "inputs" else "sink"].add(("g", c))
    return rows


def _inside(graph: Graph, item: Item, gid: int) -> bool:
    """Whether a visible item is drawn inside the group ``gid`` (the group's own node too)."""
    return gid in graph.ancestors(_group_of(graph, item))


def _emit_loop_exits(dot: graphviz.Digraph, loops: list[tuple[list[Item], list[Item]]]) -> None:
    """What reads a loop's results below the items whose results go back into it: an
    invisible anchor between (``loop_edges``)."""
    for k, (ends, readers) in enumerate(loops):
        anchor = f"loop_exit_{k}"
        dot.node(anchor, label="", shape="point", style="invis", width="0", height="0")
        for item in ends:
            _rank_edge(dot, item_id(item), anchor)
        for item in readers:
            _rank_edge(dot, anchor, item_id(item))


def _rank_edge(dot: graphviz.Digraph, src: str, dst: str, minlen: dict[str, str] | None = None) -> None:
    """An invisible edge that only ranks (no pull on where its ends go), written as
    ``dot.edge`` writes it, without its per-call cost: a view has one per item it
    anchors."""
    extra = f" minlen={minlen['minlen']}" if minlen else ""
    dot.body.append(f"\t{_quoted(src)} -> {_quoted(dst)} [style=invis weight=0{extra}]\n")


def _emit_group(dot: graphviz.Digraph, view: View, gid: int, ins: dict, outs: dict,
                marks: Marks | None = None) -> None:
    graph = view.graph
    g = graph.groups[gid]
    edge_groups: dict[str, list[int]] = {"source": [], "sink": []}
    for child in g.groups:
        if gid == 0 and child not in view.expanded and graph.groups[child].kind in ("inputs", "outputs"):
            edge_groups["source" if graph.groups[child].kind == "inputs" else "sink"].append(child)
        elif child in view.expanded:
            chain = view.chain(child)
            with _subgraph(dot, f"cluster_g{child}") as sub:
                attrs = cluster_attrs(graph, child)
                attrs["label"] = chain_label(graph, chain)
                if marks is not None and ("g", child) in marks.status:  # outline only: the
                    fill = attrs["fillcolor"]  # members are filled
                    attrs = _mark(attrs, ("g", child), marks, cluster=True)
                    attrs["fillcolor"] = fill
                sub.attr(**attrs)
                _emit_group(sub, view, chain[-1], ins, outs, marks)
        else:
            item = ("g", child)
            dot.node(item_id(item), **_mark(group_box_attrs(graph, child, ins.get(item, []), outs.get(item, [])),
                                            item, marks))
    if gid == 0:  # the program's inputs on top, its outputs at the bottom
        for kinds, rank in ((("input", "const"), "source"), (("output",), "sink")):
            members = [n for n in g.nodes if graph.nodes[n].kind in kinds]
            if members or edge_groups[rank]:
                with _subgraph(dot, f"rank_{rank}") as sub:
                    sub.attr(rank=rank)
                    sub.node(ROW_ANCHORS[rank], label="", shape="point", style="invis", width="0", height="0")
                    for child in edge_groups[rank]:
                        item = ("g", child)
                        sub.node(item_id(item), **_mark(group_box_attrs(
                            graph, child, ins.get(item, []), outs.get(item, [])), item, marks))
                    for nid in members:
                        sub.node(f"n{nid}", **_mark(node_attrs(graph, nid), ("n", nid), marks))
        for nid in g.nodes:
            if graph.nodes[nid].kind == "eqn":
                dot.node(f"n{nid}", **_mark(node_attrs(graph, nid), ("n", nid), marks))
        return
    for nid in g.nodes:
        dot.node(f"n{nid}", **_mark(node_attrs(graph, nid), ("n", nid), marks))


def _subgraph(dot: graphviz.Digraph, name: str) -> AbstractContextManager[graphviz.Digraph]:
    """``dot.subgraph(name=...)``: without a ``graph`` argument graphviz returns a context
    manager (its annotation says Optional for both uses)."""
    context = dot.subgraph(name=name)
    assert context is not None
    return context


def legend_kinds(graph: Graph) -> list[str]:
    """The legend entries a graph needs, in order (as ``legendKinds`` in the browser)."""
    kinds = {n.input_kind for n in graph.nodes if n.input_kind} | {"output"}
    if any(n.primitive in COLLECTIVE_PRIMITIVES for n in graph.nodes):
        kinds.add("collective")
    if any(e.aval.weak_type for e in graph.edges[:5000]):
        kinds.add("weak")
    if any(g.kind == "repeat" for g in graph.groups):
        kinds.add("repeat")
    return [k for k in LEGEND_ORDER if k in kinds]


def _emit_legend(dot: graphviz.Digraph, graph: Graph, marks: Marks | None = None) -> None:
    with _subgraph(dot, "cluster_legend") as leg:
        leg.attr(**LEGEND_CLUSTER, id="cluster_legend")
        for kind in legend_kinds(graph):
            spec = LEGEND[kind]
            if kind == "weak":  # a dashed edge, drawn in text
                look = {"label": f"- - {spec['text']} - -", "shape": "plaintext", "fontcolor": spec["color"]}
            else:
                look = {"label": spec["text"], "shape": spec["shape"], "style": spec.get("style", "filled"),
                        "fillcolor": spec["color"],
                        **(REPEAT_BOX if kind == "repeat" else {})}
            leg.node(f"legend_{kind}", **look, fontsize=LEGEND_FONTSIZE, tooltip=spec["label"])
        shown = set(marks.status.values()) if marks is not None else set()
        for status in (s for s in MARK_STYLE if s in shown):
            style = MARK_STYLE[status]
            leg.node(f"legend_{status}", label=status, shape="box", fontsize=LEGEND_FONTSIZE, tooltip=style["label"],
                     style="rounded,filled" + (",dashed" if status == "removed" else ""),
                     fillcolor=style["fillcolor"], color=style["color"], penwidth="2")


def render_svg(dot_graph: graphviz.Digraph | str) -> str:
    """SVG text from DOT; raises ``DotUnavailable`` when Graphviz is not installed."""
    if not dot_available():
        raise DotUnavailable("the Graphviz 'dot' binary was not found on PATH")
    source = dot_graph if isinstance(dot_graph, str) else dot_graph.source
    try:
        return graphviz.Source(source).pipe(format="svg", encoding="utf-8")
    except graphviz.ExecutableNotFound as exc:
        raise DotUnavailable(str(exc)) from exc


def responsive_svg(svg: str) -> str:
    """Let the drawing scale down to the page width, never up (Graphviz writes fixed pt
    sizes)."""
    return re.sub(r'<svg width="([^"]*)" height="[^"]*"', r'<svg width="\1" style="max-width:100%;height:auto"',
                  svg, count=1)


def program_dot(program: Any, expand: Any = None, **options: Any) -> graphviz.Digraph:
    """A program's view at ``expand`` (default: its own), ``options`` as ``view_to_dot``'s."""
    return view_to_dot(program.graph.view(program.expand if expand is None else expand), **options)


# The first view's size, each way, as dot lays it out (issue 20: about two screens);
# aimed below, since the browser's Graphviz lays it out a little differently.
VIEW_FIT_PT = 2800
# The estimate's budget (``Graph.first_view_room``) made this much roomier, width and
# rows, on the first try: dot checks it, and each further try narrows the budget by how
# far dot's layout overshot.
FIRST_ROOM = (1.4, 1.25)
FIT_TRIES = 3
NARROW_STEP = 0.85  # a narrower budget that chooses the same view: narrow on, so far
NARROW_TRIES = 8


def svg_size_pt(svg: str) -> tuple[float, float]:
    """(width, height) in pt of a Graphviz SVG."""
    match = re.search(r'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    if match is None:
        raise ValueError(f"not a Graphviz SVG: {svg[:200]!r}")
    return float(match.group(1)), float(match.group(2))


def start_first_view(graph: Graph) -> None:
    """The budget an automatic first view is first chosen with, before dot checks it."""
    graph.first_view_room = FIRST_ROOM
    graph.first_view_opens = None


def first_view_svg(program: Any, first_try: str | None = None) -> str:
    """The SVG of a program's view (``render_svg``). An automatic first view is fitted
    to dot's own layout: the estimate's budget (``Graph.first_view_room``) starts
    roomier, and is narrowed while dot lays the view out over ``VIEW_FIT_PT`` either
    way; then what pushes the model's folds off the first screen is closed
    (``fit_folds_to_first_screen``). One layout when it fits (the drawing shown), a few
    when the estimate was far off; the budget found stays on the graph, so every later
    drawing of the first view (the payload, an export) is this one. ``first_try``: the
    drawing of the view at ``FIRST_ROOM``, where the caller had dot lay it out already.
    Fitted as a notebook draws it: with the costs its boxes show (estimated once; every
    display of a program estimates them first), which make them bigger."""
    program.costs()
    graph = program.graph
    if program.expand not in (None, "auto"):
        return first_try or render_svg(program_dot(program))
    start_first_view(graph)
    return fit_folds_to_first_screen(program, fit_view_size(program, first_try or render_svg(program_dot(program))))


def fit_view_size(program: Any, svg: str) -> str:
    """The first view narrowed (``Graph.first_view_room``) while dot lays it out over
    ``VIEW_FIT_PT`` either way; ``svg``: its drawing at the room it has now."""
    graph = program.graph
    room = graph.first_view_room
    for _ in range(FIT_TRIES - 1):
        width, height = svg_size_pt(svg)
        if width <= VIEW_FIT_PT and height <= VIEW_FIT_PT:
            break
        shown = graph.expansion("auto")
        scale = (min(1.0, VIEW_FIT_PT / width), min(1.0, VIEW_FIT_PT / height))
        for _ in range(NARROW_TRIES):
            room = (room[0] * scale[0], room[1] * scale[1])
            graph.first_view_room = room
            if graph.expansion("auto") != shown:
                break
            scale = (min(scale[0], NARROW_STEP) if width > VIEW_FIT_PT else 1.0,
                     min(scale[1], NARROW_STEP) if height > VIEW_FIT_PT else 1.0)
        if graph.expansion("auto") == shown:
            break  # nothing left to close
        svg = render_svg(program_dot(program))
    return svg


# The first screen: what a notebook output shows of the first view at a legible zoom
# (1 px a pt) before any scroll or pan: about 1,000 pt wide, 700 tall.
FIRST_SCREEN_PT = (1000.0, 700.0)
STORY_NEAR = 0.25  # the drawing's left edge this near its structure's (a share of the screen): from it
SCREEN_TRIES = 3
_SVG = "{http://www.w3.org/2000/svg}"
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def fit_folds_to_first_screen(program: Any, svg: str) -> str:
    """The first view with the model's folds on its first screen both ways: where dot
    puts every copy of a fold (``ResNetBlock ×3``) below the first screen or beside it,
    the open groups that stand wholly above it or before it (a network's
    initialisation, a loss's one-hot) stay closed, and dot lays the view out again. A
    try is kept only where it brings more folds onto the first screen, hides none and
    stays within ``VIEW_FIT_PT``: the view's size and its folds come first."""
    graph = program.graph
    for _ in range(SCREEN_TRIES):
        shown = graph.expansion("auto")
        on_screen, pushing = first_screen_folds(graph, shown, svg)
        if not pushing:
            break
        before = graph.first_view_opens
        # what stays open is what was, but those groups: the room they leave is not
        # given to others, which would push the folds off again
        graph.first_view_opens = frozenset(g for g in shown if pushing.isdisjoint(graph.ancestors(g)))
        now = graph.expansion("auto")
        tried = render_svg(program_dot(program)) if now != shown else None
        if tried is None or max(svg_size_pt(tried)) > VIEW_FIT_PT or fold_names(graph, now) < fold_names(graph, shown) \
                or not first_screen_folds(graph, now, tried)[0] > on_screen:
            graph.first_view_opens = before
            break
        svg = tried
    return svg


def fold_names(graph: Graph, expanded: frozenset[int]) -> set[str]:
    """The folds a view shows (``ResNetBlock ×3``), by name."""
    return {graph.groups[c].repeat or graph.groups[c].name for c in _shown(graph, expanded) if graph.is_fold(c)}


def _shown(graph: Graph, expanded: frozenset[int]) -> set[int]:
    return {c for g in expanded for c in graph.groups[g].groups} | set(expanded)


def svg_items(svg: str) -> dict[str, tuple[tuple[float, float, float, float], tuple[float, float] | None]]:
    """Each node and cluster of a Graphviz SVG by its id: its box (left, top, right,
    bottom) and where its first text stands, in pt from the drawing's top left."""
    root = ElementTree.fromstring(svg)
    top = next(root.iter(f"{_SVG}g"))
    shift = re.search(r"translate\(([-\d.]+) ([-\d.]+)\)", top.get("transform", ""))
    dx, dy = (float(shift.group(1)), float(shift.group(2))) if shift else (0.0, 0.0)
    items = {}
    for g in root.iter(f"{_SVG}g"):
        if g.get("class", "").split(" ")[0] not in ("node", "cluster"):
            continue
        outline = next((e for e in g.iter() if e.tag in (f"{_SVG}path", f"{_SVG}polygon")), None)
        if outline is None:
            continue
        numbers = [float(v) for v in _NUMBER.findall(outline.get("d") or outline.get("points") or "")]
        xs, ys = [x + dx for x in numbers[0::2]], [y + dy for y in numbers[1::2]]
        text = next(g.iter(f"{_SVG}text"), None)
        at = (float(text.get("x", 0)) + dx, float(text.get("y", 0)) + dy) if text is not None else None
        items[g.get("id", "")] = ((min(xs), min(ys), max(xs), max(ys)), at)
    return items


def first_screen_span(graph: Graph, items: dict[str, Any], width: float) -> tuple[float, float]:
    """The span (left, right, in pt) of a drawing ``width`` wide that the first screen
    shows: all of it when it fits; else the program's own structure (the root's groups
    but its inputs and outputs) centred when that fits, with the inputs beside it that
    fit too and none cut in half (``story_window``, ``uncut_window``), else from its left
    edge, or from the
    drawing's where that is within a quarter screen of it (as the viewer pans:
    labextension/src/graph/viewport.ts)."""
    screen = FIRST_SCREEN_PT[0]
    if width <= screen:
        return 0.0, width
    root = graph.groups[0]
    boxes = [items[k][0] for c in root.groups if graph.groups[c].kind not in ("inputs", "outputs")
             for k in (f"g{c}", f"cluster_g{c}") if k in items]
    if not boxes:
        return 0.0, screen
    left, right = min(b[0] for b in boxes), max(b[2] for b in boxes)
    if right - left <= screen:
        inputs = [f"n{n}" for n in root.nodes if graph.nodes[n].kind in ("input", "const")]
        inputs += [k for c in root.groups if graph.groups[c].kind == "inputs"
                   for k in (f"g{c}", f"cluster_g{c}", *(f"n{n}" for n in graph.groups[c].nodes))]
        spans = [(items[k][0][0], items[k][0][2]) for k in inputs if k in items]
        start = story_window((left, right), spans, screen, (0.0, width))
        start = uncut_window(start, screen, spans, (left, right))
        return start, start + screen
    if left <= screen * STORY_NEAR:
        return 0.0, screen
    return left, left + screen


def story_window(structure: tuple[float, float], inputs: list[tuple[float, float]], room: float,
                 drawing: tuple[float, float]) -> float:
    """Where a window ``room`` wide starts across (its left edge) on a drawing spanning
    ``drawing`` (wider than the window) to show ``structure`` (left, right; it fits)
    centred with as many of the ``inputs`` beside it as fit too, nearest first (the story
    starts where its data comes in), within the drawing. As the viewer's ``storyWindow``
    (labextension/src/graph/geometry.ts)."""
    def gap(span: tuple[float, float]) -> float:
        return max(0.0, structure[0] - span[1], span[0] - structure[1])

    shown = structure
    for span in sorted(inputs, key=gap):
        joined = (min(shown[0], span[0]), max(shown[1], span[1]))
        if joined[1] - joined[0] <= room:
            shown = joined
    centred = shown[0] - (room - (shown[1] - shown[0])) / 2
    return min(max(centred, drawing[0]), drawing[1] - room)


def uncut_window(left: float, room: float, inputs: list[tuple[float, float]], keep: tuple[float, float]) -> float:
    """The window ``room`` wide at ``left`` moved off any of the ``inputs`` its edges would
    cut in half, by the smaller move that keeps ``keep`` in it: to show the input whole or
    to leave it out. As the viewer's ``uncutWindow`` (labextension/src/graph/geometry.ts)."""
    def nearest(at: float, options: list[float]) -> float:
        kept = [o for o in options if keep[0] >= o - 0.5 and keep[1] <= o + room + 0.5]
        return min(kept, key=lambda o: abs(o - at), default=at)

    for lo, hi in inputs:
        if lo < left < hi:
            left = nearest(left, [lo, hi])
    for lo, hi in inputs:
        if lo < left + room < hi:
            left = nearest(left, [hi - room, lo - room])
    return left


def first_screen_folds(graph: Graph, expanded: frozenset[int], svg: str) -> tuple[set[str], frozenset[int]]:
    """The folds (by name) a copy of which dot draws on the first screen; and the open
    groups to keep closed so that the others move onto it: those, holding no fold and
    inside none, that stand wholly before a fold's first copy (left of its box, where it is
    beside the screen) or above it (where it is below)."""
    items = svg_items(svg)
    lo, hi = first_screen_span(graph, items, svg_size_pt(svg)[0])
    screen_height = FIRST_SCREEN_PT[1]
    copies: dict[str, list[tuple[float, float, int, tuple[float, float, float, float]]]] = {}
    for gid in _shown(graph, expanded):
        item = items.get(f"cluster_g{gid}" if gid in expanded else f"g{gid}")
        if graph.is_fold(gid) and item is not None and item[1] is not None:
            copies.setdefault(graph.groups[gid].repeat or graph.groups[gid].name, []).append((*item[1], gid, item[0]))
    folds = {gid for found in copies.values() for _, _, gid, _ in found}
    near = {a for gid in folds for a in graph.ancestors(gid)}
    on_screen = {name for name, found in copies.items()
                 if any(lo <= x <= hi and y <= screen_height for x, y, _, _ in found)}
    pushing: set[int] = set()
    for name, found in copies.items():
        if name in on_screen:
            continue
        x, y, _, fold_box = min(found, key=lambda f: (f[1], f[0]))
        for other in expanded - near:
            box = items.get(f"cluster_g{other}", (None,))[0]
            if box is None or any(a in folds for a in graph.ancestors(other)):
                continue
            if x > hi and box[2] < fold_box[0] or y > screen_height and box[3] < fold_box[1]:
                pushing.add(other)
    return on_screen, frozenset(g for g in pushing if not any(a in pushing for a in graph.ancestors(g)[1:]))
