"""Why a function compiled again: two signatures diffed into ``Cause``s, argument by
argument (``x: f32[3] → f32[4]``, ``static neg: True → False``, the pytree node whose
structure changed)."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any

import jax

from .. import _jax_internals as internals
from ..adapters import equinox, flax_nnx
from ..call_scopes import is_user_file
from . import callables, clears, values
from .signature import (
    MISSING,
    ArgSig,
    Leaf,
    Signature,
    is_committed,
    json_safe,
    placement_words,
    same_value,
    short_repr,
    site_at,
)


# ====================================================================== causes
@dataclass(frozen=True)
class Cause:
    """Why a call missed the cache: ``path`` is the argument's own name (with the pytree
    path inside it), ``before``/``after`` the value on the previous compile and now."""

    kind: str
    path: str
    before: Any = None
    after: Any = None
    axis: int | None = None  # for shape changes along one axis
    # for pytree_structure: "node" (another container type), "children" (other keys or
    # number of children), "static_field" (a static field of ``owner``, a registered
    # dataclass), "static_data" (other auxiliary data of a custom node of type ``owner``)
    # for static_value: "hash" (equal to the compiled value, hashed differently) or
    # "identity" (a new object of a class compared by identity); for new_function_object:
    # the kind of the new object ("partial", "method", "closure", ...), ``owner`` where it
    # was created and ``note`` what it is, in words
    detail: str | None = None
    owner: str | None = None
    note: str | None = None
    # for a static value or field: the rule that told it apart (``values.compare``: "hash",
    # "identity", "made_again", "part", "unequal"), the part inside the value that
    # differs, the value's type, why in words, and where the new object was built; for
    # "static_data" (opaque auxiliary data), ``part`` is the node's attribute that holds
    # the part that differs (``.fun``), where one does
    compared: str | None = None
    part: str = ""
    value_type: str | None = None
    why: str | None = None
    built: str | None = None
    # the new value itself, until ``locate_new_objects`` has found where it was built
    subject: Any = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        p, b, a = f"`{self.path}`", self.before, self.after
        k = self.kind
        if k == "first_call":
            return f"first call of {p}"
        if k == "shape":
            where = f" on axis {self.axis} ({b[self.axis]} → {a[self.axis]})" if self.axis is not None else ""
            return f"{p} changed shape {_shape(b)} → {_shape(a)}{where}"
        if k == "dtype":
            return f"{p} changed dtype {b} → {a}"
        if k == "weak_type":
            what = {True: "a Python scalar (weakly typed)", False: "a typed array/scalar"}
            return f"{p} was {what.get(b, b)} and is now {what.get(a, a)}"
        if k == "static_value":
            return self._static_text(f"static argument {p}")
        if k == "pytree_structure":
            if self.detail == "node" and (b == "None" or a == "None"):
                return f"{p}: {b} → {a}"
            if b is None:
                return f"{p} is new (the pytree gained it: {a})"
            if a is None:
                return f"{p} is gone (the pytree lost it: was {b})"
            if self.detail == "static_field":
                return self._static_text(f"static field {p} of {self.owner}")
            if self.detail == "static_data":
                return self._aux_text()
            if self.detail == "children":
                return f"{p} changed its entries {b} → {a}"
            if self.detail == "node":
                return f"{p} changed container {b} → {a}"
            return f"the pytree structure of {p} changed {b} → {a}"
        if k == "new_function_object":
            if self.note:
                verb = "defined" if self.detail == "closure" or self.before is None else "created"
                where = f", {verb} at {self.owner}" if self.owner else ""
                return f"{p} is {self.note}{where}: not the object compiled before"
            return f"{p} is a new function object with the same code (object #{a}, was #{b})"
        if k == "arg_count":
            if b is None:
                return f"argument {p} is new ({a})"
            if a is None:
                return f"argument {p} is no longer passed"
            return f"{p} is now passed as {a} (was {b})"
        if k in ("sharding", "device"):
            return f"{p} moved: {b} → {a}"
        if k == "commitment":
            return f"{p} was {b} and is now {a} (committed and uncommitted inputs compile apart)"
        if k == "donation":
            return (f"{p} is donated now (donate_argnums) and was not at the compiled call" if a
                    else f"{p} was donated (donate_argnums) at the compiled call and is not now")
        if k == "context" and self.path == "transform":
            return (f"it is called under {a or 'no transformation'} (was "
                    f"{b or 'called directly'}): each transformation compiles its own program")
        if k == "context":
            return f"config {self.path} changed {b!r} → {a!r}"
        if k == "previous_error":
            return f"the previous trace of {p} failed ({b}) and was not cached"
        if k == "cache_cleared":
            where = f" at {self.owner}" if self.owner else ""
            if self.detail == "clear_caches":
                return (f"`jax.clear_caches()` ran{where} after `{b}` compiled this same key: "
                        "JAX's caches were emptied (nothing in the call changed)")
            return (f"{p} emptied the cache of `{b}` after it compiled this same key "
                    "(nothing in the call changed)")
        if k == "evicted":
            return (f"`{p}` compiled this same key before, and JAX's cache of `{p}` no longer "
                    f"holds it ({a} entries now): it was evicted (nothing in the call changed; "
                    f"compared {COMPARED})")
        if self.detail == "unreadable":
            return (f"jaxviz could not read the arguments of this call of {p} ({self.before}), "
                    "so it could not compare them with the compiled ones")
        return (f"no difference found for {p} since an earlier compile (compared {COMPARED}); "
                "jax.clear_caches() did not run since, and JAX's cache of it could not be read")

    def _static_text(self, head: str) -> str:
        """A static value's change, by the rule that told the two apart."""
        b, a, how = self.before, self.after, self.compared
        if self.detail == "became_static":
            return (f"{self.path and f'`{self.path}`'}: {b} → {a}, a Python {self.owner} that the "
                    "jit-like wrapper holds static (not an array): each value compiles its own program")
        if self.detail == "became_traced":
            return f"`{self.path}`: {b} → {a}, an array now, traced (was held static)"
        built = f", built at {self.built}" if self.built else ""
        what = self.value_type or ""
        what = what if "`" in what else f"`{what}`"
        part = f" (its part `{self.part.lstrip('.')}`)" if self.part and how != "part" else ""
        if how == "hash":
            return (f"{head} is equal to the compiled value ({short_repr(a)}) but hashes "
                    f"differently: {self.why}")
        if how == "identity":
            return f"{head}{part}: a new {what} object, compared by identity ({self.why}){built}"
        if how == "made_again":
            return f"{head}{part}: a new {what} made again ({self.why}){built}"
        if how == "part":
            why = f" ({self.why})" if self.why else ""
            return f"{head}: {self.part.lstrip('.')} {_text(b)} → {_text(a)}{why}"
        if how == "unequal":
            return f"{head}: {_text(b)} → {_text(a)}, printed alike but unequal: {self.why}"
        return f"{head} changed {short_repr(b)} → {short_repr(a)}"

    def _aux_text(self) -> str:
        """A custom node's opaque auxiliary data changed: the node, the rule that told the
        two apart, and the attribute of the node that holds the part that did (``part``)."""
        b, a, how = self.before, self.after, self.compared
        data = f"the static (auxiliary) data of `{self.path}`, a {self.owner} node,"
        held = f" (`{self.path}{self.part}`)" if self.part else ""
        what = self.value_type or ""
        what = what if "`" in what else f"`{what}`"
        built = f", built at {self.built}" if self.built else ""
        if how == "identity":
            return f"{data} holds a new {what} object{held}, compared by identity ({self.why}){built}"
        if how == "made_again":
            return f"{data} holds a new {what} made again{held} ({self.why}){built}"
        if how == "hash":
            return (f"{data} holds a value{held} equal to the compiled one ({short_repr(a)}) "
                    f"but hashed differently: {self.why}")
        changed = f"changed: `{self.path}{self.part}` " if self.part else "changed "
        if how == "unequal":
            return f"{data} {changed}{_text(b)} → {_text(a)}, printed alike but unequal: {self.why}"
        return f"{data} {changed}{_text(b)} → {_text(a)}"

    def to_json(self) -> dict[str, Any]:
        out = {"kind": self.kind, "path": self.path, "before": json_safe(self.before),
               "after": json_safe(self.after), "axis": self.axis, "text": str(self)}
        if self.detail is not None:
            out.update(detail=self.detail, owner=self.owner)
        if self.note is not None:
            out["note"] = self.note
        if self.compared is not None:
            out.update(compared=self.compared, part=self.part, value_type=self.value_type,
                       why=self.why, built=self.built)
        elif self.part:
            out["part"] = self.part
        return out


