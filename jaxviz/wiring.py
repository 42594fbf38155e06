"""The one place where jaxviz's parts are connected to each other and to JAX, called by
``import jaxviz``; no other module does anything when imported. Each ``install`` is
idempotent.

- ``calls.install``: JAX hides jaxviz's frames; instrumented code finds its hook.
- ``render.install``: how every object draws itself (``jaxviz.display``).
- ``diff.history.install``: the recompile history listens to the tracker's compiles.
- ``errors.capture.install``: ``jaxviz.trace`` notes the explanation on a tracer error.
- ``recompiles.clears.install``: JAX tells us when ``jax.clear_caches()`` runs.

What only the notebook needs (the exception hook, the tracer-error capture, the session's
watch, the comm) is installed by ``load_ipython_extension`` (``jaxviz.ipython.magics``).
"""

from __future__ import annotations

from .call_scopes import install as install_call_hook
from .diff.history import install as install_recompile_history
from .errors.capture import install as install_trace_error_notes
from .recompiles.clears import install as install_clear_notices
from .render import install as install_renderers


def install() -> None:
    install_call_hook()
    install_renderers()
    install_recompile_history()
    install_trace_error_notes()
    install_clear_notices()
