"""The recompilation tracker: every trace and compile of a jitted function, its exact
cause in the user's words, its cost, and globals baked in at trace time that have
changed since.

Why it costs nothing on cache hits: JAX reports the start and the end of every trace,
lowering and backend compile through ``jax.monitoring`` (public), and those happen only
on cache misses; a hit runs in C++ and never reaches Python. On a trace we read the
arguments of the call being traced from JAX's own frames (the one private detail, in
``_jax_internals.current_jit_call``), describe them (``signature``: argument names, pytree
paths, avals, static values, relevant config, the eager transformations it runs under)
and diff them with the previous compile of the same function (``history``, ``causes``:
one small function per component of JAX's key, in order of severity; static values by
JAX's own rules, hash then ``==``, in ``values``), with a fix (``suggestions``). A key
equal to one compiled before is explained by what emptied the cache (``clears``: JAX
tells its registered caches when ``jax.clear_caches()`` runs). Nothing wraps the jitted
function. ``listeners`` owns JAX's monitoring listeners and feeds every active
``watch``; ``stale`` checks the globals a compile read. The rendering is in
``jaxviz.render.recompiles``, the notebook glue in ``jaxviz.ipython.recompiles``.

Public API::

    with jaxviz.watch() as log:   # or: log = jaxviz.watch(); log.start(); ...; log.stop()
        ...
    log.events      # list[CompileEvent], in order
    log.summary()   # per function: traces, compiles, seconds, distinct signatures
    log.check()     # globals baked in at trace time that have changed since
"""

from .causes import Cause
from .events import CompileEvent, is_first_compile
from .listeners import COMPILE_LISTENERS, SUBSCRIBERS, active_watches
from .signature import RecompileWarning
from .stale import StaleGlobal
from .watch import CompileLog, FunctionStats, Summary, Watch, watch

__all__ = [
    "COMPILE_LISTENERS", "SUBSCRIBERS", "Cause", "CompileEvent", "CompileLog", "FunctionStats",
    "RecompileWarning", "StaleGlobal", "Summary", "Watch", "active_watches", "is_first_compile",
    "watch",
]
