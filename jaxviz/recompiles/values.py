"""How two static values differ, by the rules JAX looks them up with: a static argument
(or a static field, or other auxiliary pytree data) is found in the cache by its hash,
then by ``==``. Each rule is a small function comparing one aspect, tried in order; the
first that explains the difference wins, and its words never read the same on both
sides (two objects that print alike are told apart by what makes them unequal)."""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..call_scopes import original_code
from .signature import plain_static, same_value, short_repr


@dataclass(frozen=True)
class ValueChange:
    """Why a static value missed: ``compared`` says by which rule ("hash": equal but
    hashed apart; "identity": a new object of a class compared by identity; "made_again":
    new function objects with the same code; "part": one part of it changed; None: the
    value changed), ``part`` the path inside the value, ``why`` the reason in words."""

    compared: str | None
    before: Any
    after: Any
    owner: str | None = None
    part: str = ""
    why: str | None = None
    part_is_path: bool = True  # a field or item the user names (not a mesh's devices)


def compares_by_identity(value: Any) -> bool:
    """Whether ``==`` on ``value`` is ``is``: its class defines no ``__eq__`` (functions,
    ``jax.jit`` functions, plain classes)."""
    return getattr(type(value), "__eq__", None) is object.__eq__


def type_label(value: Any) -> str:
    """``function `act```, ``jax.jit function of `<lambda>```, or the class name."""
    if inspect.isfunction(value) or inspect.ismethod(value):
        return f"function `{_function_name(value)}`"
    wrapped = getattr(value, "__wrapped__", None)
    if type(value).__name__ == "PjitFunction" and wrapped is not None:
        return f"jax.jit function of `{_function_name(wrapped)}`"
    return type(value).__name__


def _function_name(fun: Any) -> str:
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or "?"
    return name.split(".<locals>.")[-1]


def _code(value: Any) -> Any:
    while value is not None and getattr(value, "__code__", None) is None:
        nxt = getattr(value, "__func__", None) or getattr(value, "__wrapped__", None)
        if nxt is value:
            return None
        value = nxt
    return None if value is None else original_code(value.__code__)


def same_code(a: Any, b: Any) -> bool:
    """Two distinct callables over the same code: one made again."""
    ca, cb = _code(a), _code(b)
    return a is not b and ca is not None and ca is cb


# ---------------------------------------------------------------------- parts
def parts(value: Any) -> list[tuple[str, Any]] | None:
    """(label, part) of a value's readable state, to point at the part that differs: a
    namedtuple's or dataclass's fields, a container's items, a mesh's devices and axes,
    a plain object's public attributes."""
    fields = getattr(value, "_fields", None) if isinstance(value, tuple) else None
    if fields is not None:
        return [(f".{f}", v) for f, v in zip(fields, value)]
    if isinstance(value, (tuple, list)):
        return [(f"[{i}]", v) for i, v in enumerate(value)] if len(value) <= 64 else None
    if isinstance(value, dict):
        return [(f"[{k!r}]", v) for k, v in value.items()] if len(value) <= 64 else None
    if is_mesh(value):
        return [(".devices", _tuples(np.asarray(value.device_ids).tolist())),
                (".axis_names", tuple(value.axis_names)),
                (".axis_types", tuple(str(t) for t in getattr(value, "axis_types", ())))]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f".{f.name}", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    state = getattr(value, "__dict__", None)
    if isinstance(state, dict) and not inspect.isroutine(value) and not isinstance(value, type):
        return [(f".{k}", v) for k, v in state.items() if not k.startswith("_")][:32]
    return None


def is_mesh(value: Any) -> bool:
    """A ``jax.sharding.Mesh`` (recognised by what it exposes: device ids and axis names)."""
    return type(value).__module__.startswith("jax") and hasattr(value, "device_ids") \
        and hasattr(value, "axis_names")


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return bool(type(a) is type(b) and a.shape == b.shape and np.array_equal(a, b))
        except Exception:
            return False
    return same_value(a, b)


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


# ---------------------------------------------------------------------- the rules
Rule = Callable[[Any, Any], "ValueChange | None"]


