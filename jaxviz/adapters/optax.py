"""optax: which gradient transformation an update equation came from, and inside which.

optax builds every ``GradientTransformation`` from two closures, ``init_fn`` and
``update_fn``, defined inside the function the user called (``scale_by_adam``,
``clip_by_global_norm``, ``add_decayed_weights``…). The ``update_fn`` closures on an
equation's stack, outermost first, are the transformations it ran inside: the innermost
names its transformation, those around it the combinators holding it (``chain``,
``masked``, ``multi_transform``, ``apply_if_finite``, ``inject_hyperparams``…).
Transformations written elsewhere (other libraries, the user's own) often call the closure
``update``: it names its factory the same way.

Each step keeps the identity of its closure's code and of the call site it was called
from: two transformations made by one factory share both where the tracer gives them no
code of their own, and are then told apart by the graph (``jaxviz.phases``).
Nothing is imported: the convention is read from code objects (``co_qualname``, Python
3.11+; on 3.10 the update is grouped by parameter subtree only).
"""

from __future__ import annotations

import functools
import linecache
import re
from dataclasses import dataclass
from typing import Any

from .. import _jax_internals as internals
from ..code_paths import installed_package
from ..phases import BRANCH, SEQUENCE, SPLIT, TRANSFORM

_LOCALS = ".<locals>."
UPDATE_CLOSURES = frozenset({"update_fn", "update"})  # a factory's closure, given to GradientTransformation
APPLY_UPDATES = "apply_updates"
# Combinators that only run their transformations one after the other: those are shown in
# their place (what ``optax.adam`` returns is such a chain too).
SEQUENCES = frozenset({"chain", "named_chain"})
# One transformation per label of the parameters: each label's is a branch of it.
BRANCHES = frozenset({"partition"})
# Wrappers that add nothing the user wrote: optax's own adaptor of a transformation to
# extra arguments.
PLUMBING = frozenset({"with_extra_args_support"})
# The names a factory is also called by, as the user may spell it (``optax.multi_transform``
# is ``optax.partition``'s older name).
ALIASES = {"partition": ("multi_transform",)}


@dataclass(frozen=True, slots=True, eq=False)
class Step:
    """One transformation an equation ran inside. Made once per distinct value
    (``_step``), so compared and hashed by identity: the update's grouping hashes one per
    equation and transformation around it."""
    name: str  # the factory that made it, as the user spells it: ``scale_by_adam``, ``multi_transform``
    package: str | None  # the library of the factory (``optax``); None for the user's own
    kind: str  # TRANSFORM, SEQUENCE, SPLIT or BRANCH (one label's transformation in a SPLIT)
    code: int  # its closure's code (by identity)
    site: tuple[int, int]  # where the transformation around it called it: (code id, offset)

    @property
    def title(self) -> str:
        """``optax.masked`` for a combinator the user called; its bare name otherwise."""
        return f"{self.package}.{self.name}" if self.package else self.name


@dataclass(frozen=True, slots=True, eq=False)
class Origin:
    """Where an update equation came from: its transformations, outermost first, and its
    line (the traceback): a line of a transformation runs once per parameter leaf. Made
    once per traceback (``transformation_of``), so compared and hashed by identity, as
    ``Step`` is: no need to hash its steps and traceback again for each of an update's
    equations."""
    steps: tuple[Step, ...]
    line: Any

    @property
    def name(self) -> str:
        return self.steps[-1].name


def transformation_of(eqn: Any) -> Origin | None:
    """The transformations an equation emitted inside an optimizer's ``update`` ran in
    (``chain › scale_by_adam``); ``apply_updates`` for ``optax.apply_updates``; else None.
    Remembered per traceback: the update of every parameter leaf shares one."""
    traceback = internals.traceback_of(eqn)
    if traceback is None:
        return None
    found = _by_traceback.get(traceback, _UNSEEN)
    if found is _UNSEEN:
        steps = _steps_of(internals.code_stack(eqn))
        found = Origin(steps, traceback) if steps else None
        if len(_by_traceback) >= _BY_TRACEBACK_MAX:
            _by_traceback.clear()
        _by_traceback[traceback] = found
    return found


