"""The recompilation tracker against real JAX: one test per cause kind (kind, path in the
argument's own name, before, after), the histories where JAX's own explanation blames the
wrong argument, a training loop with a ragged last batch, stale captured globals through
a real IPython shell, and bad input."""

import gc
import inspect
import subprocess
import sys
import textwrap
import threading
import warnings
from typing import NamedTuple

import background
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxviz
from jaxviz import _jax_internals as internals
from jaxviz import recompiles as rc
from jaxviz.ipython import recompiles as notebook
from jaxviz.recompiles import listeners, signature
from jaxviz.recompiles import stale as stale_globals
from jaxviz.widgets import LiveMonitor


def causes(event):
    return [(c.kind, c.path, c.before, c.after) for c in event.causes]


def only(log, name):
    return [e for e in log.events if e.function.name == name]


def open_monitors() -> list[LiveMonitor]:
    """The live monitors not closed yet (``%jaxviz watch`` shows one at a time)."""
    return [m for m in gc.get_objects() if isinstance(m, LiveMonitor) and not m.closed]


# ---------------------------------------------------------------------- one per kind
def test_first_call():
    def first(x):
        return x + 1

    with jaxviz.watch() as log:
        jax.jit(first)(jnp.ones(3))
    (e,) = only(log, "first")
    assert [(c.kind, c.path) for c in e.causes] == [("first_call", "first")]
    assert e.count == 1 and e.kind == "call"
    assert e.function.defined.file == __file__ and e.function.defined.line > 0
    assert e.call_site.file == __file__ and "jax.jit(first)" in e.call_site.text
    assert e.signature.describe() == {"x": "f32[3]"}
    assert all(e.durations[k] > 0 for k in ("trace", "lower", "compile")), e.durations
    assert e.done


def test_shape():
    f = jax.jit(lambda x: x * 2)
    with jaxviz.watch() as log:
        f(jnp.ones(3))
        f(jnp.ones(3))  # a hit: nothing
        f(jnp.ones(4))
    assert len(log.events) == 2
    assert causes(log.events[1]) == [("shape", "x", (3,), (4,))]
    assert log.events[1].causes[0].axis == 0


def test_dtype_int_then_float():
    """``f(2)`` then ``f(2.0)``: a Python int became a Python float."""
    f = jax.jit(lambda x: x * 2)
    with jaxviz.watch() as log:
        f(2)
        f(2.0)
    assert causes(log.events[1]) == [("dtype", "x", "int32", "float32")]
    assert log.events[0].signature.describe() == {"x": "~i32[]"}  # weakly typed
    assert "a Python number that was an int (int32) and is now a float (float32)" in \
        log.events[1].suggestion and "`float(x)`" in log.events[1].suggestion


def test_weak_type():
    f = jax.jit(lambda x: x * 2)
    with jaxviz.watch() as log:
        f(jnp.float32(2.0))
        f(2.0)
    assert causes(log.events[1]) == [("weak_type", "x", False, True)]
    assert "Python scalar" in str(log.events[1])
    assert "jnp.asarray(x, jnp.float32)" in log.events[1].suggestion


def test_static_value():
    def scale(x, n):
        return x * n

    f = jax.jit(scale, static_argnums=1)
    with jaxviz.watch() as log:
        f(jnp.ones(2), 2)
        f(jnp.ones(2), 3)
    assert causes(log.events[1]) == [("static_value", "n", 2, 3)]
    assert "static argument" in log.events[1].suggestion


def test_static_argnames_keyword():
    def mode(x, *, train):
        return x * 2 if train else x

    f = jax.jit(mode, static_argnames="train")
    with jaxviz.watch() as log:
        f(jnp.ones(2), train=True)
        f(jnp.ones(2), train=False)
    assert causes(log.events[1]) == [("static_value", "train", True, False)]


def test_shape_not_static_where_jax_blames_the_static_argument():
    """``f(x[3], True); f(x[3], False); f(x[4], False)``: the last miss is the shape of x."""
    def g(x, flag):
        return x + 1 if flag else x - 1

    f = jax.jit(g, static_argnums=1)
    with jaxviz.watch() as log:
        f(jnp.ones(3), True)
        f(jnp.ones(3), False)
        f(jnp.ones(4), False)
    assert [causes(e) for e in log.events] == [
        [("first_call", "g", None, "x: f32[3], flag: True (static)")],
        [("static_value", "flag", True, False)],
        [("shape", "x", (3,), (4,))],
    ]


def test_change_back_to_a_compiled_value_is_not_blamed():
    """True → False → True with a new shape: only the shape is new."""
    def g(x, flag):
        return x + 1 if flag else x - 1

    f = jax.jit(g, static_argnums=1)
    with jaxviz.watch() as log:
        f(jnp.ones(3), True)
        f(jnp.ones(3), False)
        f(jnp.ones(5), True)
    assert causes(log.events[2]) == [("shape", "x", (3,), (5,))]


def test_pytree_gains_a_key():
    def loss(params, x):
        return sum(jnp.sum(v) for v in params.values()) * x

    f = jax.jit(loss)
    with jaxviz.watch() as log:
        f({"a": jnp.ones(2)}, 1.0)
        f({"a": jnp.ones(2), "b": jnp.ones(3)}, 1.0)
        f({"a": jnp.ones(2)}, 1.0)  # back to a compiled structure: a hit
    assert len(log.events) == 2
    assert causes(log.events[1]) == [("pytree_structure", "params['b']", None, "f32[3]")]
    assert "gained `params['b']`" in log.events[1].suggestion


def test_pytree_container_change_and_leaf_paths():
    class Batch(NamedTuple):
        x: jax.Array
        y: jax.Array

    def step(batch):
        return batch[0].sum() + batch[1].sum()

    f = jax.jit(step)
    with jaxviz.watch() as log:
        f((jnp.ones(2), jnp.ones(2)))
        f((jnp.ones(2), jnp.ones(5)))
        f([jnp.ones(2), jnp.ones(5)])
        f(Batch(jnp.ones(2), jnp.ones(7)))
    assert causes(log.events[1]) == [("shape", "batch[1]", (2,), (5,))]
    (c,) = log.events[2].causes
    assert (c.kind, c.path) == ("pytree_structure", "batch")
    assert "tuple" in c.before.lower() and "list" in c.after.lower(), c
    kinds = {(c.kind, c.path) for c in log.events[3].causes}
    assert ("pytree_structure", "batch.x") in kinds and ("pytree_structure", "batch[0]") in kinds



@pytest.fixture(scope="module")
def train_state():
    """A Flax TrainState with an optax optimizer whose learning rate is an array."""
    optax = pytest.importorskip("optax")
    ts = pytest.importorskip("flax.training.train_state")
    return optax, ts.TrainState.create(
        apply_fn=None, params={"w": jnp.ones(2)},
        tx=optax.inject_hyperparams(optax.sgd)(learning_rate=0.1))


