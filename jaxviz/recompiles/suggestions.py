"""The fix suggested for a recompile, from its causes and the function's history
(``static_argnames=``, padding to a few sizes, hashing a static value by value, ...)."""

from __future__ import annotations

from typing import Any

from . import callables
from .causes import COMPARED, Cause
from .events import CompileEvent
from .history import ObjectHistory
from .signature import ArgSig, Leaf, Signature, Site


def suggest_fix(event: CompileEvent, history: ObjectHistory | None) -> str | None:
    causes = event.causes
    if not causes:
        return None
    by_kind: dict[str, list[Cause]] = {}
    for c in causes:
        by_kind.setdefault(c.kind, []).append(c)
    name = event.function.name
    if "new_function_object" in by_kind and by_kind["new_function_object"][0].detail:
        return _suggest_new_object(by_kind["new_function_object"][0], name)
    if "new_function_object" in by_kind:
        return (f"`{name}` was created again (a `jax.jit(...)`, lambda or nested def made "
                "inside a loop or a re-run cell): JAX's cache belongs to the function object, "
                "so every new object compiles again. Create the jitted function once, outside "
                "the loop, and reuse it.")
    if "cache_cleared" in by_kind:
        c = by_kind["cache_cleared"][0]
        what = "every function" if c.detail == "clear_caches" else "the function"
        return (f"`{c.path}` emptied the cache, so {what} compiles again at its next "
                "call. Clear caches only where compiling again is what you want (between "
                "tasks, to free memory), not inside a loop.")
    if "evicted" in by_kind:
        return ("JAX's cache of this function was full and dropped the entry: too many "
                "distinct keys (shapes, static values) for one function. Keep the keys few "
                "(pad shapes, fewer static values).")
    if "previous_error" in by_kind:
        return None
    if "context" in by_kind:
        c = by_kind["context"][0]
        return (f"`{c.path}` is part of the cache key and changed ({c.before!r} → {c.after!r}). "
                "Set configuration once at start-up rather than around calls.")
    identity = [c for c in causes if c.compared in ("identity", "made_again", "hash")]
    if identity and identity[0].kind == "static_value":
        return _suggest_static_identity(identity[0])
    moved = [c for c in by_kind.get("static_value", ()) if c.detail == "became_static"]
    if moved:
        c = moved[0]
        return (f"`{c.path}` was an array and is now a Python {c.owner}: the jit-like wrapper "
                "(eqx.filter_jit) traces arrays and holds everything else static, compiled per "
                f"value. Pass an array every call, e.g. `jnp.asarray({c.path.split('.')[0]}, "
                "jnp.float32)`.")
    if "static_value" in by_kind:
        c = by_kind["static_value"][0]
        seen = len(history.static_values.get(c.path, ())) if history else 0
        so_far = f" ({seen} values so far)" if seen > 2 else ""
        return (f"`{c.path}` is a static argument: each new value compiles a new program{so_far}. "
                "That is fine for a few values (a mode flag); if it changes every step, pass it "
                f"as a traced argument instead (drop it from static_argnums/static_argnames and "
                "use jnp.where / lax.cond / lax.fori_loop on it).")
    if "pytree_structure" in by_kind:
        c = by_kind["pytree_structure"][0]
        if c.detail in ("static_field", "static_data"):
            return _suggest_static_data(c, event.signature)
        if c.detail == "node" and "None" in (c.before, c.after):
            return (f"`{c.path}` is None at one call and {c.after if c.before == 'None' else c.before} "
                    "at the other: None is an empty pytree, so each is its own program. Pass it "
                    "the same way every call (always a value, e.g. `jnp.zeros(())` with a flag, "
                    "or always None), or make it a static argument if it is a mode switch.")
        if c.detail == "node":
            return (f"`{c.path}` arrived as another kind of container ({c.before} → {c.after}): a "
                    "different pytree structure is a different program. Pass the same container "
                    "types every call.")
        if c.before is None:
            what = f"gained `{c.path}`"
        elif c.after is None:
            what = f"lost `{c.path}`"
        else:
            what = f"changed structure at `{c.path}`"
        return (f"The argument {what}: a different pytree structure is a different program. "
                "Create every entry up front (e.g. with zeros) so the structure stays fixed.")
    if "arg_count" in by_kind:
        return ("Call the function with the same arguments, passed the same way, each time "
                "(always or never the optional ones; positional or keyword, not both).")
    if "commitment" in by_kind:
        c = by_kind["commitment"][0]
        return (f"`{c.path}` was {c.before} and is now {c.after}: JAX compiles committed "
                "inputs (jax.device_put to a device) and uncommitted ones (numpy arrays, "
                "arrays JAX placed by default) separately. Place it the same way every call: "
                "jax.device_put every input (once, before the loop), or none.")
    if "donation" in by_kind:
        c = by_kind["donation"][0]
        return (f"`{c.path}` is donated by one jitted version of `{name}` and not by the "
                "other (jax.jit with and without donate_argnums): each compiles its own "
                "program. Jit the function once, with the donation you want, and call that.")
    if "device" in by_kind or "sharding" in by_kind:
        c = (by_kind.get("device") or by_kind["sharding"])[0]
        return (f"`{c.path}` arrived with another placement ({c.before} → {c.after}). Put inputs "
                "on the same device/sharding every time (jax.device_put once, before the loop).")
    if "shape" in by_kind:
        return _suggest_shape(by_kind["shape"], history, event.call_site)
    if "dtype" in by_kind or "weak_type" in by_kind:
        c = (by_kind.get("dtype") or by_kind["weak_type"])[0]
        leaf = _leaf_at(event.signature, c.path)
        python_scalar = c.kind == "weak_type" or (leaf is not None and leaf.aval.weak_type)
        arg = c.path  # the leaf itself, e.g. `s.opt_state.hyperparams['learning_rate']`
        if c.kind == "dtype" and python_scalar:
            return (f"`{c.path}` is a Python number that was {_py_kind(c.before)} and is now "
                    f"{_py_kind(c.after)}: each kind compiles its own program. Pass the same "
                    f"kind every call (e.g. `float({arg})`, or `2.0` rather than `2`), or cast once "
                    f"with `jnp.asarray({arg}, jnp.{c.after})`.")
        if c.kind == "dtype":
            return (f"`{c.path}` changed dtype {c.before} → {c.after}. Cast it once, the same way "
                    f"every call, e.g. `jnp.asarray({arg}, jnp.{c.before})`.")
        what = ("became a Python scalar (weakly typed)" if c.after
                else "became a typed array/scalar (was a Python scalar)")
        return (f"`{c.path}` {what}: weak and strong types compile different programs. Pass the "
                f"same kind every call, e.g. always `jnp.asarray({arg}, jnp.{leaf.aval.dtype if leaf else 'float32'})`.")
    if "unknown" in by_kind:
        return ("jaxviz found this call equal to an earlier compile in everything it compares "
                f"({COMPARED}) and saw no jax.clear_caches() in between: the entry was "
                "probably evicted, or the function's cache cleared where jaxviz could not read "
                "it. Run with `jax.config.update('jax_explain_cache_misses', True)` to see "
                "JAX's own key.")
    return None


