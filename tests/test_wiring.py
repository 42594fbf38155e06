"""The house: one display mechanism for every object jaxviz hands the user, and the
wiring done once, in one place (``jaxviz.wiring``), idempotently."""

import builtins

import jax
import jax.numpy as jnp
import pytest

import jaxviz
from jaxviz import display, wiring
from jaxviz.call_scopes import HOOK_NAME
from jaxviz.devices import DeviceTable
from jaxviz.diff import HISTORY
from jaxviz.errors.capture import note_explanation
from jaxviz.recompiles import COMPILE_LISTENERS
from jaxviz.tracing import TRACE_ERROR_HOOKS


def _objects():
    """One of every object jaxviz hands the user, made the public way."""
    with jaxviz.watch() as log:
        step = jax.jit(lambda x: x * 2)
        step(jnp.ones(2))
        step(jnp.ones(3))
    try:
        jaxviz.trace(lambda x: int(x), jnp.ones(()))
    except jax.errors.ConcretizationTypeError as exc:
        explanation = jaxviz.explain(exc)
    program = jaxviz.trace(lambda x: jnp.sin(x) + 1, jnp.ones(3))
    changed = jaxviz.diff(lambda x: x * 2, (jnp.ones(2),), (jnp.ones(3),))
    report = jaxviz.profile(lambda x: x + 1, jnp.ones(2), repeats=1)
    return [program, changed, explanation, log, log.view(), log.summary(), report, DeviceTable.collect()]


@pytest.mark.parametrize("obj", _objects(), ids=lambda o: type(o).__name__)
def test_every_object_draws_through_the_one_registry(obj):
    assert isinstance(obj, display.Displayed)
    assert display.renderer(obj, "mimebundle") is not None and display.renderer(obj, "rich") is not None
    obj._repr_mimebundle_()  # a session's first graph output carries the viewer; later ones don't
    bundle = obj._repr_mimebundle_()
    assert bundle.get("text/html") and obj._repr_html_() == bundle["text/html"]
    assert list(obj.__rich_console__(None, None))  # what rich.print shows


def test_an_unregistered_view_says_what_registers_it():
    class Plain(display.Displayed):
        pass

    with pytest.raises(RuntimeError, match="`import jaxviz` registers"):
        Plain()._repr_mimebundle_()


def test_wiring_installs_once_however_often_it_runs():
    for _ in range(3):
        wiring.install()
    assert COMPILE_LISTENERS.count(HISTORY.record) == 1
    assert TRACE_ERROR_HOOKS.count(note_explanation) == 1
    assert callable(getattr(builtins, HOOK_NAME))  # what instrumented code enters