def test_static_field_of_a_train_state_replaced(train_state):
    """A new optax transformation in a TrainState's ``tx`` (a static field, not a leaf):
    the cause names ``s.tx`` and shows a before/after that differ."""
    optax, state = train_state

    @jax.jit
    def step(s):
        return s.replace(params=jax.tree_util.tree_map(lambda p: p * 2, s.params))

    with jaxviz.watch() as log:
        step(state)
        step(state.replace(tx=optax.inject_hyperparams(optax.sgd)(learning_rate=0.01)))
    (c,) = log.events[1].causes
    assert (c.kind, c.path, c.detail, c.owner) == ("pytree_structure", "s.tx", "static_field", "TrainState")
    # the two print alike but for addresses: no before → after, the cause says why they differ
    assert "→" not in str(c)
    assert c.compared == "made_again" and "0x" not in str(c)
    assert str(c).startswith("static field `s.tx` of TrainState: a new `GradientTransformation")
    assert c.to_json()["detail"] == "static_field"
    suggestion = log.events[1].suggestion
    assert "`s.tx` is a static field of TrainState" in suggestion and "compile key" in suggestion
    assert "`s.opt_state.hyperparams['learning_rate']`" in suggestion
    assert "up front" not in suggestion


def test_python_float_replacing_a_nested_array_leaf(train_state):
    """A Python float where the learning rate array was: the suggestion names the leaf."""
    _, state = train_state

    @jax.jit
    def step(s):
        return s.params["w"] * s.opt_state.hyperparams["learning_rate"]

    hp = dict(state.opt_state.hyperparams, learning_rate=0.01)
    with jaxviz.watch() as log:
        step(state)
        step(state.replace(opt_state=state.opt_state._replace(hyperparams=hp)))
    leaf = "s.opt_state.hyperparams['learning_rate']"
    assert causes(log.events[1]) == [("weak_type", leaf, False, True)]
    suggestion = log.events[1].suggestion
    assert f"`jnp.asarray({leaf}, jnp.float32)`" in suggestion, suggestion
    assert "jnp.asarray(s," not in suggestion


def test_structure_changes_inside_containers_and_custom_nodes():
    """Same leaf paths, another structure: the first differing node, by path."""
    struct = pytest.importorskip("flax.struct")

    @struct.dataclass
    class Cfg:
        w: jax.Array
        n: int = struct.field(pytree_node=False, default=3)

    class Box:
        def __init__(self, v, opts):
            self.v, self.opts = v, opts

    jax.tree_util.register_pytree_node(Box, lambda b: ((b.v,), b.opts), lambda a, c: Box(c[0], a))
    f = jax.jit(lambda s: jax.tree_util.tree_leaves(s)[0] * 2)
    with jaxviz.watch() as log:
        f({"c": Cfg(jnp.ones(2))})
        f({"c": Cfg(jnp.ones(2), n=4)})
        f(Box(jnp.ones(2), ("relu", {"k": 1})))
        f(Box(jnp.ones(2), ("relu", {"k": 2})))
        f((jnp.ones(2), {"a": None}))
        f((jnp.ones(2), {"b": None}))
        f((jnp.ones(2), None))
        f((jnp.ones(2), ()))
    got = [(c.path, c.detail, c.before, c.after) for e in log.events[1:] for c in e.causes
           if e.causes[0].kind == "pytree_structure" and c.detail]
    assert got == [
        ("s['c'].n", "static_field", "3", "4"),
        ("s", "static_data", "1", "2"),  # at `s.opts[1]['k']`, its attribute holding the data
        ("s[1]", "children", "['a']", "['b']"),
        ("s[1]", "node", "dict {'b': None}", "None"),
        ("s[1]", "node", "None", "tuple ()"),
    ], got
    assert "`s['c'].n` is a static field of Cfg" in log.events[1].suggestion
    assert "a Box node, changed: `s.opts[1]['k']` 1 → 2" in str(log.events[3].causes[0])
    assert "`s[1]` changed its entries ['a'] → ['b']" in str(log.events[5])
    assert "`s[1]` is None at one call and tuple () at the other" in log.events[7].suggestion


def test_a_vjp_pullback_made_again_is_compared_by_identity_at_the_argument():
    """The function ``jax.vjp`` returns, passed to jit (jax-ml/jax#3755): its node's
    auxiliary data holds a new ``functools.partial`` at each ``jax.vjp``, compared by
    identity. An index into that opaque data is no path inside the argument: the cause is
    the argument, and the text says where the new object is (``g_vjp.fun``)."""
    def square(x):
        return x ** 2

    @jax.jit
    def apply_cotangent(g_vjp, ct):
        return g_vjp(ct)

    with jaxviz.watch() as log:
        for x0 in (1.0, 2.0):
            _, g_vjp = jax.vjp(square, jnp.float32(x0))
            apply_cotangent(g_vjp, jnp.float32(1.0))
    (c,) = only(log, "apply_cotangent")[1].causes
    # the pullback is a ``VJP`` node holding the partial in ``fun``; before JAX 0.7, a
    # ``jax.tree_util.Partial`` whose auxiliary data is the partial itself
    assert (c.kind, c.path, c.detail) == ("pytree_structure", "g_vjp", "static_data") and c.owner in ("VJP", "Partial")
    text = str(c)
    assert c.compared == "identity" and "a new `partial` object" in text, text
    assert "compared by identity" in text and "0x" not in text, text
    assert "→" not in text  # two partials that print alike are no before → after
    if c.owner == "VJP":
        assert "(`g_vjp.fun`)" in text and "`g_vjp.fun`" in only(log, "apply_cotangent")[1].suggestion, text


def test_opaque_auxiliary_data_of_a_custom_node_names_the_attribute_holding_the_change():
    """A class registered with ``register_pytree_node`` whose auxiliary data is a tuple
    (its fields unnamed): the cause stays at the node, and names the node's attribute
    that holds the part that changed, found by identity on both sides (an object compared
    by identity, then a plain value); where no attribute holds it, none is named."""
    class Act:  # no __eq__: compared by identity
        def __init__(self, name):
            self.name = name

    class Layer:
        def __init__(self, w, kind, act):
            self.w, self.kind, self.act = w, kind, act

    class Copied(Layer):  # its unflatten copies the data: no attribute holds it
        pass

    jax.tree_util.register_pytree_node(
        Layer, lambda m: ((m.w,), (m.kind, m.act)), lambda aux, c: Layer(c[0], *aux))
    jax.tree_util.register_pytree_node(
        Copied, lambda m: ((m.w,), (m.kind, m.act)),
        lambda aux, c: Copied(c[0], str(aux[0]), Act(aux[1].name)))
    f = jax.jit(lambda layer: layer.w * 2)
    relu = Act("relu")
    with jaxviz.watch() as log:
        f(Layer(jnp.ones(2), "dense", relu))
        f(Layer(jnp.ones(2), "conv", relu))  # another kind: a value
        f(Layer(jnp.ones(2), "conv", Act("relu")))  # a new Act: identity
        f(Copied(jnp.ones(2), "conv", relu))
        f(Copied(jnp.ones(2), "conv", Act("relu")))
    other_kind, new_act, _, copied = (e.causes[0] for e in log.events[1:])
    assert [(c.kind, c.path, c.detail) for c in (other_kind, new_act, copied)] == \
        [("pytree_structure", "layer", "static_data")] * 3
    text = str(new_act)
    assert new_act.compared == "identity" and "a new `Act` object (`layer.act`)" in text, text
    assert "compared by identity" in text and "→" not in text and "0x" not in text, text
    assert (other_kind.before, other_kind.after) == ("'dense'", "'conv'"), other_kind
    assert "changed: `layer.kind` 'dense' → 'conv'" in str(other_kind), str(other_kind)
    text = str(copied)  # no attribute found: the node, and why
    assert copied.compared == "identity" and "compared by identity" in text, text
    assert "`layer." not in text and "[1]" not in text, text

