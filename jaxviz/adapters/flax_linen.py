"""Flax Linen: ``model.apply`` (bound to a Module) traced as it is, named after the
Module's class (``CNN.apply``), its arguments after ``apply``'s and the Module's ``__call__``'s
parameters, and the Module's methods searched for captured globals. A ``TrainState``
argument needs nothing: it is a pytree, its ``apply_fn`` static. Recognised by
``isinstance(fn.__self__, nn.Module)`` once the user has imported ``flax.linen``."""

from __future__ import annotations

import inspect
import sys
from typing import Any

from .base import Plan, positional_names


def adapt(fn: Any, args: tuple, kwargs: dict) -> Plan | None:
    linen = sys.modules.get("flax.linen")
    module = getattr(fn, "__self__", None)
    if linen is None or not isinstance(module, linen.Module) or getattr(fn, "__name__", "") != "apply":
        return None
    call = inspect.unwrap(type(module).__call__)  # Flax wraps its Modules' methods
    names = ["variables", *positional_names(call, len(args))[1:]] if args else []
    names = names[: len(args)]
    # ``apply`` is the entry; the Module's __call__ is a call inside it (its scope's source)
    return Plan(fn, args, kwargs, user_function=fn, name=f"{type(module).__name__}.apply",
                arg_names=names, roots=[module])