# What a signature holds (the unknown cause says it all matched).
COMPARED = ("the function object, each argument's shape, dtype, weak type, static value "
            "(== and hash), pytree structure, placement and donation, and JAX's config, "
            "the type's sharding, the transformations it runs under, and the user's call "
            "into a library that jitted it")


def _text(value: Any) -> str:
    return value if isinstance(value, str) else short_repr(value)


def _shape(s: Any) -> str:
    if isinstance(s, tuple):
        return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"
    return str(s)


def _short_structure(treedef: Any) -> str:
    """``tuple (*, *)``, ``list [*, *]``, ``Batch(*, *)``: the container and its layout."""
    if treedef is None:
        return "?"
    text = str(treedef)
    if text.startswith("PyTreeDef(") and text.endswith(")"):
        text = text[len("PyTreeDef("):-1]
    try:
        kind = treedef.node_data()[0].__name__
    except Exception:
        kind = None
    text = f"{kind} {text}" if kind and not text.startswith(kind) else text
    return text if len(text) <= 60 else text[:59] + "…"


# ---------------------------------------------------------------------- treedef diff
class _Hole:
    """A placeholder leaf, to rebuild a treedef's containers and read their child keys."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "*"


def _rebuild(treedef: Any) -> Any:
    try:
        return treedef.unflatten([_Hole() for _ in range(treedef.num_leaves)])
    except Exception:  # a custom unflatten that checks its leaves
        return MISSING


def _one_level(treedef: Any, obj: Any) -> list[tuple[str, Any, Any]] | None:
    """[(key text, key, child object)] of one node, in flattening order, or None."""
    if obj is MISSING:
        return None
    try:
        flat, _ = jax.tree_util.tree_flatten_with_path(obj, is_leaf=lambda y: y is not obj)
    except Exception:
        return None
    if len(flat) != len(treedef.children()) or any(len(p) != 1 for p, _ in flat):
        return None
    return [(jax.tree_util.keystr(p), p[0], child) for p, child in flat]


def _node_text(treedef: Any) -> str:
    data = treedef.node_data()
    if data is None:
        return "an array leaf"
    if data[0] is type(None):
        return "None"
    return _short_structure(treedef)


def _entries_text(keys: list[str]) -> str:
    if not keys:
        return "none"
    return ", ".join(keys[:8]) + (f", … {len(keys) - 8} more" if len(keys) > 8 else "")


def _type_name(t: Any) -> str:
    return getattr(t, "__name__", None) or type(t).__name__


def _value_text(value: Any) -> str:
    """A short text of a value; functions with their address (closures made again are
    equal in name, not in identity)."""
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
        return f"<function {name.split('.<locals>.')[-1]} at {id(value):#x}>"
    return short_repr(value)


def _items(value: Any) -> list[tuple[str, Any]] | None:
    """(label, part) of a small container, to point at the part that differs."""
    fields = getattr(value, "_fields", None) if isinstance(value, tuple) else None
    if fields is not None:  # a namedtuple
        return [(f"{f}=", v) for f, v in zip(fields, value)]
    if isinstance(value, (tuple, list)) and len(value) <= 64:
        return [("", v) for v in value]
    if isinstance(value, dict) and len(value) <= 64:
        return [(f"{k!r}: ", v) for k, v in value.items()]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [(f"{f.name}=", getattr(value, f.name, None)) for f in dataclasses.fields(value)]
    return None


def _pair_texts(a: Any, b: Any, depth: int = 3) -> tuple[str, str]:
    """Texts of two unequal values that show where they differ (both sides differ)."""
    if depth and type(a) is type(b):
        ia, ib = _items(a), _items(b)
        if ia is not None and ib is not None and [k for k, _ in ia] == [k for k, _ in ib]:
            for i, ((label, va), (_, vb)) in enumerate(zip(ia, ib)):
                if same_value(va, vb):
                    continue
                sa, sb = _pair_texts(va, vb, depth - 1)
                head = "…, " if i else ""
                tail = ", …" if i < len(ia) - 1 else ""
                if isinstance(a, dict):
                    open_, close = "{", "}"
                elif isinstance(a, list):
                    open_, close = "[", "]"
                elif isinstance(a, tuple) and not hasattr(a, "_fields"):
                    open_, close = "(", ")"
                else:
                    open_, close = type(a).__name__ + "(", ")"
                return (f"{open_}{head}{label}{sa}{tail}{close}",
                        f"{open_}{head}{label}{sb}{tail}{close}")
    sa, sb = _value_text(a), _value_text(b)
    if sa == sb:  # equal-looking, not equal: a new object
        sa, sb = f"{sa} (object {id(a):#x})", f"{sb} (object {id(b):#x})"
    return sa, sb


def _static_field_names(node_type: Any, aux: Any, keys: list[tuple[str, Any, Any]]) -> list[str] | None:
    """The static (meta) field names of a registered dataclass node (flax.struct,
    jax.tree_util.register_dataclass), in the order of its auxiliary data."""
    if not (dataclasses.is_dataclass(node_type) and isinstance(aux, tuple)):
        return None
    data = {getattr(k, "name", None) for _, k, _ in keys}
    meta = [f.name for f in dataclasses.fields(node_type) if f.name not in data]
    return meta if len(meta) == len(aux) else None


def _library_static_fields(node_type: Any, aux: Any) -> list[tuple[str, Any]] | None:
    """A library node's static fields by name (an ``nnx.Module``'s attributes, an
    ``eqx.Module``'s ``eqx.field(static=True)``), from its auxiliary data."""
    for adapter in (flax_nnx, equinox):
        fields = adapter.static_fields(node_type, aux)
        if fields is not None:
            return fields
    return None