def test_new_function_object():
    with jaxviz.watch() as log:
        for _ in range(3):
            jax.jit(lambda x: x * 3)(jnp.ones(2))
    events = only(log, "<lambda>")
    assert len(events) == 3
    assert causes(events[1]) == [("new_function_object", "<lambda>", 1, 2)]
    assert causes(events[2]) == [("new_function_object", "<lambda>", 2, 3)]
    c = events[2].causes[0]
    assert (c.detail, c.note) == ("lambda", "a new lambda (the same code, another object)")
    assert c.owner.endswith(", inside a loop") and "test_recompiles.py:" in c.owner
    assert "before the loop" in events[2].suggestion


def test_rejitting_the_same_function_is_the_same_object():
    def same(x):
        return x - 1

    with jaxviz.watch() as log:
        jax.jit(same)(jnp.ones(2))
        jax.jit(same)(jnp.ones(2))  # JAX shares the cache: no compile
        jax.jit(same)(jnp.ones(6))
    assert len(log.events) == 2
    assert causes(log.events[1]) == [("shape", "x", (2,), (6,))]


def test_arg_count_and_passing():
    def opt(x, y=None):
        return x if y is None else x + y

    f = jax.jit(opt)
    with jaxviz.watch() as log:
        f(jnp.ones(2))
        f(jnp.ones(2), jnp.ones(2))
        f(jnp.ones(2), y=jnp.ones(2))
    assert causes(log.events[1]) == [("arg_count", "y", None, "f32[2]")]
    assert causes(log.events[2]) == [("arg_count", "y", "positional", "keyword")]


def test_varargs_and_kwargs_names():
    def many(*xs, **kw):
        return sum(jnp.sum(x) for x in xs) + sum(jnp.sum(v) for v in kw.values())

    f = jax.jit(many)
    with jaxviz.watch() as log:
        f(jnp.ones(2), jnp.ones(2), a=jnp.ones(2))
        f(jnp.ones(2), jnp.ones(3), a=jnp.ones(3))
    assert causes(log.events[1]) == [("shape", "xs[1]", (2,), (3,)), ("shape", "a", (2,), (3,))]


def test_context_x64():
    enable_x64 = jax.enable_x64 if hasattr(jax, "enable_x64") else jax.experimental.enable_x64  # < 0.8
    f = jax.jit(lambda x: x + 1)
    with jaxviz.watch() as log:
        f(jnp.ones(2, jnp.float32))
        with enable_x64(True):
            f(jnp.ones(2, jnp.float32))
    assert causes(log.events[1])[0] == ("context", "jax_enable_x64", False, True)
    assert not jax.config.jax_enable_x64


def test_device_sharding_and_mesh_in_a_two_device_process():
    """A committed array on another device: cause ``device`` of ``x``; another sharding:
    ``sharding``; a mesh context: ``context``. Needs two CPU devices: its own process."""
    code = textwrap.dedent("""
        import jax, jax.numpy as jnp, jaxviz
        from jax.sharding import NamedSharding, PartitionSpec as P
        f = jax.jit(lambda x: x + 1)
        d0, d1 = jax.devices()[:2]
        mesh = jax.make_mesh((2,), ("d",))
        g = jax.jit(lambda x: x * 2)
        with jaxviz.watch() as log:
            f(jax.device_put(jnp.ones(4), d0))
            f(jax.device_put(jnp.ones(4), d1))
            g(jax.device_put(jnp.ones(4), NamedSharding(mesh, P("d"))))
            g(jax.device_put(jnp.ones(4), NamedSharding(mesh, P())))
            h = jax.jit(lambda x: x - 1)
            h(jnp.ones(2))
            with getattr(jax.sharding, "use_mesh", jax.sharding.set_mesh)(mesh):  # 0.6: use_mesh
                h(jnp.ones(2))
            import numpy as np
            k = jax.jit(lambda x: x * 3)
            k(np.ones(4, np.float32))
            k(jax.device_put(np.ones(4, np.float32), d1))
        for i in (1, 3, 5, 7):
            print([(c.kind, c.path, c.before, c.after) for c in log.events[i].causes])
    """)
    env = {"JAX_PLATFORMS": "cpu", "XLA_FLAGS": background.with_host_devices(2), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(__import__("pathlib").Path(__file__).parents[1]), timeout=120)
    assert out.returncode == 0, out.stderr
    device, sharding, mesh, placed = out.stdout.strip().splitlines()[-4:]
    assert placed == "[('commitment', 'x', 'a numpy array (uncommitted)', 'committed to cpu:1')]", \
        out.stdout
    assert device == "[('device', 'x', 'cpu:0', 'cpu:1')]", out.stdout
    sharding = sharding.replace("PartitionSpec(", "P(")  # JAX 0.6 spells it out
    assert sharding == ("[('sharding', 'x', \"P('d',) over mesh {'d': 2}\", "
                        "\"P() over mesh {'d': 2}\")]"), out.stdout
    assert mesh.startswith("[('context', 'mesh', None, \"{'d': 2}\")"), out.stdout


def test_previous_error_then_retry():
    ns = {"jax": jax, "jnp": jnp}
    exec("k = 7\ndef bad(x):\n    return x + jnp.ones(k)\n", ns)
    f = jax.jit(ns["bad"])
    with jaxviz.watch() as log:
        with pytest.raises(TypeError, match="incompatible shapes"):
            f(jnp.ones(3))
        ns["k"] = 3
        f(jnp.ones(3))
    first, second = log.events
    assert first.error.startswith("TypeError: add got incompatible shapes") and first.done
    assert first.durations["trace"] is not None and first.durations["compile"] is None
    assert causes(second) == [("previous_error", "bad", "TypeError", None)]
    assert second.error is None and second.durations["compile"] is not None


def test_error_inside_traced_function_passes_through_untouched():
    class Boom(Exception):
        pass

    def explode(x):
        raise Boom("kaboom", 42)

    with jaxviz.watch() as log:
        with pytest.raises(Boom) as info:
            jax.jit(explode)(jnp.ones(2))
    assert info.value.args == ("kaboom", 42)
    (e,) = only(log, "explode")
    assert e.error == "Boom: ('kaboom', 42)" and "failed to trace" in str(e)
    assert log.summary()["explode"].errors == 1


