"""Flax NNX: ``nnx.jit`` functions, and any function taking NNX Modules or Optimizers.

Traced as ``nnx.jit`` traces: the graph nodes among the arguments are split into their
state with ``nnx.split``, merged back inside with ``nnx.merge``, and their state after the
call (``nnx.state``) is returned with the result, so the model and optimizer updates the
call makes are outputs, as ``nnx.jit`` propagates them. Library layers (``nnx.Linear``)
are named after the attribute that holds them (``linear1``: ``is_module``), read from the
user's line, nothing of theirs changed. Recognised by
``nnx.graph.is_graph_node`` once the user has imported ``flax.nnx``.

A jit that is not NNX's (``jax.jit``, ``eqx.filter_jit``) takes the Modules as pytrees and
writes nothing back: the updates the call makes inside are computed and dropped. They are
drawn as lost (``Plan.lost_outputs``), not as outputs, and the summary says which
argument lost its new state."""

from __future__ import annotations

import functools
import inspect
import sys
from typing import Any

import jax

from .. import _jax_internals as internals
from ..jaxprs import key_text
from .base import InPlaceState, Plan, function_name, leaf_names, positional_names
from .wrappers import is_jit_like


def adapt(fn: Any, args: tuple, kwargs: dict) -> Plan | None:
    nnx = sys.modules.get("flax.nnx")
    if nnx is None:
        return None
    target = fn.__wrapped__ if is_jit_like(fn) else fn
    dropped_by = _dropping_transform(nnx, fn)
    arg_names = positional_names(target, len(args))
    nodes = {i: a for i, a in enumerate(args) if nnx.graph.is_graph_node(a)}
    nodes.update({k: v for k, v in kwargs.items() if nnx.graph.is_graph_node(v)})
    if not nodes:
        return None
    keys = list(nodes)
    graphdef, state = nnx.split(tuple(nodes.values()))
    node_names = [arg_names[k] if isinstance(k, int) else k for k in keys]
    rest_args = [a for i, a in enumerate(args) if i not in nodes]
    rest_kwargs = {k: v for k, v in kwargs.items() if k not in nodes}

    def merged_call(state: Any, *call_args: Any, **call_kwargs: Any) -> Any:
        merged = nnx.merge(graphdef, state)
        full = list(call_args)
        for key, node in zip(keys, merged):
            if isinstance(key, int):
                full.insert(key, node)
            else:
                call_kwargs[key] = node
        before = dict(zip(state_names, jax.tree_util.tree_leaves(state)))  # Variables change in place
        out = target(*full, **call_kwargs)
        if dropped_by is None:
            return out, nnx.state(merged)
        lost_leaves = _lost_state(before, nnx.state(merged), out, node_names)
        lost[:] = [name for name, _ in lost_leaves]
        notes[:] = [_lost_note(lost, node_names, dropped_by)] if lost else []
        return out, [leaf for _, leaf in lost_leaves]

    rest_names = [n for i, n in enumerate(arg_names) if i not in nodes]
    state_names = _state_names(state, node_names)
    names = list(state_names)
    names += [n for name, value in zip(rest_names, rest_args) for n in leaf_names(name, value)]
    names += [n for key in sorted(rest_kwargs) for n in leaf_names(key, rest_kwargs[key])]

    def output_names(out_info: Any) -> list[str]:
        result, new_state = out_info
        return leaf_names("out", result) + (_state_names(new_state, node_names) if dropped_by is None else lost)

    lost: list[str] = []  # filled while tracing: the state a jax.jit computes and drops
    notes: list[str] = []
    return Plan(merged_call, (state, *rest_args), rest_kwargs, user_function=target,
                name=function_name(target), input_names=names, output_names=output_names,
                roots=[target, *args, *kwargs.values()], lost_outputs=lost, notes=notes)


def _dropping_transform(nnx: Any, fn: Any) -> str | None:
    """How the user would name ``fn`` when it is a JAX transformation that takes NNX Modules
    as pytrees and writes nothing back (``jax.jit``, ``eqx.filter_jit``, ``jax.vmap``,
    ``jax.pmap``); None for ``nnx.jit``, NNX's other transforms, and plain functions (whose
    in-place updates are real)."""
    if is_jit_like(fn):
        if isinstance(fn, _nnx_jit_type(nnx)):
            return None
        if internals.jit_static_args(fn) is not None:
            return "jax.jit"
        return "eqx.filter_jit" if type(fn).__module__.startswith("equinox") else type(fn).__name__
    if internals.is_pmap(fn):
        return "jax.pmap"
    code = getattr(fn, "__code__", None)
    if hasattr(fn, "__wrapped__") and code is not None and internals.is_jax_file(code.co_filename):
        return f"jax.{code.co_name.removesuffix('_f')}"  # vmap_f: jax.vmap, grad_f: jax.grad
    return None


@functools.cache
def _nnx_jit_type(nnx: Any) -> type:
    """The class of what ``nnx.jit`` returns."""
    return type(nnx.jit(_identity))


def _identity(x: Any) -> Any:
    return x