def _first_node_difference(ta: Any, oa: Any, tb: Any, ob: Any, path: str, depth: int = 0
                           ) -> tuple[str, str, Any, Any, str | None] | Cause | None:
    """The first node where two treedefs differ, depth first: (path, detail, before,
    after, owner) for another node type or other children, a ``Cause`` for changed
    auxiliary (static) data."""
    na, nb = ta.node_data(), tb.node_data()
    if na is None and nb is None:
        return None
    if na is None or nb is None or na[0] is not nb[0]:
        return path, "node", _node_text(ta), _node_text(tb), None
    (node_type, aux_a), (_, aux_b) = na, nb
    ka, kb = _one_level(ta, oa), _one_level(tb, ob)
    ca, cb = ta.children(), tb.children()
    names_a = [k for k, _, _ in ka] if ka is not None else [f"[{i}]" for i in range(len(ca))]
    names_b = [k for k, _, _ in kb] if kb is not None else [f"[{i}]" for i in range(len(cb))]
    if len(ca) != len(cb) or names_a != names_b:
        return path, "children", _entries_text(names_a), _entries_text(names_b), None
    if not same_value(aux_a, aux_b):
        return _aux_cause(path, node_type, aux_a, aux_b, kb, oa, ob)
    if depth > 200:
        return None
    for i, (sa, sb) in enumerate(zip(ca, cb)):
        found = _first_node_difference(sa, ka[i][2] if ka else MISSING, sb,
                                       kb[i][2] if kb else MISSING, path + names_b[i], depth + 1)
        if found is not None:
            return found
    return None