# ---------------------------------------------------------------------- training loop
def test_training_loop_with_ragged_last_batch():
    data_x = np.arange(30, dtype=np.float32).reshape(10, 3)
    data_y = np.arange(10, dtype=np.float32)

    @jax.jit
    def train_step(w, batch):
        x, y = batch
        pred = x @ w
        grad = x.T @ (pred - y) / x.shape[0]
        return w - 0.01 * grad, jnp.mean((pred - y) ** 2)

    w = jnp.zeros(3)
    with jaxviz.watch() as log:
        for _epoch in range(2):
            for i in range(0, 10, 4):
                w, loss = train_step(w, (data_x[i:i + 4], data_y[i:i + 4]))
    events = only(log, "train_step")
    assert len(events) == 2, [str(e) for e in events]  # exactly one recompile
    recompile = events[1]
    assert causes(recompile) == [("shape", "batch[0]", (4, 3), (2, 3)),
                                 ("shape", "batch[1]", (4,), (2,))]
    assert all(c.axis == 0 for c in recompile.causes)
    assert "Ragged last batch" in recompile.suggestion
    assert "Pad the last batch to 4" in recompile.suggestion and "drop" in recompile.suggestion
    s = log.summary()["train_step"]
    assert (s.traces, s.compiles, s.signatures) == (2, 2, 2)
    assert s.top_cause() == "shape of `batch[0]`"


def test_recompile_storm_names_the_argument():
    def step(x, i):
        return x * i

    f = jax.jit(step, static_argnums=1)
    with pytest.warns(rc.RecompileWarning, match="i keeps changing") as record:
        with jaxviz.watch(storm=4) as log:
            for i in range(6):
                f(jnp.ones(2), i)
    assert len(log.warnings) == 1 and "compiled 5 times" in log.warnings[0]
    assert "`i` keeps changing" in log.warnings[0]  # the log keeps code spans (HTML, panel)
    printed = [str(r.message) for r in record if r.category is rc.RecompileWarning]
    assert printed and "`" not in printed[0], printed  # stderr shows no Markdown backticks
    assert "6 values so far" in log.events[-1].suggestion



def test_recompile_storm_advice_is_about_the_argument_that_keeps_changing():
    """The storm's last compile was a shape change of ``x``; ``i`` is what keeps changing,
    and the advice is about ``i``, not about the shape of ``x``."""
    def step(x, i):
        return x * i

    f = jax.jit(step, static_argnums=1)
    with pytest.warns(rc.RecompileWarning, match="i keeps changing") as record:
        with jaxviz.watch(storm=3):
            for i in range(3):
                f(jnp.ones(2), i)
            f(jnp.ones(5), 2)
    (w,) = [str(r.message) for r in record if r.category is rc.RecompileWarning]
    assert "i is a static argument" in w and "grew on axis" not in w, w

# ---------------------------------------------------------------------- AOT, transforms, JAX's own
def test_ahead_of_time_lower_and_compile():
    def aot(x):
        return x * 5

    with jaxviz.watch() as log:
        jax.jit(aot).lower(jnp.ones(3)).compile()
    (e,) = only(log, "aot")
    assert e.kind == "aot" and all(e.durations[k] is not None for k in ("trace", "lower", "compile"))


def test_grad_of_a_jitted_function_outside_jit():
    def sq(x):
        return jnp.sum(x ** 2)

    f = jax.jit(sq)
    with jaxviz.watch() as log:
        jax.grad(f)(jnp.ones(3))
        jax.grad(f)(jnp.ones(4))
    # the jvp program is compiled for the call's primal values, and explained like jit's
    first, again = [e for e in log.events if e.signature is not None]
    assert first.first_compile and first.signature.describe()["x"] == "f32[3]"
    assert [(c.kind, c.path, c.before, c.after) for c in again.causes] == [
        ("shape", "x", (3,), (4,))]
    # its transposition runs without the call: compiled without a new trace, said so; the
    # second one is the backward pass of the recompiled call, for the same reason
    first_back, again_back = [e for e in log.events if e.signature is None]
    assert not first_back.causes and "transformation" in str(first_back)
    assert again_back.causes == again.causes


def test_jax_internal_compiles_are_not_reported():
    with jaxviz.watch() as log:
        jnp.sin(jnp.arange(11.0))  # eager: jnp.sin is jitted inside JAX
        jnp.ones((3, 17)) * 2
    assert log.events == []
    with jaxviz.watch(include_jax=True) as log2:
        jnp.cos(jnp.arange(13.0))
    assert any(e.function.name == "cos" for e in log2.events)


# ---------------------------------------------------------------------- robustness
def test_nested_and_double_started_watches_and_listeners_removed():
    before = internals.monitoring_listener_counts()
    config_before = {n: getattr(jax.config, n) for n in signature.CONTEXT_OPTIONS}
    f = jax.jit(lambda x: x + 2)
    outer = jaxviz.watch()
    outer.start()
    outer.start()  # twice: still one registration
    with jaxviz.watch() as inner:
        with inner:  # re-entered: fine
            f(jnp.ones(1))
    f(jnp.ones(2))
    outer.stop()
    outer.stop()
    f(jnp.ones(3))  # nobody watching
    assert len(inner.events) == 1 and len(outer.events) == 2
    assert outer.events[0] is inner.events[0]
    assert internals.monitoring_listener_counts() == before
    assert {n: getattr(jax.config, n) for n in signature.CONTEXT_OPTIONS} == config_before
    assert not outer.active and rc.active_watches() == [w for w in rc.active_watches() if w is not outer]