def _lost_state(before: dict[str, Any], after: Any, returned: Any, node_names: list[str]) -> list[tuple[str, Any]]:
    """(name, new value) of each state leaf the call changed (``before``: name → value
    when called) but did not return."""
    kept = {id(leaf) for leaf in jax.tree_util.tree_leaves(returned)}
    new = zip(_state_names(after, node_names), jax.tree_util.tree_leaves(after))
    return [(name, leaf) for name, leaf in new if leaf is not before.get(name) and id(leaf) not in kept]


def _lost_note(lost: list[str], node_names: list[str], wrapper: str) -> str:
    """"`optimizer` is updated inside `jax.jit` but never returned: its new state is lost"."""
    owners = [n for n in node_names if any(name == n or name.startswith((n + ".", n + "[")) for name in lost)]
    shown = " and ".join(f"`{n}`" for n in owners)
    verb, its, it = ("are", "their", "them") if len(owners) > 1 else ("is", "its", "it")
    return (f"{shown} {verb} updated inside `{wrapper}` but never returned: {its} new state is lost; "
            f"use `nnx.jit` or return {it}")


def is_graph_node(value: Any) -> bool:
    """An NNX Module or Optimizer (state a call may update in place)."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and nnx.graph.is_graph_node(value)


def state_of(node: Any) -> tuple[Any, list[str]]:
    """The node's state (``nnx.state``) and its leaves' names relative to the node."""
    state = sys.modules["flax.nnx"].state(node)
    return state, _state_names(state, [""], single=True)


def node_leaf_names(name: str, node: Any) -> list[str]:
    """Names of a node's leaves as ``jax.jit`` flattens it (``model.linear1.kernel``,
    without the Variable's own ``.value``)."""
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(node)[0]:
        if path and isinstance(path[-1], jax.tree_util.GetAttrKey) and path[-1].name == "value":
            path = path[:-1]
        names.append(name + "".join(_attr_text(k) for k in path))
    return names


def write_state(node: Any, state: Any) -> None:
    """Put the state a traced call produced back into the user's node (``nnx.update``)."""
    sys.modules["flax.nnx"].update(node, state)


# A Module's or Optimizer's state, as a notebook cell reads and writes it back.
IN_PLACE = InPlaceState(is_graph_node, state_of, write_state, node_leaf_names)


def _state_names(state: Any, node_names: list[str], single: bool = False) -> list[str]:
    """``model.linear1.kernel``, ``optimizer.opt_state[0].mu.kernel``: the argument's name
    for the state's first key, then the path, without the Variable's own ``.value``."""
    names = []
    for path, _ in jax.tree_util.tree_flatten_with_path(state)[0]:
        head, *rest = (jax.tree_util.DictKey(0), *path) if single else path
        if rest and isinstance(rest[-1], jax.tree_util.GetAttrKey) and rest[-1].name == "value":
            rest = rest[:-1]
        text = "".join(_attr_text(k) for k in rest)
        names.append(node_names[head.key] + text)
    return names


def _attr_text(key: Any) -> str:
    """A state key as the attribute it is: ``.linear1``, ``[0]`` (a list or tuple index)."""
    if isinstance(key, jax.tree_util.DictKey):
        k = key.key
        return f".{k}" if isinstance(k, str) and k.isidentifier() else f"[{k!r}]"
    return key_text(key)


def is_module(value: Any) -> bool:
    """An NNX Module: its calls have no name of their own (no ``jax.named_scope``), so a
    library layer (``nnx.Linear``) is named after the attribute that holds it."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and isinstance(value, nnx.Module)


def is_module_call(code: Any) -> bool:
    """Whether ``code`` is the ``__call__`` of an NNX Module class (a library's layer,
    ``nnx.Linear``, that another calls as ``self.ii(x)``)."""
    nnx = sys.modules.get("flax.nnx")
    return nnx is not None and code in _module_calls(nnx.Module, len(sys.modules))


@functools.lru_cache(maxsize=2)
def _module_calls(module_class: type, module_count: int) -> frozenset[Any]:
    """The code of every subclass's own ``__call__``; read again only when a module was
    imported (``module_count``), as a library's layer classes come with its modules."""
    found, stack = set(), [module_class]
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        call = inspect.unwrap(cls.__dict__["__call__"]) if "__call__" in cls.__dict__ else None
        code = getattr(call, "__code__", None)
        if code is not None:
            found.add(code)
    return frozenset(found)


# ---------------------------------------------------------------------- recompiles
def static_fields(node_type: Any, aux: Any) -> list[tuple[str, Any]] | None:
    """[(attribute, value)] of the static attributes (``self.step_count = 0``) in an NNX
    pytree node's auxiliary data ``(data names, static names, static values)``, or None
    when ``node_type`` is not an NNX pytree node or its data has another layout."""
    nnx = sys.modules.get("flax.nnx")
    pytree = getattr(nnx, "Pytree", None) if nnx is not None else None
    if pytree is None or not (isinstance(node_type, type) and issubclass(node_type, pytree)):
        return None
    if not (isinstance(aux, tuple) and len(aux) == 3):
        return None
    names, values = aux[1], aux[2]
    if not (isinstance(names, tuple) and isinstance(values, tuple) and len(names) == len(values)
            and all(isinstance(n, str) for n in names)):
        return None
    return [(n, v) for n, v in zip(names, values) if not n.startswith("_")]
