"""jaxviz: see what JAX traced, what recompiles and why.

Public API:
- ``trace(fn, *args, **kwargs) -> Program`` and ``trace_cell(source, namespace) -> Program``
- ``explain(exc) -> Explanation``: why JAX refused a traced value, where it came from, the fixes
- ``watch() -> Watch``: every trace and compile, its cause and cost (``with jaxviz.watch() as log``)
- ``profile(fn, *args, device=None, repeats=5) -> RunReport``: where it ran, compile vs run
  time, FLOPs, bytes and memory
- ``load_ipython_extension`` (``%load_ext jaxviz``): the ``%%jaxpr`` and ``%jaxviz`` magics.
"""

from __future__ import annotations

from typing import Any

from .adapters import UnsplittableArgument
from .cells import trace_cell
from .devices import RunReport, profile
from .errors import Explanation, explain
from .graph import MIME_TYPE, Graph
from .program import InputInfo, Program
from .recompiles import Cause, CompileEvent, watch
from .tracing import trace

__version__ = "0.1.0"

__all__ = [
    "MIME_TYPE", "Cause", "CompileEvent", "Explanation", "Graph", "InputInfo", "Program",
    "RunReport", "UnsplittableArgument", "__version__", "explain", "load_ipython_extension", "profile", "trace",
    "trace_cell", "unload_ipython_extension", "watch",
]


def load_ipython_extension(shell: Any) -> None:
    from .magics import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    from .magics import unload_ipython_extension as unload

    unload(shell)