def _by_hash(a: Any, b: Any) -> ValueChange | None:
    """Equal, but hashed apart: JAX finds it by hash first."""
    if not same_value(a, b) or _hash(a) == _hash(b):
        return None
    return ValueChange("hash", plain_static(a), plain_static(b), type(b).__name__,
                       why=f"{type(b).__name__} hashes by identity")


def _by_type(a: Any, b: Any) -> ValueChange | None:
    if type(a) is type(b):
        return None
    return ValueChange(None, plain_static(a), plain_static(b))


def _by_made_again(a: Any, b: Any) -> ValueChange | None:
    """New function objects with the same code (a closure made again), alone or as the
    only differences of a container (an optax ``GradientTransformation``'s ``init``,
    ``update``)."""
    if same_code(a, b):
        return ValueChange("made_again", text(a), text(b), type_label(b),
                           why="a new function object with the same code; functions "
                               "compare by identity")
    pa, pb = parts(a), parts(b)
    if pa is None or pb is None or [k for k, _ in pa] != [k for k, _ in pb]:
        return None
    changed = [(k, x, y) for (k, x), (_, y) in zip(pa, pb) if not _equal(x, y)]
    if not changed or not all(same_code(x, y) for _, x, y in changed):
        return None
    names = ", ".join(f"`{k.lstrip('.')}`" for k, _, _ in changed[:4])
    return ValueChange("made_again", text(a), text(b), type(b).__name__,
                       why=f"its functions {names} are new objects with the same code, and "
                           "functions compare by identity")


def _by_part(a: Any, b: Any) -> ValueChange | None:
    """The part of the value that differs, when exactly one does (recursively)."""
    pa, pb = parts(a), parts(b)
    if pa is None or pb is None or [k for k, _ in pa] != [k for k, _ in pb]:
        return None
    changed = [(k, x, y) for (k, x), (_, y) in zip(pa, pb) if not _equal(x, y)]
    if len(changed) != 1:
        return None
    label, x, y = changed[0]
    inner = compare(x, y)
    if inner.compared in ("identity", "made_again", "hash"):
        return dataclasses.replace(inner, part=label + inner.part)
    same = [k.lstrip(".") for k, _ in pb if k != label][:3]
    why = f"same {', '.join(same)}" if same and len(pb) <= 4 else None
    return ValueChange("part", inner.before, inner.after, type(b).__name__, label + inner.part,
                       why=why, part_is_path=inner.part_is_path and not is_mesh(b))


def _by_identity(a: Any, b: Any) -> ValueChange | None:
    """A new object of a class compared by identity, equal in all it shows."""
    if not compares_by_identity(b) or a is b:
        return None
    has_hash = getattr(type(b), "__hash__", None) not in (object.__hash__, None)
    why = ("it defines `__hash__` but no `__eq__`" if has_hash else "it defines no `__eq__`")
    if inspect.isroutine(b) or type(b).__name__ == "PjitFunction":
        why = "functions compare by identity"
    return ValueChange("identity", text(a), text(b), type_label(b), why=why)


RULES: tuple[Rule, ...] = (_by_hash, _by_type, _by_made_again, _by_part, _by_identity)


def compare(a: Any, b: Any) -> ValueChange:
    """Why static value ``b`` did not find ``a``'s compiled entry."""
    for rule in RULES:
        try:
            found = rule(a, b)
        except Exception:  # an odd object: try the next rule
            found = None
        if found is not None:
            return found
    before, after = text(a), text(b)
    if before == after:  # unequal, yet printed alike: say so rather than repeat it
        return ValueChange("unequal", before, after, type(b).__name__,
                           why=f"`==` says they differ ({type(b).__name__}.__eq__)")
    return ValueChange(None, plain_static(a), plain_static(b))


def text(value: Any) -> str:
    """A short text of a value; functions by name (their address says nothing)."""
    if inspect.isroutine(value):
        return f"<function {_function_name(value)}>"
    if type(value).__name__ == "PjitFunction":
        return f"<jax.jit {_function_name(getattr(value, '__wrapped__', value))}>"
    return _ADDRESS.sub("", short_repr(value))


# an address says nothing to the user (reprlib may have cut the text before it: "...at 0x")
_ADDRESS = re.compile(r"(?:\s+(?:object\s+)?|(?<=\.\.\.))at 0x[0-9a-fA-F]+")
