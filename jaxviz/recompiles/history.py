"""What each jitted function compiled before (its objects and signatures), and the
causes of a new compile against it."""

from __future__ import annotations

import dataclasses
import itertools
from collections import OrderedDict, deque
from typing import Any

from .. import _jax_internals as internals
from . import callables
from .causes import Cause, diff, explain_equal, locate_new_objects
from .processes import signature_words
from .signature import (
    FunctionInfo,
    Signature,
    Site,
    ipython_cell,
    short_repr,
    signature_of,
    site_at,
)


class ObjectHistory:
    """What jaxviz knows of one jit object (one JAX cache): its compiled signatures."""

    __slots__ = ("identity", "spec", "number", "signatures", "last_error", "static_values",
                 "axis_sizes", "last_site")

    def __init__(self, fun: Any, spec: Any, number: int) -> None:
        self.identity = callables.Identity(fun)
        self.spec = spec  # (static_argnums, static_argnames)
        self.number = number
        self.signatures: deque[Signature] = deque(maxlen=16)
        self.last_error: tuple[Signature, str] | None = None
        self.static_values: dict[str, set[str]] = {}
        self.axis_sizes: dict[tuple[str, int], set[int]] = {}
        self.last_site: Site | None = None  # where the latest compile was called from

    def is_(self, fun: Any, spec: Any) -> bool:
        # jax.jit(f) made again with the same f and options shares JAX's cache with the
        # first one: the same object for us too.
        return self.identity.is_(fun) and self.spec == spec

    def note(self, causes: list[Cause]) -> None:
        for c in causes:
            if c.kind == "static_value":
                vals = self.static_values.setdefault(c.path, set())
                if len(vals) < 1000:
                    vals.update((short_repr(c.before), short_repr(c.after)))
            elif c.kind == "shape" and c.axis is not None:
                sizes = self.axis_sizes.setdefault((c.path, c.axis), set())
                if len(sizes) < 1000:
                    sizes.update((c.before[c.axis], c.after[c.axis]))


class FunctionHistory:
    """All jit objects with the same code (e.g. a ``jit(lambda)`` re-created in a loop)."""

    __slots__ = ("info", "objects", "count", "numbers")

    def __init__(self, info: FunctionInfo) -> None:
        self.info = info
        self.objects: deque[ObjectHistory] = deque(maxlen=8)
        self.count = 0
        self.numbers = itertools.count(1)

    def object_for(self, fun: Any, spec: Any) -> tuple[ObjectHistory, ObjectHistory | None]:
        """(the object's history, the previously used object if this one is new)."""
        for obj in self.objects:
            if obj.is_(fun, spec):
                return obj, None
        previous = self.objects[-1] if self.objects else None
        obj = ObjectHistory(fun, spec, next(self.numbers))
        self.objects.append(obj)
        return obj, previous


_FUNCTIONS: OrderedDict[Any, FunctionHistory] = OrderedDict()  # by code identity, LRU
_MAX_FUNCTIONS = 4096


def function_history(key: Any, info: FunctionInfo) -> FunctionHistory:
    fh = _FUNCTIONS.get(key)
    if fh is None:
        fh = _FUNCTIONS[key] = FunctionHistory(info)
        while len(_FUNCTIONS) > _MAX_FUNCTIONS:
            _FUNCTIONS.popitem(last=False)
    else:
        _FUNCTIONS.move_to_end(key)
    return fh


def explain_compile(fh: FunctionHistory, obj: ObjectHistory, previous: ObjectHistory | None, sig: Signature,
             call: internals.JitCall | None = None) -> list[Cause]:
    """Why ``sig`` missed: the diff with the previous compile of the same function. When
    an older cached signature explains the miss with strictly fewer changes (the other
    changes went back to a compiled value), that one is used."""
    name = fh.info.name
    if not obj.signatures:
        if previous is not None and (previous.signatures or previous.last_error):
            return [_new_object_cause(name, previous, obj, call)]
        if obj.last_error is None:
            return [Cause("first_call", name, None, str(sig))]
    last = obj.signatures[-1] if obj.signatures else None
    if obj.last_error is not None and (last is None or same_key(obj.last_error[0], sig)):
        if same_key(obj.last_error[0], sig):
            return [Cause("previous_error", name, obj.last_error[1], None)]
        last = obj.last_error[0]
    assert last is not None
    again = next((old for old in reversed(obj.signatures) if not diff(old, sig)), None)
    if again is not None:  # this very key compiled before: what emptied the cache?
        known = sum(1 for old in obj.signatures if old.cleared == sig.cleared)
        return [explain_equal(name, again, sig, call, known)]
    causes = diff(last, sig)
    if not causes:
        return [Cause("unknown", name)]
    keys = {(c.kind, c.path) for c in causes}
    best: list[Cause] | None = None
    for old in list(obj.signatures)[:-1]:
        alt = diff(old, sig)
        alt_keys = {(c.kind, c.path) for c in alt}
        if alt and alt_keys < keys and (best is None or len(alt) < len(best)):
            best = alt
    return locate_new_objects(best or causes, call)