def test_compiles_from_other_threads():
    def threaded(x):
        return x * 7

    f = jax.jit(threaded)
    errors = []

    def work(n):
        try:
            f(jnp.ones(n))
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    with jaxviz.watch() as log:
        threads = [threading.Thread(target=work, args=(n,), name=f"worker-{n}") for n in (2, 3, 4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors
    events = only(log, "threaded")
    assert len(events) == 3 and {e.thread for e in events} == {"worker-2", "worker-3", "worker-4"}
    assert all(e.done and e.durations["compile"] is not None for e in events)
    assert sorted(e.count for e in events) == [1, 2, 3]


def test_weird_and_unhashable_arguments():
    class Opaque:
        def __repr__(self):
            raise RuntimeError("no repr for you")

        def __hash__(self):
            return 1

        def __eq__(self, other):
            return isinstance(other, Opaque)

    def weird(x, cfg):
        return x

    f = jax.jit(weird, static_argnums=1)
    with jaxviz.watch() as log:
        with pytest.raises((TypeError, ValueError)):
            f(jnp.ones(2), {"unhashable": [1]})  # JAX refuses: no event, no crash
        with pytest.raises(TypeError):
            jax.jit(lambda s: s)("a string")
        f(jnp.ones(2), Opaque())
        f(jnp.ones(2), 3)
    assert listeners.DISPATCHER.internal_errors == 0
    e = only(log, "weird")[-1]
    (c,) = e.causes
    assert c.kind == "static_value" and c.path == "cfg" and c.after == 3
    assert "Opaque" in str(c.before)
    assert isinstance(str(e), str)


def test_long_run_keeps_memory_bounded():
    step = jax.jit(lambda x: x + 1)
    x = jnp.zeros(())
    with jaxviz.watch(max_events=5) as log:
        for _ in range(100_000):
            x = step(x)
        for n in range(1, 9):  # 8 misses into a log that keeps 5
            step(jnp.zeros(n))
    assert len(log.events) == 5 and log.dropped == 4
    assert log.summary()["<lambda>"].compiles == 9  # totals survive the bound


def test_a_function_keeps_its_last_16_signatures():
    """Each jit object remembers the last 16 signatures it compiled (memory stays bounded):
    after 17 shapes and a cleared cache, the 2nd shape is known to have compiled before,
    the 1st is not (its recompile is explained against the latest signature)."""
    step = jax.jit(lambda x: x + 1)
    with jaxviz.watch(storm=100) as log:
        for n in range(1, 18):
            step(jnp.zeros(n))
        jax.clear_caches()
        step(jnp.zeros(2))
        step(jnp.zeros(1))
    remembered, forgotten = log.events[-2:]
    assert [c.kind for c in remembered.causes] == ["cache_cleared"]
    assert [(c.kind, c.path) for c in forgotten.causes] == [("shape", "x")]
    assert "(2,) → (1,)" in str(forgotten)


# ---------------------------------------------------------------------- stale globals
def test_stale_global_check_without_ipython():
    ns = {"jax": jax}
    exec("g = 0\ndef h(x):\n    return x + g\n", ns)
    jh = jax.jit(ns["h"])
    with jaxviz.watch() as log:
        assert float(jh(4.0)) == 4.0
        assert log.check() == []
        ns["g"] = 10
        assert float(jh(4.0)) == 4.0  # the classic pitfall: still 0 baked in
        (stale,) = log.check()
    assert stale.message.startswith(
        "`h` was compiled with global `g = 0`; `g` is now 10, and calls of `h` still use 0")
    assert (stale.function, stale.name, stale.baked, stale.current) == ("h", "g", "0", "10")
    ns["g"] = 0
    assert log.check() == []


def test_stale_closure_and_array_values():
    def make():
        scale = 2.0

        def inner(x):
            return x * scale

        def set_scale(v):
            nonlocal scale
            scale = v
        return inner, set_scale

    inner, set_scale = make()
    ns = {"jax": jax, "np": np, "jnp": jnp}
    exec("table = np.arange(4.0)\ndef lookup(i):\n    return jnp.asarray(table)[i]\n", ns)
    with jaxviz.watch() as log:
        jax.jit(inner)(1.0)
        jax.jit(ns["lookup"])(1)
        set_scale(3.0)
        ns["table"][1] = 100.0  # mutated in place: the compiled constant is a copy
        found = {s.name: s for s in log.check()}
    assert set(found) == {"scale", "table"}
    assert found["scale"].source == "closure" and found["scale"].baked == "2.0"
    assert "closure variable `scale = 2.0`" in found["scale"].message


def test_stale_container_changed_in_place():
    ns = {"jax": jax}
    exec("cfg = {'lr': 0.1, 'decay': (0.9, 0.99)}\n"
         "def update(w):\n    return w - cfg['lr'] * cfg['decay'][0]\n", ns)
    with jaxviz.watch() as log:
        jax.jit(ns["update"])(1.0)
        assert log.check() == []
        ns["cfg"]["lr"] = 0.01  # in place: same dict object
        (stale,) = log.check()
    assert (stale.name, stale.baked, stale.current) == (
        "cfg", "{'decay': (0.9, 0.99), 'lr': 0.1}", "{'decay': (0.9, 0.99), 'lr': 0.01}")
    assert stale.message.startswith(
        "`update` was compiled with global `cfg = {'decay': (0.9, 0.99), 'lr': 0.1}`; `cfg` is "
        "now {'decay': (0.9, 0.99), 'lr': 0.01}, and calls of `update` still use {'decay'")
    ns["cfg"]["lr"] = 0.1
    assert log.check() == []


def test_stale_container_is_copied_again_only_when_it_changed(monkeypatch):
    """The check after every cell compares a tracked container by identity (the container
    and each leaf) and snapshots it again (a device-to-host copy per array) only when
    something changed; its message is rebuilt only then."""
    ns = {"jax": jax, "jnp": jnp, "np": np}
    exec("cfg = {'w': jnp.full((3,), 2.0), 'b': [jnp.ones(2), 0.5], 'mask': np.ones(2)}\n"
         "def apply(x):\n    return x * cfg['w'] + cfg['b'][0].sum() * cfg['b'][1] + cfg['mask'][0]\n", ns)
    snapshots = []
    real = stale_globals._snapshot_parts
    monkeypatch.setattr(stale_globals, "_snapshot_parts", lambda v: snapshots.append(v) or real(v))
    with jaxviz.watch() as log:
        jax.jit(ns["apply"])(jnp.ones(3))
        snapshots.clear()
        for _ in range(3):
            assert log.check() == []
        assert snapshots == []  # nothing changed: nothing copied
        ns["cfg"]["w"] = jnp.full((3,), -1.0)  # in place, a new array
        first = log.check()
        assert len(first) == 1 and len(snapshots) == 1 and "-1." in first[0].current
        again = log.check()
        assert again[0] is first[0] and len(snapshots) == 1  # same message, no new copy
        ns["cfg"]["w"] = jnp.full((3,), 2.0)  # another array with the baked values
        assert log.check() == [] and len(snapshots) == 2
        ns["cfg"]["mask"][1] = 7.0  # a numpy leaf changed in place: still seen
        (stale,) = log.check()
        assert "7." in stale.current and len(snapshots) == 3
        ns["cfg"]["mask"][1] = 1.0
        assert log.check() == []
        ns["cfg"]["b"].append(1)  # the structure changed
        (stale,) = log.check()
        assert stale.name == "cfg" and "1]" in stale.current


def test_stale_check_finds_each_changed_global_of_100_functions():

    ns = {"jax": jax}
    src = "\n".join(f"g{i} = {i}\ndef h{i}(x):\n    return x + g{i}\n" for i in range(100))
    exec(src, ns)
    fns = [jax.jit(ns[f"h{i}"]) for i in range(100)]
    with jaxviz.watch() as log:
        for f in fns:
            f.trace(1.0)  # tracing bakes the globals in; compiling adds nothing here
        for i in range(0, 100, 10):
            ns[f"g{i}"] = -1
        log.check()
        found = log.check()
    assert len(found) == 10  # bench_watch.py holds the check's time to 5 ms


def test_stale_globals_through_a_real_ipython_shell(capfd):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxviz")
    try:
        assert notebook.session() is not None and notebook.session().active
        r = shell.run_cell("import jax\ng = 0\ndef h(x):\n    return x + g\njit_h = jax.jit(h)\njit_h(4.)\n")
        assert r.error_in_exec is None
        capfd.readouterr()
        shell.run_cell("g = 10\n")
        shown = capfd.readouterr().out  # displayed under the cell: no raw Markdown backticks
        assert ("jaxviz: h was compiled with global g = 0; g is now 10, and calls of h "
                "still use 0") in shown, shown
        shell.run_cell("y = 1\n")  # reported once, not after every cell
        assert "was compiled with" not in capfd.readouterr().out
        r = shell.run_cell("float(jit_h(4.))")
        assert r.result == 4.0
        # %jaxviz recompiles shows the session log; its event names the cell
        capfd.readouterr()
        shell.run_cell("%jaxviz recompiles h")
        shown = capfd.readouterr().out
        assert "`h` (defined at cell [" in shown and "compiled for the first time at cell [" in shown
        ev = [e for e in notebook.session().events if e.function.name == "h"][-1]
        assert ev.call_site.cell is not None and str(ev.call_site).startswith("cell [")
        assert ev.function.defined.cell is not None
        shell.run_cell("%jaxviz watch off")
        assert not notebook.session().active
        shell.run_cell("%jaxviz watch --quiet")
        assert notebook.session().active
        r = shell.run_cell("%jaxviz watch --storm 3")
        assert r.error_in_exec is None and notebook.session().storm == 3 and len(open_monitors()) == 1
        r = shell.run_cell("%jaxviz watch sideways")
        assert isinstance(r.error_in_exec, ValueError)
    finally:
        shell.run_line_magic("unload_ext", "jaxviz")
    assert notebook.session() is None and open_monitors() == [] and rc.active_watches() == []
    shell.run_cell("g = 11\n")
    captured = capfd.readouterr()
    assert "was compiled with" not in captured.out + captured.err


def test_rerun_cell_is_a_new_function_object():
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxviz")
    try:
        cell = "import jax, jax.numpy as jnp\n@jax.jit\ndef cellfn(x):\n    return x * 2\ncellfn(jnp.ones(3))\n"
        shell.run_cell(cell)
        shell.run_cell(cell)
        events = [e for e in notebook.session().events if e.function.name == "cellfn"]
        (c,) = events[-1].causes
        assert (c.kind, c.path, c.detail) == ("new_function_object", "cellfn", "cell")
        assert c.note.startswith("`cellfn` defined again by re-running cell [")
        assert "Re-running the cell defined `cellfn` again" in events[-1].suggestion
    finally:
        shell.run_line_magic("unload_ext", "jaxviz")


# ---------------------------------------------------------------------- rendering, bridge
def test_event_sentence_and_renderings():
    f = jax.jit(lambda x: x * 2)
    with jaxviz.watch() as log:
        f(jnp.ones(3))
        f(jnp.ones(4))
    text = str(log.events[1])
    assert text.count("\n") == 0 and text.endswith(".")
    assert "compiled for the 2nd time" in text and "`x` changed shape (3,) → (4,)" in text
    bundle = log._repr_mimebundle_()
    # What any JupyterLab renders (the graph renderer's MIME type is for graphs only).
    assert set(bundle) == {"text/plain", "text/html"}
    payload = log.to_json()
    assert payload["schema"] == "jaxviz.compiles" and len(payload["events"]) == 2
    assert [e["recompile"] for e in payload["events"]] == [False, True]
    assert payload["events"][1]["causes"][0] == {
        "kind": "shape", "path": "x", "before": [3], "after": [4], "axis": 0,
        "text": "`x` changed shape (3,) → (4,) on axis 0 (3 → 4)"}
    import json

    json.dumps(payload)  # JSON-safe
    assert "<table" in bundle["text/html"] and "changed shape" in bundle["text/html"]
    assert "<code>x</code> changed shape" in bundle["text/html"] and "`" not in bundle["text/html"]
    assert "first compile" in bundle["text/html"]

    from rich.console import Console

    console = Console(record=True, width=160)
    console.print(log)
    out = console.export_text()
    assert "<lambda>" in out and "changed shape" in out and "per function" in out
    assert "signatures" in str(log.summary())


def test_compile_and_stale_events_are_published(monkeypatch):
    sent = []

    monkeypatch.setattr(listeners, "SUBSCRIBERS", [lambda kind, payload: sent.append((kind, payload))])
    ns = {"jax": jax}
    exec("g = 1\ndef pub(x):\n    return x * g\n", ns)
    with jaxviz.watch() as log:
        jax.jit(ns["pub"])(2.0)
        ns["g"] = 5
        log.check(report=True)
    compiles = [p for k, p in sent if k == "compile" and p["function"] == "pub"]
    assert len(compiles) == 1
    assert {"function", "call_site", "count", "causes", "message", "suggestion", "durations",
            "time"} <= set(compiles[0])
    assert set(compiles[0]["durations"]) == {"trace", "lower", "compile"}
    (stale,) = [p for k, p in sent if k == "stale"]
    assert stale == {"function": "pub", "name": "g", "baked": "1", "current": "5",
                     "message": stale["message"]}


def test_publishing_without_a_subscriber(monkeypatch):
    monkeypatch.setattr(listeners, "SUBSCRIBERS", [])
    with jaxviz.watch() as log:
        jax.jit(lambda x: x - 3)(jnp.ones(2))
    assert len(log.events) == 1


def test_no_warnings_from_a_quiet_run():
    f = jax.jit(lambda x: x / 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with jaxviz.watch() as log:
            f(jnp.ones(2))
            f(jnp.ones(3))
    gc.collect()
    assert len(log.events) == 2


# ---------------------------------------------------------------------- round 2: as users meet them
def test_numpy_then_device_put_is_a_commitment_change():
    """Same jaxpr, new executable (no new trace): the argument and how it was placed."""
    def scale(x):
        return x * 2

    f = jax.jit(scale)
    with jaxviz.watch() as log:
        f(np.ones(3, np.float32))
        f(jnp.ones(3))  # uncommitted too: the same executable, no compile
        f(jax.device_put(np.ones(3, np.float32), jax.devices()[0]))
    events = only(log, "scale")
    assert len(events) == 2
    assert events[1].kind == "compile" and events[1].durations["trace"] is None  # no new trace
    assert causes(events[1]) == [("commitment", "x", "a numpy array (uncommitted)",
                                  f"committed to {jax.devices()[0].platform}:0")]
    assert "jax.device_put every input" in events[1].suggestion
    assert "nothing visible" not in str(events[1]) and "no difference" not in str(events[1])


def test_same_function_jitted_with_and_without_donation():
    def update(params, grads):
        return params - 0.1 * grads

    plain = jax.jit(update)
    donating = jax.jit(update, donate_argnames="params")
    with jaxviz.watch() as log:
        plain(jnp.ones(3), jnp.ones(3))
        donating(jnp.ones(3), jnp.ones(3))
    events = only(log, "update")
    assert causes(events[1]) == [("donation", "params", False, True)]
    assert str(events[1].causes[0]) == ("`params` is donated now (donate_argnums) and was not "
                                        "at the compiled call")
    assert "with and without donate_argnums" in events[1].suggestion


def test_static_config_equal_but_hashed_by_identity():
    class Config:
        def __init__(self, depth):
            self.depth = depth

        def __eq__(self, other):
            return isinstance(other, Config) and other.depth == self.depth

        __hash__ = object.__hash__

        def __repr__(self):
            return f"Config(depth={self.depth})"

    class Options:  # no __eq__ at all: compared by identity
        def __init__(self, depth):
            self.depth = depth

        def __repr__(self):
            return f"Options(depth={self.depth})"

    def forward(x, cfg):
        return x * cfg.depth

    f = jax.jit(forward, static_argnames="cfg")
    # Each object kept alive (a freed one's id, its hash, may go to the next). JAX's cache
    # may still take a Config for an equal one made before (its hash table asks __eq__ of
    # keys whose hashes only share a few bits): a few of them, so that one compiles again.
    configs, options = [Config(2) for _ in range(4)], [Options(2), Options(2)]
    with jaxviz.watch() as log:
        for cfg in configs:
            f(jnp.ones(2), cfg=cfg)
        compiled = len(only(log, "forward"))
        for cfg in options:
            f(jnp.ones(2), cfg=cfg)
    events = only(log, "forward")
    assert compiled >= 2, [str(e) for e in events]
    hashed, changed, identity = events[1], events[compiled], events[compiled + 1]
    c = hashed.causes[0]
    assert (c.kind, c.path, c.detail, c.owner, c.before, c.after) == (
        "static_value", "cfg", "hash", "Config", "Config(depth=2)", "Config(depth=2)")
    assert "hashes differently: Config hashes by identity" in str(c)
    assert "dataclasses.dataclass(frozen=True)" in hashed.suggestion
    assert "__hash__" in hashed.suggestion
    assert causes(changed) == [("static_value", "cfg", "Config(depth=2)", "Options(depth=2)")]
    c = identity.causes[0]
    assert (c.kind, c.path, c.detail, c.owner) == ("static_value", "cfg", "identity", "Options")
    assert "a new `Options` object, compared by identity (it defines no `__eq__`)" in str(c)
    assert "frozen=True" in identity.suggestion


def test_functools_partial_built_inside_the_loop():
    import functools

    def apply(scale, x):
        return x * scale

    with jaxviz.watch() as log:
        for _ in range(2):
            step = jax.jit(functools.partial(apply, 2.0))
            step(jnp.ones(2))
    c = only(log, "apply")[1].causes[0]
    assert (c.kind, c.path, c.detail) == ("new_function_object", "step", "partial")
    assert c.note == "a new functools.partial of `apply` (`apply` itself is the same function)"
    line = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1)
                if t.strip() == "step = jax.jit(functools.partial(apply, 2.0))")
    assert c.owner == f"{signature.site_at(__file__, line)}, inside a loop"
    assert "Build the partial once, outside the loop" in only(log, "apply")[1].suggestion


@pytest.mark.skipif(tuple(int(p) for p in jax.__version__.split(".")[:2]) < (0, 7),
                    reason="JAX 0.6 reuses the trace of an equal bound method object")
def test_jit_of_a_bound_method_of_a_new_instance_each_step():
    class Model:
        def __init__(self):
            self.scale = 3.0

        def forward(self, x):
            return x * self.scale

    model = Model()
    same = jax.jit(model.forward)
    with jaxviz.watch() as log:
        same(jnp.ones(2))
        same(jnp.ones(2))  # a hit
        again = jax.jit(model.forward)  # a new bound method object: JAX traces again
        again(jnp.ones(2))
        for _ in range(2):
            jax.jit(Model().forward)(jnp.ones(2))
    events = only(log, "forward")
    assert len(events) == 4, [str(e) for e in events]
    c = events[1].causes[0]
    assert (c.kind, c.path, c.detail) == ("new_function_object", "again", "method_object")
    assert c.note == ("a new bound method object `Model.forward` of the same Model instance "
                      "(each `obj.forward` access makes one)")
    assert "Jit the bound method once (`forward = jax.jit(obj.forward)` before the loop)" \
        in events[1].suggestion
    c = events[3].causes[0]
    assert (c.kind, c.path, c.detail) == ("new_function_object", "forward", "method")
    assert c.note == "the bound method `Model.forward` of a new Model instance"
    assert c.owner.endswith(", inside a loop")
    assert "jax.jit(type(obj).forward)(obj, x)" in events[3].suggestion


def test_jit_object_made_again_by_a_helper():
    def make_step(lr):
        @jax.jit
        def sgd(w):
            return w - lr

        return sgd

    with jaxviz.watch() as log:
        make_step(0.1)(jnp.ones(2))
        make_step(0.1)(jnp.ones(2))
    c = only(log, "sgd")[1].causes[0]
    assert (c.kind, c.path, c.detail) == ("new_function_object", "sgd", "closure")
    assert c.note == "a nested function made again by a new call of `make_step`"
    assert c.owner == str(signature.site_at(__file__, make_step.__code__.co_firstlineno + 1))
    assert "defined at" in str(c)


def test_tree_util_partial_over_a_new_closure():
    from jax.tree_util import Partial

    @jax.jit
    def apply_loss(loss_fn, x):
        return loss_fn(x)

    def make_loss(scale):
        def loss(x):
            return jnp.sum(x * scale)

        return loss

    with jaxviz.watch() as log:
        for _ in range(2):
            apply_loss(Partial(make_loss(2.0)), jnp.ones(3))
    c = only(log, "apply_loss")[1].causes[0]
    assert (c.kind, c.path, c.detail) == ("new_function_object", "loss_fn", "tree_partial")
    assert c.note == ("a jax.tree_util.Partial over a new closure `loss`, made again by a new "
                      "call of `make_loss`")
    assert "Partial's function is static" in only(log, "apply_loss")[1].suggestion


@pytest.mark.skipif(not internals.CACHE_CLEARS_HEARD, reason="JAX 0.6 has no cache registry to hear clears by")
def test_when_nothing_differs_it_says_the_cache_was_cleared_and_where():
    f = jax.jit(lambda x: x + 2)
    with jaxviz.watch() as log:
        f(jnp.ones(2))
        jax.clear_caches()
        line = inspect.currentframe().f_lineno - 1
        f(jnp.ones(2))
    c = log.events[1].causes[0]
    assert (c.kind, c.path, c.detail) == ("cache_cleared", "jax.clear_caches()", "clear_caches")
    assert c.owner == f"tests/test_recompiles.py:{line}"
    assert f"`jax.clear_caches()` ran at tests/test_recompiles.py:{line}" in str(c)


def test_two_call_sites_of_different_sizes_are_not_a_ragged_batch():
    x_test = np.ones((40, 3), np.float32)

    @jax.jit
    def predict(x):
        return x.sum(axis=1)

    with jaxviz.watch() as log:
        predict(x_test)
        predict(x_test[:12])
    (_, second) = only(log, "predict")
    assert causes(second) == [("shape", "x", (40, 3), (12, 3))]
    assert "Ragged" not in second.suggestion
    assert "two call sites (or data sets) of different sizes" in second.suggestion
    assert str(second.call_site) in second.suggestion


def test_notice_under_a_cell_that_recompiles(capfd):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxviz")
    try:
        shell.run_cell("import jax, jax.numpy as jnp\n@jax.jit\ndef train_step(x):\n"
                       "    return x.sum()\n")
        capfd.readouterr()
        shell.run_cell("for n in (32, 48, 64, 80, 96, 112):\n    train_step(jnp.ones((n, 3)))\n")
        out = capfd.readouterr().out
        assert out.strip() == ("jaxviz: train_step compiled 6 times in this cell: x changed size "
                               "on axis 0 (32, 48, 64, …) → %jaxviz recompiles train_step"), out
        shell.run_cell("_ = train_step(jnp.ones((32, 3)))")  # a hit: nothing is added
        assert capfd.readouterr().out == ""
        shell.run_cell("_ = train_step(jnp.ones((7, 3)))")  # one compile in this cell: quiet
        assert capfd.readouterr().out == ""
        shell.run_cell("%jaxviz watch --notice off")
        assert not notebook.NOTICE.enabled
        capfd.readouterr()
        shell.run_cell("for n in (1, 2):\n    train_step(jnp.ones((n, 3)))\n")
        assert "compiled" not in capfd.readouterr().out
        shell.run_cell("%jaxviz watch --notice on")
        assert notebook.NOTICE.enabled
    finally:
        notebook.NOTICE.enabled = True
        shell.run_line_magic("unload_ext", "jaxviz")


# ---------------------------------------------------------------------- through the libraries' wrappers
def test_equinox_filter_jit_in_the_users_terms():
    eqx = pytest.importorskip("equinox")

    class Model(eqx.Module):
        linear: eqx.nn.Linear
        step_count: int = eqx.field(static=True)
        dropout_rate: float = 0.1  # a plain float leaf: filter_jit holds it static

    @eqx.filter_jit
    def loss(model, xs, ys):
        preds = jax.vmap(model.linear)(xs) * (1 - model.dropout_rate)
        return jnp.mean((preds - ys) ** 2)

    model = Model(eqx.nn.Linear(20, 1, key=jax.random.PRNGKey(0)), step_count=0)
    with jaxviz.watch() as log:
        loss(model, jnp.ones((32, 20)), jnp.ones((32, 1)))
        loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))
        model = Model(model.linear, step_count=1)
        loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))
        model = Model(model.linear, step_count=1, dropout_rate=0.2)
        loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))
    events = only(log, "loss")
    assert len(events) == 4, [str(e) for e in events]
    assert events[0].function.defined.file == __file__  # the user's loss, not Equinox's
    assert causes(events[1]) == [("shape", "xs", (32, 20), (4, 20)), ("shape", "ys", (32, 1), (4, 1))]
    c = events[2].causes[0]
    assert (c.kind, c.path, c.detail, c.owner, c.before, c.after) == (
        "pytree_structure", "model.step_count", "static_field", "Model", "0", "1")
    assert causes(events[3]) == [("static_value", "model.dropout_rate", 0.1, 0.2)]
    text = " ".join(str(e) for e in events)
    assert "dynamic_nodonate" not in text and "`static`" not in text