def _aux_cause(path: str, node_type: Any, aux_a: Any, aux_b: Any,
               keys: list[tuple[str, Any, Any]] | None, node_a: Any = MISSING,
               node_b: Any = MISSING) -> Cause:
    """A node's auxiliary (static) data changed: the static field that did, by name
    (a registered dataclass, an ``nnx.Module``, an ``eqx.Module``), compared as JAX does;
    else the node itself, its data opaque (``_opaque_aux_cause``). ``node_a``/``node_b``:
    the nodes rebuilt from each structure."""
    owner = _type_name(node_type)
    if values.same_code(aux_a, aux_b):  # jax.tree_util.Partial over a closure made again
        return _function_in_tree_cause(path, aux_b, owner)
    named_a, named_b = _library_static_fields(node_type, aux_a), _library_static_fields(node_type, aux_b)
    if named_a is None or named_b is None or [n for n, _ in named_a] != [n for n, _ in named_b]:
        fields = _static_field_names(node_type, aux_a, keys or [])
        named_a = named_b = None
        if fields is not None and isinstance(aux_b, tuple) and len(aux_b) == len(fields):
            named_a, named_b = list(zip(fields, aux_a)), list(zip(fields, aux_b))
    for (fname, va), (_, vb) in zip(named_a or (), named_b or ()):
        if not same_value(va, vb) or _hash(va) != _hash(vb):
            return _value_cause("pytree_structure", f"{path}.{fname}", va, vb, "static_field", owner)
    return _opaque_aux_cause(path, owner, aux_a, aux_b, node_a, node_b)