def _suggest_static_identity(c: Cause) -> str:
    """A static value that is a new object each call, found equal or not by identity."""
    cls = c.value_type or c.owner or "object"
    where = f" (built at {c.built})" if c.built else ""
    if c.compared == "made_again":
        optax = (" For optax, build the optimizer once; to change a hyperparameter, use "
                 "`optax.inject_hyperparams(optax.adam)(learning_rate=...)` and change "
                 "`opt_state.hyperparams['learning_rate']`." if "GradientTransformation" in cls
                 else "")
        return (f"`{c.path}` is a new {cls} made again{where} (e.g. `optax.adam(...)` or a "
                "closure called again in the loop): its functions are new objects, compared by "
                "identity, so JAX never finds it in its cache. Build it once, outside the loop, "
                f"and pass that same object.{optax}")
    if c.compared == "hash":
        why = (f"`{c.path}` is equal (==) to the value compiled before, but {cls}'s __hash__ "
               "is by identity (object.__hash__), and JAX finds static values by hash: every "
               f"new {cls} object compiles again.")
    else:
        why = (f"`{c.path}` is a new {cls} object{where}, and {cls} has no __eq__: it is "
               "compared by identity, so it never matches the compiled one.")
    return (f"{why} Build it once, outside the loop, and pass the same object; or give "
            f"{cls} value equality and a matching hash: make it "
            f"`@dataclasses.dataclass(frozen=True)` (or a NamedTuple), or define "
            f"`__eq__` and `__hash__` from the same fields; or make it a field compared by "
            f"value (a pytree leaf, or a static field holding plain values).")


def _suggest_new_object(c: Cause, name: str) -> str:
    """A new function object of a known kind: how to keep one."""
    fix = {
        "partial": (f"Build the partial once, outside the loop, and reuse it; or jit `{name}` "
                    "itself and pass the bound values as arguments (static_argnames for "
                    "Python values)."),
        "tree_partial": ("A jax.tree_util.Partial's function is static: a closure made "
                         "again is a new program. Define the function once (not inside "
                         "the loop or a helper) and wrap that same function."),
        "method": (f"Jit the method once on one object and reuse it; or jit the unbound "
                   f"function and pass the object as an argument (`jax.jit(type(obj).{name})"
                   "(obj, x)`, the object a pytree such as an eqx.Module, or static and hashable)."),
        "transform": ("Build the transformed function once, outside the loop (`g = "
                      "jax.jit(jax.grad(loss))` before it), and call that object every time."),
        "method_object": (f"Jit the bound method once (`{name} = jax.jit(obj.{name})` before "
                          "the loop) and call that object every time."),
        "closure": (f"`{name}` is made by each call of its enclosing function: define it once "
                    "(module level) and pass what it closes over as arguments, or make the "
                    "jitted function once and keep it."),
        "lambda": ("Define the function once (a `def` at module level or before the loop) "
                   "and jit it once."),
        "cell": (f"Re-running the cell defined `{name}` again: its jitted versions compile "
                 "again. That is expected once per re-run; if it happens in a loop, define "
                 "the function outside it."),
    }.get(c.detail or "")
    head = f"JAX's compile cache belongs to the function object: `{c.path}` is {c.note}."
    return f"{head} {fix}" if fix else (f"{head} Create the jitted function once and reuse it.")