def test_flax_nnx_jit_in_the_users_terms():
    nnx = pytest.importorskip("flax.nnx")

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(20, 1, rngs=rngs)
            self.step_count = 0

        def __call__(self, x):
            return self.linear(x)

    @nnx.jit
    def loss(model, xs, ys):
        return jnp.mean((model(xs) - ys) ** 2)

    model = MLP(nnx.Rngs(0))
    with jaxviz.watch() as log:
        loss(model, jnp.ones((32, 20)), jnp.ones((32, 1)))
        loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))
        model.step_count += 1
        loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))
    events = only(log, "loss")
    assert len(events) == 3, [str(e) for e in events]
    assert causes(events[1]) == [("shape", "xs", (32, 20), (4, 20)), ("shape", "ys", (32, 1), (4, 1))]
    c = events[2].causes[0]
    assert (c.kind, c.path, c.detail, c.owner, c.before, c.after) == (
        "pytree_structure", "model.step_count", "static_field", "MLP", "0", "1")
    assert "GraphDef" not in str(events[2]) and "states[" not in str(events[2])

    import functools

    @functools.partial(nnx.jit, static_argnames="training")
    def evaluate(model, xs, training):
        return jnp.mean(model(xs)) * (0.5 if training else 1.0)

    with jaxviz.watch() as log:  # nnx.jit passes the arguments through: static ones stay so
        evaluate(model, jnp.ones((4, 20)), training=True)
        evaluate(model, jnp.ones((4, 20)), training=False)
    assert causes(only(log, "evaluate")[1]) == [("static_value", "training", True, False)]