_UNSEEN = object()
_BY_TRACEBACK_MAX = 8192
_by_traceback: dict[Any, Any] = {}


def _steps_of(stack: tuple[tuple[Any, int], ...]) -> tuple[Step, ...]:
    """The transformations on ``stack`` (innermost frame first), outermost first."""
    found: list[tuple[str, int]] = []  # (factory, frame index), innermost first
    for i, (code, _) in enumerate(stack):
        if _is_apply_updates(code):
            if not found:  # optax.apply_updates itself, not a transformation calling it
                return (_step(APPLY_UPDATES, "optax", TRANSFORM, id(code), _site(stack, i)),)
            break
        factory = _factory_of(code)
        if factory is not None:
            found.append((factory, i))
    steps: list[Step] = []
    user_file = _caller_file(stack) if any(f in ALIASES for f, _ in found) else None
    for factory, i in reversed(found):
        code = stack[i][0]
        if factory in PLUMBING:
            continue
        kind = SEQUENCE if factory in SEQUENCES else SPLIT if factory in BRANCHES else TRANSFORM
        if steps and steps[-1].kind == SPLIT and factory == "masked":
            kind = BRANCH  # the mask a SPLIT puts around each label's transformation
        steps.append(_step(_spelled(factory, user_file), installed_package(code.co_filename), kind, id(code),
                          _site(stack, i)))
    return tuple(steps)


def _step(name: str, package: str | None, kind: str, code: int, site: tuple[int, int]) -> Step:
    """The one ``Step`` of these values."""
    key = (name, package, kind, code, site)
    found = _steps.get(key)
    if found is None:
        if len(_steps) >= _BY_TRACEBACK_MAX:  # the origins remembered hold the old ones
            _steps.clear()
            _by_traceback.clear()
        found = _steps[key] = Step(*key)
    return found


_steps: dict[tuple[Any, ...], Step] = {}


def _site(stack: tuple[tuple[Any, int], ...], i: int) -> tuple[int, int]:
    return (id(stack[i + 1][0]), stack[i + 1][1]) if i + 1 < len(stack) else (0, 0)


def _is_apply_updates(code: Any) -> bool:
    return code.co_name == APPLY_UPDATES and "optax" in code.co_filename


@functools.lru_cache(maxsize=4096)
def _factory_of(code: Any) -> str | None:
    """``scale_by_adam`` for the code of ``scale_by_adam.<locals>.update_fn``: the factory
    that made the closure, past a wrapper it encloses it in (inject_hyperparams ›
    wrapped_transform › update_fn); None for other code."""
    qualname = getattr(code, "co_qualname", "")
    if code.co_name not in UPDATE_CLOSURES or _LOCALS not in qualname:
        return None
    enclosing = [p for p in qualname.split(_LOCALS)[:-1] if "wrap" not in p]
    return enclosing[-1].rsplit(".", 1)[-1] if enclosing else None


def _caller_file(stack: tuple[tuple[Any, int], ...]) -> str | None:
    """The file of the user's code that called the optimizer (where the user spelled its
    factories): the innermost frame of no installed library's."""
    for code, _ in stack:
        if installed_package(code.co_filename) is None and not code.co_filename.startswith("<frozen"):
            return code.co_filename
    return None


def _spelled(factory: str, user_file: str | None) -> str:
    """The factory as the user's file spells it: ``multi_transform`` where it calls
    ``optax.partition`` by that older name."""
    for alias in ALIASES.get(factory, ()):
        if user_file is not None and _spells(user_file, alias):
            return alias
    return factory


@functools.lru_cache(maxsize=256)
def _spells(filename: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}\s*\(", "".join(linecache.getlines(filename))) is not None
