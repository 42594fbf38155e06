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

import jax

from .jax_support import check_jax_version

# Before any module touches JAX's private API: an unsupported JAX gets one clear line.
check_jax_version(jax.__version__)

from .cells import trace_cell  # noqa: E402
from .devices import RunReport, profile  # noqa: E402
from .errors import Explanation, explain  # noqa: E402
from .graph import MIME_TYPE, Graph  # noqa: E402
from .program import InputInfo, Program  # noqa: E402
from .recompiles import Cause, CompileEvent, watch  # noqa: E402
from .tracing import trace  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "MIME_TYPE", "Cause", "CompileEvent", "Explanation", "Graph", "InputInfo", "Program",
    "RunReport", "__version__", "explain", "load_ipython_extension", "profile", "trace",
    "trace_cell", "unload_ipython_extension", "watch",
]


def load_ipython_extension(shell: Any) -> None:
    from .magics import load_ipython_extension as load

    load(shell)


def unload_ipython_extension(shell: Any) -> None:
    from .magics import unload_ipython_extension as unload

    unload(shell)