def _opaque_aux_cause(path: str, owner: str, aux_a: Any, aux_b: Any, node_a: Any,
                      node_b: Any) -> Cause:
    """The auxiliary data of a custom node whose fields have no names
    (``register_pytree_node``): the data is opaque, so an index into it (``[0]``) is no
    path inside the argument (``g_vjp[0]`` would be the node's first child). The cause is
    the node; the part that differs is told apart by the rule JAX's lookup broke
    (``values.compare``: a new object compared by identity, ...), and named by the node's
    attribute that holds it (``g_vjp.fun``) where one does, on both sides."""
    change = values.compare(aux_a, aux_b)
    part = change.part if change.part_is_path else ""  # not a mesh's devices
    held = _attribute_holding(node_a, node_b, aux_a, aux_b, part)
    compared = None if change.compared == "part" else change.compared
    old_part, new_part = _part_of(aux_a, part), _part_of(aux_b, part)
    subject = new_part if compared in ("identity", "made_again") else None
    if held is None:
        if compared is None:  # the whole data, where they differ: no index to name
            return Cause("pytree_structure", path, *_pair_texts(aux_a, aux_b),
                         detail="static_data", owner=owner)
        return Cause("pytree_structure", path, change.before, change.after, detail="static_data",
                     owner=owner, compared=compared, value_type=change.owner, why=change.why,
                     subject=subject)
    attribute, rest = held
    if compared is None:  # a value: the part that differs, under the attribute holding it
        b, a = _pair_texts(old_part, new_part)
        return Cause("pytree_structure", path, b, a, detail="static_data", owner=owner,
                     part=attribute + rest)
    return Cause("pytree_structure", path, change.before, change.after, detail="static_data",
                 owner=owner, compared=compared, part=attribute + rest, value_type=change.owner,
                 why=change.why, subject=subject)


def _attribute_holding(node_a: Any, node_b: Any, aux_a: Any, aux_b: Any, part: str
                       ) -> tuple[str, str] | None:
    """Where the part of a node's auxiliary data at ``part`` (``[0]``, ``[1]['k']``) can
    be found on the node itself: (``.fun``, the rest of ``part`` below it), the deepest
    object along ``part`` that one attribute of each rebuilt node holds (the same object,
    checked by identity, and no other attribute holding it), or None."""
    if node_a is MISSING or node_b is MISSING or type(node_a) is not type(node_b):
        return None
    chain = [("", aux_a, aux_b)]  # (the part so far, the object there on each side)
    while (rest := part[len(chain[-1][0]):]):
        _, obj_a, obj_b = chain[-1]
        step = next(((label, x, y) for (label, x), (_, y) in
                     zip(values.parts(obj_a) or (), values.parts(obj_b) or ())
                     if _starts_with_part(rest, label)), None)
        if step is None:
            break
        chain.append((chain[-1][0] + step[0], step[1], step[2]))
    attrs_a, attrs_b = _attributes(node_a), _attributes(node_b)
    for done, obj_a, obj_b in reversed(chain):
        names = [n for n, v in attrs_b if v is obj_b and dict(attrs_a).get(n, MISSING) is obj_a]
        if len(names) == 1:
            return f".{names[0]}", part[len(done):]
    return None


def _attributes(obj: Any) -> list[tuple[str, Any]]:
    """A plain object's public attributes (dataclass fields, slots, ``__dict__``)."""
    names: list[str] = []
    if dataclasses.is_dataclass(obj):
        names += [f.name for f in dataclasses.fields(obj)]
    for cls in type(obj).__mro__:
        slots = getattr(cls, "__slots__", ())
        names += [slots] if isinstance(slots, str) else list(slots)
    state = getattr(obj, "__dict__", None)
    if isinstance(state, dict):
        names += list(state)
    out = []
    for name in dict.fromkeys(names):
        if not isinstance(name, str) or name.startswith("_"):
            continue
        try:
            out.append((name, getattr(obj, name)))
        except Exception:  # an unset slot, an odd __getattr__
            continue
    return out


def _value_cause(kind: str, path: str, before: Any, after: Any, detail: str | None = None,
                 owner: str | None = None) -> Cause:
    """A static value (an argument, a field, auxiliary data) that missed, told apart by
    the rule JAX's lookup broke (``values.compare``); a field of it that differs is named
    by its path, as the user writes it."""
    change = values.compare(before, after)
    part = change.part if change.part_is_path else ""
    if part:
        path = path + part
        before, after = _part_of(before, part), _part_of(after, part)
        change = dataclasses.replace(change, part="", compared=None if change.compared == "part"
                                     else change.compared)
    if kind == "static_value" and change.compared in ("hash", "identity", "made_again"):
        detail, owner = change.compared, type(after).__name__
    b, a = change.before, change.after
    if kind == "pytree_structure" and change.compared is None:
        b, a = _pair_texts(before, after)
    subject = after if change.compared in ("identity", "made_again") else None
    return Cause(kind, path, b, a, detail=detail, owner=owner, compared=change.compared,
                 part=change.part, value_type=change.owner, why=change.why,
                 subject=_part_of(subject, change.part))


def _part_of(value: Any, part: str) -> Any:
    """The object at ``part`` (``.tx``, ``['opt']``) inside ``value``."""
    if value is None or not part:
        return value
    for label, inner in values.parts(value) or ():
        if _starts_with_part(part, label):
            return _part_of(inner, part[len(label):])
    return value