def _suggest_static_data(c: Cause, sig: Signature | None) -> str:
    """A static field (or a custom node's auxiliary data) changed."""
    what = (f"`{c.path}` is a static field of {c.owner} (not a pytree leaf)"
            if c.detail == "static_field"
            else f"`{c.path}` is a {c.owner} whose static (auxiliary) pytree data changed")
    text = f"{what}: it is part of the compile key (compared with ==), so each new value compiles a new program"
    if c.compared in ("identity", "made_again"):
        where = f", built at {c.built}" if c.built else ""
        if c.detail == "static_data" and c.part:  # the node's attribute that holds it
            where = f" (`{c.path}{c.part}`){where}"
        text += (f", and this one is a new {c.value_type} object{where}, compared by identity "
                 "(a re-created optax transformation, a new closure or lambda, a class with "
                 "no `__eq__`): build it once, outside the loop, or give its class `__eq__` "
                 "and `__hash__`")
    text += (". Keep it fixed across steps (create it once and reuse the same object); if the "
             "value has to change, move it into the arrays")
    if "GradientTransformation" in f"{c.before}{c.after}{c.value_type}":
        arg = _arg_of(sig, c.path)
        hyper = [p for p, _ in (arg.leaves if arg is not None else ()) if ".hyperparams[" in p]
        if hyper and arg is not None:
            names = ", ".join(f"`{arg.name}{p}`" for p in hyper[:3])
            text += (f": change the hyperparameter arrays ({names}, e.g. with "
                     "`jnp.asarray(new_value, jnp.float32)`) instead of creating a new "
                     "transformation object.")
        else:
            text += (": build the optimizer once with `optax.inject_hyperparams`, e.g. "
                     "`tx = optax.inject_hyperparams(optax.adam)(learning_rate=1e-3)`, and change "
                     "`opt_state.hyperparams['learning_rate']` (an array) instead of creating a "
                     "new transformation object.")
    else:
        text += " (a data field holding a jnp array, passed as a traced argument)."
    return text


def _arg_of(sig: Signature | None, path: str) -> ArgSig | None:
    if sig is None:
        return None
    for arg in sig.args:
        if not arg.static and (path == arg.name or path.startswith((arg.name + ".", arg.name + "["))):
            return arg
    return None


def _leaf_at(sig: Signature | None, path: str) -> Leaf | None:
    if sig is None:
        return None
    arg = _arg_of(sig, path)
    if arg is not None:
        rest = path[len(arg.name):]
        for p, leaf in arg.leaves:
            if p == rest:
                return leaf
    return None


def _py_kind(dtype: Any) -> str:
    text = str(dtype)
    for prefix, name in (("int", "an int"), ("uint", "an int"), ("float", "a float"),
                         ("complex", "a complex"), ("bool", "a bool")):
        if text.startswith(prefix):
            return f"{name} ({text})"
    return text


def _suggest_shape(shape_causes: list[Cause], history: ObjectHistory | None, site: Site | None) -> str:
    axes = {c.axis for c in shape_causes}
    paths = ", ".join(f"`{c.path}`" for c in shape_causes[:3])
    known = [a for a in axes if a is not None]
    if len(axes) == 1 and known:
        (axis,) = known
        c = shape_causes[0]
        before, after = c.before[axis], c.after[axis]
        sizes = history.axis_sizes.get((c.path, axis), set()) if history else set()
        if len(sizes) > 3:
            return (f"{paths} changes size on axis {axis} ({len(sizes)} sizes so far): pad to a few "
                    "bucket sizes (e.g. the next power of two) and mask, so that only a handful "
                    "of programs compile.")
        before_site = history.last_site if history else None
        if site is not None and before_site is not None and \
                (site.file, site.line) != (before_site.file, before_site.line):
            return (f"{paths} has {after} on axis {axis} here ({site}) and had {before} at the "
                    f"compiled call ({before_site}): two call sites (or data sets) of different "
                    "sizes compile one program each. That is fine for a few sizes; to share one "
                    f"program, pad the inputs to one size (and mask the padding).")
        in_loop = site is not None and callables.line_in_loop(site.file, site.line)
        if after < before and in_loop:
            return (f"Ragged last batch: {paths} shrank on axis {axis} from {before} to {after}. "
                    f"Pad the last batch to {before} (and mask the padded rows), or drop the "
                    f"remainder (drop_last=True / use only len(data) // {before} * {before} items).")
        grew = "grew" if after > before else "shrank"
        return (f"{paths} {grew} on axis {axis} from {before} to {after}: each new size compiles a "
                "new program. Pad to a fixed size if it keeps changing.")
    return (f"{paths} changed shape: each new shape compiles a new program. Pad to fixed shapes "
            "if they keep changing.")
