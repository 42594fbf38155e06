"""The visual language, read from ``visual.json``: the one file that the kernel's renderers
(here) and the browser's (``labextension/src/visual.ts``, bundled by webpack and esbuild)
draw with. Change a colour, a shape, the heat scale or the legend's wording there, never
in a renderer. The browser's theme colours, light and dark, are generated from it into CSS
(``labextension/build-visual.mjs``)."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

VISUAL: dict[str, Any] = json.loads(resources.files("jaxviz").joinpath("visual.json").read_text("utf-8"))

# One colour/shape per kind of value, a chip text and a tooltip: shared by every renderer.
LEGEND: dict[str, dict[str, str]] = VISUAL["legend"]
LEGEND_ORDER: tuple[str, ...] = tuple(VISUAL["legend_order"])

GROUP_FILL: dict[str, str] = VISUAL["group_fill"]  # a group's box or open cluster, by kind
BOX_FILL: str = VISUAL["box_fill"]  # a collapsed group of a kind without its own fill
CLUSTER_FILL: str = VISUAL["cluster_fill"]  # an open group of a kind without its own fill
CLUSTER: dict[str, str] = VISUAL["cluster"]  # an open group's outline and label
# A train step's phases (forward, backward, update) stand out: a heavier outline and a
# bigger label, as a box and as an open group.
PHASE: dict[str, str] = VISUAL["phase"]
# A "block ×48" box is drawn as a stack (a double outline), also when cost colours its
# fill; opened, its cluster has a dashed outline.
REPEAT_BOX: dict[str, str] = VISUAL["repeat_box"]
REPEAT_CLUSTER_STYLE: str = VISUAL["repeat_cluster_style"]

# Graph, node and edge defaults of every drawing (ranksep 0.3, Graphviz's being 0.5: a
# first view of ~10 rows fits a notebook's height).
DOT_GRAPH: dict[str, str] = VISUAL["dot"]["graph"]
DOT_NODE: dict[str, str] = VISUAL["dot"]["node"]
DOT_EDGE: dict[str, str] = VISUAL["dot"]["edge"]
DOT_DENSE: dict[str, str] = VISUAL["dot"]["dense"]  # the layout's limits past MAX_LABELLED_EDGES
LEGEND_CLUSTER: dict[str, str] = VISUAL["dot"]["legend_cluster"]
LEGEND_FONTSIZE: str = VISUAL["dot"]["legend_fontsize"]

# Edge labels are what makes dot slow on big views (seconds instead of a tenth): beyond
# this many edges the avals move to the edge tooltips and the layout's iteration limits are
# lowered; beyond MAX_CURVED_EDGES edges are straight (measured in benchmarks/bench_scale.py).
MAX_LABELLED_EDGES: int = VISUAL["edges"]["max_labelled"]
MAX_CURVED_EDGES: int = VISUAL["edges"]["max_curved"]

# The cost heat scale: yellow to brown (ColorBrewer YlOrBr), kept apart from the red of
# captured values; shares from 10^-HEAT_DECADES to 100 % of the program's FLOPs span it.
HEAT_STOPS: tuple[str, ...] = tuple(VISUAL["heat"]["stops"])
HEAT_DECADES: float = VISUAL["heat"]["decades"]
# A program cheaper than this is not shaded by share: its 6-FLOP scan body is "100 %" of
# nothing, and deep brown would say it is where the time goes.
HEAT_MIN_FLOPS: float = VISUAL["heat"]["min_flops"]
HEAT_LIGHT_TEXT_ABOVE: float = VISUAL["heat"]["light_text_above"]  # heat level past which text is light
HEAT_LIGHT_TEXT: str = VISUAL["heat"]["light_text"]
HEAT_DARK_TEXT: str = VISUAL["heat"]["dark_text"]

# A diff's statuses (jaxviz.diff): fill, outline and legend tooltip.
MARK_STYLE: dict[str, dict[str, str]] = VISUAL["marks"]
PATH_COLOR: str = VISUAL["path"]["color"]  # a highlighted path (the inputs a refused traced value came from)
PATH_END_FILL: str = VISUAL["path"]["end_fill"]

# The kernel's HTML (listings, error explanations, recompile tables, device reports) on the
# notebook's page, by role: notes, errors, labels, details, code backgrounds, a recompile's
# cause box; each a CSS colour.
HTML_COLOR: dict[str, str] = VISUAL["html"]
# The terminal's renderings (rich styles) by role: notes, errors, a recompile's cause, a fix's code.
TERMINAL_STYLE: dict[str, str] = VISUAL["terminal"]
# The live compile monitor's bars, by stage (trace, lower, compile).
STAGE_COLORS: dict[str, str] = {k: v for k, v in VISUAL["stages"].items() if k != "about"}


# A group whose compiled collectives move data: its box's outline (the fill stays the
# FLOP heat) and the mark before its communication line.
COMM_STYLE: dict[str, str] = {k: VISUAL["communication"][k] for k in ("color", "penwidth")}
COMM_MARK: str = VISUAL["communication"]["mark"]
# The primitives that move data between devices: drawn as communication nodes (the
# legend's "collective"). pmean is a psum then a division; pvary only retypes a value.
COLLECTIVE_PRIMITIVES: frozenset[str] = frozenset(VISUAL["communication"]["primitives"])