def _starts_with_part(part: str, label: str) -> bool:
    """Whether ``part`` (``.ab[0]``) goes through ``label`` (``.ab``, not ``.a``)."""
    return part.startswith(label) and part[len(label):len(label) + 1] in ("", ".", "[")


def _structure_cause(name: str, old: Any, new: Any) -> Cause:
    """The first node where two pytree structures of argument ``name`` differ."""
    found = None
    if old is not None and new is not None:
        try:
            found = _first_node_difference(old, _rebuild(old), new, _rebuild(new), "")
        except Exception:
            found = None
    if found is None:
        return Cause("pytree_structure", name, _short_structure(old), _short_structure(new))
    if isinstance(found, Cause):
        return dataclasses.replace(found, path=name + found.path)
    path, detail, before, after, owner = found
    return Cause("pytree_structure", name + path, before, after, detail=detail, owner=owner)


def _function_in_tree_cause(path: str, fun: Any, owner: str | None) -> Cause:
    """A pytree node (``jax.tree_util.Partial``, a module's static field) holds a function
    made again: which one, and where it is defined."""
    code = fun.__code__
    qualname = getattr(fun, "__qualname__", code.co_name)
    what = "a jax.tree_util.Partial" if owner == "Partial" else f"a {owner}"
    if "<locals>" in qualname:
        parent = qualname.split(".<locals>.")[-2].split(".")[-1]
        note = (f"{what} over a new closure `{fun.__name__}`, made again by a new call of "
                f"`{parent}`")
    else:
        note = f"{what} over a new function object `{fun.__name__}` (the same code)"
    return Cause("new_function_object", path, None, None,
                 detail="tree_partial" if owner == "Partial" else "closure",
                 owner=str(site_at(code.co_filename, code.co_firstlineno)), note=note)


def diff(old: Signature, new: Signature) -> list[Cause]:
    """Every difference between two call signatures, as causes: each component of JAX's
    key compared by its own function (``COMPONENTS``), in order of severity, each in the
    user's words."""
    causes: list[Cause] = []
    for component in COMPONENTS:
        causes += component(old, new)
        if causes and component is _library_call:
            # what the user changed in their call explains the library's key, which says
            # the same change in the library's internal names: those are left out
            return causes + _trace_context(old, new)
    return causes


def _library_call(old: Signature, new: Signature) -> list[Cause]:
    """The user's call into a library that jitted the function (``x`` of
    ``mcmc.run(key, x, y)``): what the user changed, before the library's own key."""
    if old.entry is None or new.entry is None or old.entry[0] != new.entry[0]:
        return []
    return diff(old.entry[1], new.entry[1])


def _trace_context(old: Signature, new: Signature) -> list[Cause]:
    """Config in the key, the mesh context, the eager transformations the call is under."""
    before, after = dict(old.context), dict(new.context)
    return [Cause("context", name, before.get(name), after.get(name))
            for name in dict.fromkeys([*before, *after])
            if not same_value(before.get(name), after.get(name))]


def _arguments_passed(old: Signature, new: Signature) -> list[Cause]:
    """Arguments no longer passed, newly passed, or passed another way (by keyword)."""
    olds, news = {a.name: a for a in old.args}, {a.name: a for a in new.args}
    causes = [Cause("arg_count", a.name, a.text(), None) for a in old.args if a.name not in news]
    for arg in new.args:
        prev = olds.get(arg.name)
        if prev is None:
            causes.append(Cause("arg_count", arg.name, None, arg.text()))
        elif prev.passed != arg.passed:
            causes.append(Cause("arg_count", arg.name, prev.passed, arg.passed))
    return causes


def _pairs(old: Signature, new: Signature) -> list[tuple[ArgSig, ArgSig]]:
    olds = {a.name: a for a in old.args}
    return [(olds[a.name], a) for a in new.args if a.name in olds]


def _static_arguments(old: Signature, new: Signature) -> list[Cause]:
    """Static arguments, found by hash then ``==`` (``values.compare``)."""
    return [_static_cause(arg.name, prev.value, arg.value) for prev, arg in _pairs(old, new)
            if (prev.static or arg.static) and (
                prev.static != arg.static or not same_value(prev.value, arg.value)
                or _hash(prev.value) != _hash(arg.value))]


def _donation(old: Signature, new: Signature) -> list[Cause]:
    return [Cause("donation", arg.name, prev.donated, arg.donated) for prev, arg in _pairs(old, new)
            if not (prev.static or arg.static) and prev.donated != arg.donated]


