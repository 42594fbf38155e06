"""What every adapter returns (``Plan``), the error for an argument no adapter can split,
and the helpers adapters share. A leaf module: it imports no adapter."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax

from ..call_scopes import display_function
from ..jaxprs import path_text


class UnsplittableArgument(TypeError):
    """An argument holds a value that can be neither traced (an array) nor static
    (hashable): the message names it and says what to mark static. Raised before tracing,
    so the user sees one line, not a traceback from inside jaxviz."""


@dataclass(frozen=True)
class InPlaceState:
    """A library's objects whose state a call updates in place (an NNX Module or
    Optimizer): how to recognise one, read its state (with its leaves' names relative to
    the object), write a state back, and name its leaves as ``jax.jit`` flattens it
    (``model.linear1.kernel``). What a notebook cell needs to trace such an update and
    bind it back; one per library that has such objects (``adapters.IN_PLACE``)."""

    recognises: Callable[[Any], bool]
    state_of: Callable[[Any], tuple[Any, list[str]]]
    write_state: Callable[[Any, Any], None]
    leaf_names: Callable[[str, Any], list[str]]


@dataclass
class Plan:
    """What jaxviz traces for what the user calls: ``jax.jit(function, static_argnums=...,
    static_argnames=...)`` applied to ``args`` and ``kwargs``.

    ``user_function`` is the function the user wrote (its name, signature, the globals it
    reads, its code: the traced entry, which gets no call group of its own).
    ``arg_names`` names ``function``'s positional parameters (None: ``user_function``'s).
    ``input_names`` names the traced leaves in ``jax.jit``'s flattening order; None means
    "from ``user_function``'s signature and the arguments' key paths". ``static`` lists
    the parts an adapter held static (name, value); ``output_names`` names the leaves of
    what ``function`` returns (from its output structure), None: ``out``, ``out[1]``...
    ``transparent`` are code objects of wrappers that get no call group (a
    ``functools.wraps`` decorator's ``wrapper``). ``notes`` go to the summary.
    ``lost_outputs`` names the leaves ``function`` returns that the real call drops (state
    updated in place inside a ``jax.jit``): drawn as lost, not as outputs; adapters may
    fill it (and ``notes``) while ``function`` is traced.
    """

    function: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    user_function: Callable[..., Any]
    name: str
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    arg_names: list[str] | None = None
    input_names: list[str] | None = None
    static: list[tuple[str, Any]] = field(default_factory=list)
    output_names: Callable[[Any], list[str]] | None = None
    roots: list[Any] = field(default_factory=list)
    transparent: set[Any] = field(default_factory=set)
    notes: list[str] = field(default_factory=list)
    lost_outputs: list[str] = field(default_factory=list)


def function_name(fn: Any) -> str:
    """The name the user gave ``fn`` (through ``functools.wraps``; a combinator's layer,
    ``serial`` for ``serial.<locals>.apply_fun``; else its class)."""
    name = getattr(fn, "__name__", None)
    if isinstance(name, str) and name:
        qualname = getattr(fn, "__qualname__", name)
        return display_function(qualname).rpartition(".")[2] if qualname != name else name
    return type(fn).__name__


def positional_names(fn: Callable[..., Any], n_args: int) -> list[str]:
    """The parameter name each positional argument binds to (``args[2]`` past them)."""
    try:
        parameters = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        parameters = []
    positional = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    var_args = next((p.name for p in parameters if p.kind == p.VAR_POSITIONAL), "args")
    return [positional[i] if i < len(positional) else f"{var_args}[{i - len(positional)}]"
            for i in range(n_args)]


def leaf_names(name: str, value: Any, is_leaf: Callable[[Any], bool] | None = None) -> list[str]:
    """``name`` + each leaf's key path (``state.params['Dense_0']['kernel']``)."""
    paths = jax.tree_util.tree_flatten_with_path(value, is_leaf=is_leaf)[0]
    return [name + path_text(p) for p, _ in paths]


def output_leaf_names(out_info: Any, base: str = "out") -> list[str]:
    paths = jax.tree_util.tree_flatten_with_path(out_info)[0]
    if len(paths) == 1 and not paths[0][0]:
        return [base]
    return [base + path_text(p) for p, _ in paths]


def is_hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True
