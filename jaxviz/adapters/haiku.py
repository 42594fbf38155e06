"""Haiku: the ``init`` and ``apply`` of an ``hk.transform``ed function, traced as they are
(Haiku names its modules' scopes itself: ``block_0``, ``linear``), named after the
function the user transformed, its arguments after ``apply``'s (``params``, ``rng``) and
that function's parameters; that function is searched for captured globals. Recognised by
the original function Haiku ties to them, once the user has imported Haiku."""

from __future__ import annotations

import sys
from typing import Any

from .base import Plan, positional_names
from .wrappers import is_jit_like


def adapt(fn: Any, args: tuple, kwargs: dict) -> Plan | None:
    if "haiku" not in sys.modules or not getattr(fn, "__module__", "").startswith("haiku") or is_jit_like(fn):
        return None  # a jax.jit of apply copies its attributes: unwrapped first (its static arguments)
    # Haiku ties the user's function to init/apply as ``_original_fn`` (its own
    # ``get_original_fn`` reads it; not exported): tests/test_frameworks.py checks it.
    original = getattr(fn, "_original_fn", None)
    if original is None:
        return None
    fixed = positional_names(fn, len(args))
    n_fixed = len([n for n in fixed if not n.startswith("args[")])
    names = fixed[:n_fixed] + positional_names(original, len(args) - n_fixed)
    return Plan(fn, args, kwargs, user_function=original,
                name=f"{getattr(original, '__name__', 'transformed')}.{fn.__name__.removesuffix('_fn')}",
                arg_names=names, roots=[original])


# ---------------------------------------------------------------------- recompiles
def original_function(fun: Any) -> tuple[Any, str] | None:
    """(the user's function, "init" or "apply") for a Haiku-transformed function, once the
    user has imported Haiku; None otherwise."""
    if "haiku" not in sys.modules:
        return None
    original = getattr(fun, "_original_fn", None)  # set by hk.transform on init and apply
    code = getattr(fun, "__code__", None)
    if original is None or not callable(original) or code is None:
        return None
    if "/haiku/" not in code.co_filename.replace("\\", "/"):
        return None
    return original, code.co_name.removesuffix("_fn")
