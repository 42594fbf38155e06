"""numpyro: the names of the data a user passes to ``MCMC.run``, for the recompilation
tracker.

``mcmc.run(key, *args, **kwargs)`` hands ``args``/``kwargs`` to the model, and numpyro
jits its own sampling loop over them: a recompile of that loop is caused by the data the
user passed, which the model names (``def model(x, y=None)``). Recognised by the bound
``self`` of numpyro's ``MCMC.run`` frame, once the user has imported numpyro.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any


def model_argument_names(entry: Any) -> dict[str, str] | None:
    """{``args[0]``: ``x``, ...}: the model's parameter names of the arguments of a
    ``MCMC.run`` frame ``entry``, or None when it is not one."""
    numpyro = sys.modules.get("numpyro")
    mcmc = entry.f_locals.get("self")
    if numpyro is None or entry.f_code.co_name != "run" or not isinstance(mcmc, numpyro.infer.MCMC):
        return None
    model = getattr(getattr(mcmc, "sampler", None), "model", None)
    args, kwargs = entry.f_locals.get("args", ()), entry.f_locals.get("kwargs", {})
    try:
        bound = inspect.signature(model).bind_partial(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    names = {}
    params = list(bound.arguments)
    for i in range(len(args)):
        if i < len(params):
            names[f"args[{i}]"] = params[i]
    return names
