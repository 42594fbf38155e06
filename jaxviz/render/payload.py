"""The JSON payload sent to the browser (MIME ``application/vnd.jaxviz+json``): the graph
model plus the program's summary, inputs and initial expansion.

Big graphs travel compressed: ``"graph"`` is then ``{"encoding": "gzip+base64", "data":
str, "bytes": int}`` holding the same JSON (the browser inflates it with the standard
``DecompressionStream``); a 12k-equation train step goes from 7.6 MB to about 0.5 MB.
Past ``MAX_SHIPPED_NODES`` the graph is not shipped at all (``"graph": null`` with
``"graph_omitted"`` saying why): the browser shows the static rendering of the bundle.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

MAX_INLINE_GRAPH_BYTES = 256_000
MAX_SHIPPED_NODES = 60_000


def encode_graph(graph: Any) -> tuple[Any, str | None]:
    """(the graph as it travels, why it was left out or None)."""
    if len(graph.nodes) > MAX_SHIPPED_NODES:
        return None, (f"{len(graph.nodes)} nodes is more than the browser view takes "
                      f"({MAX_SHIPPED_NODES}); showing the static rendering")
    data = graph.to_json()  # once: its text decides how it travels
    text = json.dumps(data, separators=(",", ":"))
    if len(text) <= MAX_INLINE_GRAPH_BYTES:
        return data, None
    return compressed_graph(text), None


def gzip_base64(text: str) -> str:
    """``text`` as it travels in an output: gzip (level 6: 0.4 % bigger than 9, three times
    faster; no timestamp, so equal inputs give equal outputs), then base64 (nothing in it
    needs escaping in HTML or in the notebook's JSON); the browser's DecompressionStream
    inflates it."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")


def compressed_graph(text: str) -> dict[str, Any]:
    """A graph's JSON text as it travels compressed (the browser inflates it)."""
    return {"encoding": "gzip+base64", "data": gzip_base64(text), "bytes": len(text)}


def decode_graph(shipped: Any) -> Any:
    """The inverse of ``encode_graph`` (for tests and Python consumers)."""
    if isinstance(shipped, dict) and shipped.get("encoding") == "gzip+base64":
        return json.loads(gzip.decompress(base64.b64decode(shipped["data"])))
    return shipped


def program_payload(program: Any, expanded: frozenset[int] | None = None) -> dict[str, Any]:
    """``expanded``: the program's expansion where the caller resolved it already."""
    graph = program.graph
    shipped, omitted = encode_graph(graph)
    payload = {
        "schema": "jaxviz.program",
        "version": 1,
        "name": program.name,
        "summary": program.summary(),
        "timings": program.timings,
        "device": program.device,
        "inputs": [
            {"name": i.name, "kind": i.kind, "aval": i.aval.to_json() if i.aval else None,
             "value": i.value, "source": i.source}
            for i in program.inputs
        ],
        "trace_output": program.trace_output,
        "expanded": sorted(graph.expansion(program.expand) if expanded is None else expanded),
        "graph": shipped,
    }
    if omitted:
        payload["graph_omitted"] = omitted
    return payload