def _traced_arguments(old: Signature, new: Signature) -> list[Cause]:
    """Traced arguments: pytree structure, then each leaf's aval (shape, dtype, weak type,
    the type's sharding) and placement (device, commitment)."""
    causes: list[Cause] = []
    for prev, arg in _pairs(old, new):
        if not (prev.static or arg.static):
            causes += _diff_traced(arg.name, prev, arg)
    return causes


def _held_static(old: Signature, new: Signature) -> list[Cause]:
    """Leaves a jit-like wrapper holds static (``eqx.filter_jit``: every non-array)."""
    causes: list[Cause] = []
    for prev, arg in _pairs(old, new):
        if not (prev.static or arg.static) and (prev.statics or arg.statics):
            causes += _moved(arg.name, prev, arg)
            causes += _diff_statics(arg.name, prev.statics, arg.statics)
    return causes


COMPONENTS = (_library_call, _trace_context, _arguments_passed, _static_arguments, _donation,
              _traced_arguments, _held_static)


def _moved(name: str, prev: ArgSig, arg: ArgSig) -> list[Cause]:
    """Leaves that went from traced to held static by a jit-like wrapper, or back (an
    array, then a Python number, under ``eqx.filter_jit``): the value is now part of the
    key, or no longer."""
    traced_before, traced_now = dict(prev.leaves), dict(arg.leaves)
    static_before, static_now = dict(prev.statics), dict(arg.statics)
    causes = []
    for path, value in static_now.items():
        if path in traced_before:
            causes.append(Cause("static_value", name + path, traced_before[path].text, short_repr(value),
                                detail="became_static", owner=type(value).__name__))
    for path, leaf in traced_now.items():
        if path in static_before:
            causes.append(Cause("static_value", name + path, short_repr(static_before[path]), leaf.text,
                                detail="became_traced"))
    return causes


def _diff_statics(name: str, before: tuple[tuple[str, Any], ...],
                  after: tuple[tuple[str, Any], ...]) -> list[Cause]:
    """Leaves a wrapper holds static (``model.step_count``): changed values. Leaves that
    appear or go are told by the structure diff."""
    old = dict(before)
    causes = []
    for path, value in after:
        prev = old.get(path, MISSING)
        if prev is MISSING:
            continue
        if not same_value(prev, value) or _hash(prev) != _hash(value):
            causes.append(_static_cause(name + path, prev, value))
    return causes


def _hash(value: Any) -> int | None:
    try:
        return hash(value)
    except Exception:
        return None


def _static_cause(name: str, before: Any, after: Any) -> Cause:
    return _value_cause("static_value", name, before, after)


def _sharding_words(leaf: Leaf) -> str:
    """How a leaf is sharded: its placement as the user put it, else its type's."""
    if is_committed(leaf.placement):
        return leaf.placement.removeprefix("device ")
    return leaf.typed_sharding or "no mesh (one device)"


def _none_paths(treedef: Any) -> list[str]:
    """The paths of the ``None`` nodes of a structure (an optional argument left out)."""
    rebuilt = _rebuild(treedef) if treedef is not None else MISSING
    if rebuilt is MISSING:
        return []
    try:
        flat, _ = jax.tree_util.tree_flatten_with_path(rebuilt, is_leaf=lambda x: x is None)
    except Exception:
        return []
    return [jax.tree_util.keystr(p) for p, v in flat if v is None]


def _none_swaps(name: str, paths: list[str], nones: list[str], leaves: dict[str, Any],
                how: str) -> list[Cause]:
    """Leaves the pytree gained (or lost): where the other side held ``None`` there, one
    ``None → value`` cause per ``None`` (``alpha: None → ~f32[]``); else the leaf is new
    (or gone)."""
    causes: list[Cause] = []
    swapped: dict[str, list[str]] = {}
    for p in paths:
        prefix = next((n for n in nones if p == n or p.startswith((n + "[", n + "."))), None)
        if prefix is None:
            text = leaves[p].text
            causes.append(Cause("pytree_structure", name + p, *((None, text) if how == "gained"
                                                                   else (text, None))))
        else:
            swapped.setdefault(prefix, []).append(p)
    for prefix, inside in swapped.items():
        value = leaves[inside[0]].text if inside == [prefix] else f"a pytree of {len(inside)} leaves"
        before, after = ("None", value) if how == "gained" else (value, "None")
        causes.insert(0, Cause("pytree_structure", name + prefix, before, after, detail="node"))
    return causes


