"""numpyro: the names of the data a user passes to an inference object, for the
recompilation tracker.

``mcmc.run(key, *args, **kwargs)`` and ``svi.update(state, *args, **kwargs)`` hand
``args``/``kwargs`` to the model: a recompile caused by that data is named by the model's
parameters (``def model(x, y=None)``: ``x``, not ``args[0]``). Recognised by the object
the method is bound to (``numpyro.infer.MCMC``, ``numpyro.infer.SVI``), once the user
has imported numpyro.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any


def _model_of(owner: Any) -> Any:
    """The model an MCMC or SVI object runs, or None when ``owner`` is neither."""
    numpyro = sys.modules.get("numpyro")
    infer = getattr(numpyro, "infer", None)
    if infer is None:
        return None
    if isinstance(owner, infer.MCMC):
        return getattr(getattr(owner, "sampler", None), "model", None)
    if isinstance(owner, infer.SVI):
        return getattr(owner, "model", None)
    return None


def model_data_names(owner: Any, args: tuple, kwargs: dict) -> list[str] | None:
    """The model's parameter names for the ``args`` an MCMC/SVI method passes on to it
    (its ``*args``), or None when ``owner`` is not one of those or they do not bind."""
    model = _model_of(owner)
    if model is None:
        return None
    try:
        bound = inspect.signature(model).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    names = list(bound.arguments)
    return names[:len(args)] if len(names) >= len(args) else None


def model_argument_names(entry: Any) -> dict[str, str] | None:
    """{``args[0]``: ``x``, ...} for a frame of an MCMC/SVI method (``MCMC.run``) that
    holds the model's data in ``args``, or None when it is not one."""
    args, kwargs = entry.f_locals.get("args", ()), entry.f_locals.get("kwargs", {})
    if not isinstance(args, tuple) or not isinstance(kwargs, dict):
        return None
    names = model_data_names(entry.f_locals.get("self"), args, kwargs)
    return None if names is None else {f"args[{i}]": n for i, n in enumerate(names)}