def learn_from_jax_cache(fh: FunctionHistory, obj: ObjectHistory, call: internals.JitCall,
                         sig: Signature, user_words: bool) -> list[Cause]:
    """A jit object jaxviz has not seen compile may have compiled while no watch listened:
    JAX's tracing cache still holds those calls. Count them (``fh.count``), so that the
    next compile is a recompile, and keep their signatures to explain it. ``user_words``:
    ``sig`` is the signature of ``call`` itself (no jit-like wrapper in between); through a
    wrapper the causes are returned, read from the call JAX sees."""
    try:
        current = sig if user_words else signature_of(call)
        earlier = [_placed_like(signature_of(e), current) for e in internals.earlier_jit_calls(call)]
    except Exception:  # never break the user's compile over what came before it
        return []
    fh.count += len(earlier)
    if not earlier:
        return []
    earlier.sort(key=lambda old: len(diff(old, current)), reverse=True)  # the closest last
    if user_words:
        obj.signatures.extend(earlier[-(obj.signatures.maxlen or len(earlier)):])
        return []
    causes = diff(earlier[-1], current) or [Cause("unknown", fh.info.name)]
    names = _user_names(current, sig)
    return [dataclasses.replace(c, path=names.get(c.path, c.path)) for c in causes]


def _user_names(seen_by_jax: Signature, user: Signature) -> dict[str, str]:
    """Each array leaf of the call JAX sees (a jit-like wrapper's) by its name in the user's
    call, when both hold the same arrays in the same order; else nothing."""
    def arrays(sig: Signature) -> list[tuple[str, str]]:
        return [(name, text) for name, text in signature_words(sig).items() if not text.endswith("(static)")]

    theirs, mine = arrays(seen_by_jax), arrays(user)
    if len(theirs) != len(mine) or any(a[1] != b[1] for a, b in zip(theirs, mine)):
        return {}
    return {a[0]: b[0] for a, b in zip(theirs, mine)}


def _placed_like(old: Signature, current: Signature) -> Signature:
    """A signature read back from JAX's tracing cache, its arrays placed as in ``current``
    (the trace cache's key has no placement: the compiled one is unknown)."""
    now = {(a.name, path): leaf.placement for a in current.args for path, leaf in a.leaves}
    args = tuple(dataclasses.replace(a, leaves=tuple(
        (path, dataclasses.replace(leaf, placement=now.get((a.name, path), leaf.placement)))
        for path, leaf in a.leaves)) for a in old.args)
    return dataclasses.replace(old, args=args)


def _new_object_cause(name: str, previous: ObjectHistory, obj: ObjectHistory,
                      call: internals.JitCall | None) -> Cause:
    """Which object is new, what kind it is, and the line that made it."""
    if call is None:
        return Cause("new_function_object", name, previous.number, obj.number)
    try:
        new = callables.describe_new(call.fun, previous.identity.layers, call.caller, ipython_cell)
    except Exception:  # never break the user's compile over a description
        return Cause("new_function_object", name, previous.number, obj.number)
    created = site_at(*new.created) if new.created else None
    where = f"{created}{', inside a loop' if new.in_loop else ''}" if created else None
    return Cause("new_function_object", new.name, previous.number, obj.number,
                 detail=new.kind, owner=where, note=new.note)


def same_key(a: Signature, b: Signature) -> bool:
    try:
        return a == b
    except Exception:
        return repr(a) == repr(b)