def _diff_traced(name: str, prev: ArgSig, arg: ArgSig) -> list[Cause]:
    causes: list[Cause] = []
    if prev.leaves is arg.leaves and prev.structure == arg.structure:
        return causes
    before = dict(prev.leaves)
    if prev.structure != arg.structure:
        after = dict(arg.leaves)
        gained = [p for p in after if p not in before]
        lost = [p for p in before if p not in after]
        causes += _none_swaps(name, gained, _none_paths(prev.structure), after, "gained")
        causes += _none_swaps(name, lost, _none_paths(arg.structure), before, "lost")
        if not gained and not lost:  # same leaf paths: other containers, static data, ...
            causes.append(_structure_cause(name, prev.structure, arg.structure))
    for path, leaf in arg.leaves:
        old = before.get(path)
        if old is None or old is leaf:
            continue
        full = name + path
        a, b = old.aval, leaf.aval
        if a.shape != b.shape:
            axis = None
            if len(a.shape) == len(b.shape):
                changed = [i for i, (x, y) in enumerate(zip(a.shape, b.shape)) if x != y]
                axis = changed[0] if len(changed) == 1 else None
            causes.append(Cause("shape", full, a.shape, b.shape, axis))
        if a.dtype != b.dtype:
            causes.append(Cause("dtype", full, a.dtype, b.dtype))
        elif a.weak_type != b.weak_type:
            causes.append(Cause("weak_type", full, a.weak_type, b.weak_type))
        pa, pb = old.placement, leaf.placement
        if old.typed_sharding != leaf.typed_sharding:  # the aval's own sharding
            causes.append(Cause("sharding", full, _sharding_words(old), _sharding_words(leaf)))
        elif is_committed(pa) and is_committed(pb) and pa != pb:
            kind = "device" if pa.startswith("device ") and pb.startswith("device ") else "sharding"
            causes.append(Cause(kind, full, pa.removeprefix("device "), pb.removeprefix("device ")))
        elif is_committed(pa) != is_committed(pb):
            causes.append(Cause("commitment", full, placement_words(pa), placement_words(pb)))
    return causes


# ---------------------------------------------------------------------- equal keys
def explain_equal(name: str, compiled: Signature, sig: Signature,
                  call: internals.JitCall | None, known: int) -> Cause:
    """A call whose key equals one compiled before: what emptied the cache in between
    (``jax.clear_caches()``, and where; the function's own ``clear_cache()``; an
    eviction), or, when nothing says, the list of what was compared. ``known``: how many
    compiles of this function jaxviz saw since the last ``jax.clear_caches()``."""
    if sig.cleared != compiled.cleared:
        where = clears.last_clear()
        return Cause("cache_cleared", "jax.clear_caches()", name, None, detail="clear_caches",
                     owner=str(site_at(*where)) if where else None)
    transformed = any(name == "transform" for name, _ in sig.context)  # not jit's own cache
    jitted, var = _jitted_object(call) if not transformed else (None, None)
    size = internals.jit_cache_size(jitted) if jitted is not None else None
    held = size - 1 if size else None  # the entry being compiled now is counted already
    if held == 0:
        return Cause("cache_cleared", f"{var}.clear_cache()", name, 0, detail="clear_cache")
    if held is not None and held < known:
        return Cause("evicted", var or name, None, held)
    return Cause("unknown", name)


def _jitted_object(call: internals.JitCall | None) -> tuple[Any, str | None]:
    """The ``jax.jit`` object the user called, and the user's name for it."""
    if call is None or call.caller is None:
        return None, None
    frame = call.caller
    for scope in (frame.f_locals, frame.f_globals):
        for key, value in list(scope.items()):
            if key.startswith("_") or not callable(value):
                continue
            try:
                if getattr(value, "__wrapped__", None) is call.fun and hasattr(value, "_cache_size"):
                    return value, key
            except Exception:  # an object with an odd __getattr__
                continue
    return None, None


def locate_new_objects(causes: list[Cause], call: internals.JitCall | None) -> list[Cause]:
    """Where the user built each new object that JAX compares by identity (the line that
    assigned the variable holding it); the objects themselves are not kept."""
    out = []
    for c in causes:
        if c.subject is None:
            out.append(c)
            continue
        found = None
        if call is not None:
            try:
                found = callables.built_at(c.subject, call.caller, _is_user_frame)
            except Exception:  # never break the user's compile over a description
                found = None
        built = f"{site_at(found[0], found[1])}{', inside a loop' if found[2] else ''}" \
            if found else c.built
        out.append(dataclasses.replace(c, built=built, subject=None))
    return out


def _is_user_frame(frame: Any) -> bool:
    return is_user_file(frame.f_code.co_filename)