def test_haiku_transformed_apply_under_jit():
    hk = pytest.importorskip("haiku")

    def forward(x):
        return hk.nets.MLP([8, 1])(x)

    net = hk.transform(forward)
    params = net.init(jax.random.PRNGKey(0), jnp.ones((4, 3)))
    apply = jax.jit(net.apply)
    with jaxviz.watch() as log:
        apply(params, None, jnp.ones((4, 3)))
        apply(params, None, jnp.ones((2, 3)))
    events = only(log, "forward.apply")
    assert len(events) == 2, [str(e) for e in log.events]
    assert events[0].function.defined.file == __file__
    assert causes(events[1]) == [("shape", "x", (4, 3), (2, 3))]
    assert "['mlp/~/linear_0']['w']: f32[3,8]" in events[1].signature.describe()["params"]


def test_optax_optimizer_made_again_as_a_static_argument():
    optax = pytest.importorskip("optax")

    def train_step(params, opt_state, x, tx):
        grads = jax.grad(lambda p: jnp.sum((x @ p) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    step = jax.jit(train_step, static_argnames="tx")
    params = jnp.ones(3)
    with jaxviz.watch() as log:
        for _epoch in range(2):
            tx = optax.adam(1e-3)
            opt_state = tx.init(params)
            params, opt_state = step(params, opt_state, jnp.ones((2, 3)), tx=tx)
    (_, again) = only(log, "train_step")
    c = again.causes[0]
    assert (c.kind, c.path, c.detail) == ("static_value", "tx", "made_again")
    assert c.owner.startswith("GradientTransformation")
    assert "Build it once, outside the loop" in again.suggestion
    assert "optax.inject_hyperparams" in again.suggestion


def test_user_decorator_keeps_the_users_names():
    import functools

    def my_jit(fn):
        jitted = jax.jit(fn)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return jitted(*args, **kwargs)

        return wrapper

    @my_jit
    def predict(weights, batch):
        return batch @ weights

    with jaxviz.watch() as log:
        predict(jnp.ones(3), jnp.ones((8, 3)))
        predict(jnp.ones(3), jnp.ones((5, 3)))  # the call site, not the wrapper's line
    second = only(log, "predict")[1]
    assert causes(second) == [("shape", "batch", (8, 3), (5, 3))]
    assert "predict(jnp.ones(3), jnp.ones((5, 3)))" in second.call_site.text, second.call_site


def test_notice_names_the_arguments_that_changed_together():
    def fit(x, y):
        return x.sum() + y.sum()

    f = jax.jit(fit)
    with jaxviz.watch() as log:
        f(jnp.ones((64, 3)), jnp.ones(64))
        f(jnp.ones((29, 3)), jnp.ones(29))
        f(jnp.ones((29, 3), jnp.int32), jnp.ones(29))  # x: another dtype
    assert notebook.cell_notices(log.events[:2]) == [
        "`fit` compiled 2 times in this cell: `x` changed size on axis 0 (64, 29) (`y` too) "
        "→ `%jaxviz recompiles fit`"]
    assert notebook.cell_notices(log.events[:1]) == []  # a first compile is not a recompile
    assert notebook.cell_notices(log.events, min_compiles=4) == []
    (line,) = notebook.cell_notices(log.events)
    assert line == ("`fit` compiled 3 times in this cell: `x` changed size on axis 0 (64, 29) "
                    "(and 2 other causes) → `%jaxviz recompiles fit`")
