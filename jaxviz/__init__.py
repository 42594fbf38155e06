"""jaxviz: see what JAX traced, what recompiles and why.

Public API: ``trace`` and ``trace_cell`` (function or notebook cell → ``Program``),
``load_ipython_extension`` (``%load_ext jaxviz``: the ``%%jaxpr`` magic).
"""

from __future__ import annotations

from .graph import MIME_TYPE, Graph
from .program import InputInfo, Program
from .tracing import trace

__version__ = "0.1.0"

__all__ = ["MIME_TYPE", "Graph", "InputInfo", "Program", "trace", "__version__"]
