"""The graph shows what JAX really does, on any program:

- a transformation with tracing rules of its own (``jax.pmap``, ``eqx.filter_pmap``,
  ``shard_map``) is traced by those rules, never unwrapped and retraced under plain ``jit``;
- stateful frameworks' state is an output only where the transformation writes it back;
- every captured array is named after the global or closure cell it came from (with its
  path inside a pytree), or after what made it.

Programs over 8 host devices run in a subprocess (``pmap_programs.py``), started beside
the tests before these (``tests/background.py``)."""

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, NamedTuple

import background
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental.ode import odeint
from jax.scipy.optimize import minimize

import jaxviz
from jaxviz.cells import stage_cell

nnx = pytest.importorskip("flax.nnx")
optax = pytest.importorskip("optax")
optx = pytest.importorskip("optimistix")
eqx = pytest.importorskip("equinox")
hk = pytest.importorskip("haiku")

HERE = Path(__file__).parent


# ---------------------------------------------------------------------- pmap, shard_map
def run_on_eight_devices() -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    env["XLA_FLAGS"] = background.with_host_devices(8)
    return background.run([sys.executable, str(HERE / "pmap_programs.py")], env=env, timeout=300)


EIGHT_DEVICES = background.job(__file__, run_on_eight_devices)  # beside the tests before these


@pytest.fixture(scope="module")
def eight_devices():
    proc = EIGHT_DEVICES.result()
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_pmap_train_step_is_traced_as_pmap(eight_devices):
    """A Flax ResNet step under ``jax.pmap`` with ``lax.pmean(grads, 'batch')`` and
    BatchNorm synchronised over ``batch``: axis names bound (no ``unbound axis name``), one
    group named after the mapped function with its axis, the collectives inside it."""
    out = eight_devices
    assert out["devices"] == 8
    assert "pmap train_step (batch: 8)" in out["trace_groups"]
    assert out["trace_prims"].count("psum") >= 20  # 20 gradients and 2 metrics, 4 BatchNorms
    assert out["trace_outputs"] == out["real_outputs"]
    assert "pmap train_step (batch: 8)" in out["jit_of_pmap_groups"]  # jax.jit(pmap(...)) too


def test_pmap_from_the_magics_runs_as_a_plain_call(eight_devices):
    out = eight_devices
    assert out["line_error"] == "None" and "pmap train_step (batch: 8)" in out["line_groups"]
    assert out["cell_error"] == "None" and "pmap train_step (batch: 8)" in out["cell_groups"]
    assert out["cell_results_equal"] and out["cell_sharding_equal"]
    assert out["timed_error"] == "None" and out["timed_results_equal"]  # %jaxpr --time runs the pmap


def test_pmap_collectives_are_equations_inside_its_group(eight_devices):
    prims = eight_devices["exchange_prims"]
    assert {"all_gather", "ppermute", "psum", "pmax"} <= set(prims)
    assert "pmap exchange (i: 8)" in eight_devices["exchange_groups"]


def test_pmap_static_arguments_and_unnamed_axes(eight_devices):
    out = eight_devices
    assert "pmap scaled_sum (i: 8)" in out["static_groups"] and out["static_kind"] == "static"
    assert "pmap <lambda> (8 devices)" in out["unnamed_groups"]
    assert not [name for name in out["unnamed_groups"] if "_internal" in name]


def test_equinox_filter_pmap_and_shard_map_keep_their_rules(eight_devices):
    out = eight_devices
    assert "pmap averaged (d: 8)" in out["eqx_groups"]
    assert "shard_map sharded_matmul (data: 4, model: 2" in " ".join(out["shard_map_groups"])
    assert "shard_map sharded_matmul (data: 4, model: 2" in " ".join(out["jit_shard_map_groups"])


# ---------------------------------------------------------------------- NNX under plain jax.jit
# In the style of Flax's MNIST tutorial (https://flax.readthedocs.io/en/latest/mnist_tutorial.html),
# with the bug of https://github.com/google/flax/discussions/4290-style questions: the step is
# decorated with plain ``jax.jit``, which takes the Modules as pytrees and writes nothing back.
def nnx_programs():
    class CNN(nnx.Module):
        def __init__(self, *, rngs):
            self.conv1 = nnx.Conv(1, 4, kernel_size=(3, 3), rngs=rngs)
            self.linear1 = nnx.Linear(4 * 4 * 4, 16, rngs=rngs)
            self.linear2 = nnx.Linear(16, 10, rngs=rngs)

        def __call__(self, x):
            x = nnx.avg_pool(nnx.relu(self.conv1(x)), window_shape=(2, 2), strides=(2, 2))
            x = x.reshape(x.shape[0], -1)
            return self.linear2(nnx.relu(self.linear1(x)))

    def loss_fn(model, batch):
        logits = model(batch["image"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
        return loss, logits

    def train_step(model, optimizer, batch):
        grad_fn = nnx.value_and_grad(loss_fn, has_aux=True)
        (loss, logits), grads = grad_fn(model, batch)
        optimizer.update(model, grads)
        return loss, jnp.mean(logits.argmax(-1) == batch["label"]), optimizer.step[...]

    def fresh():
        model = CNN(rngs=nnx.Rngs(0))
        return model, nnx.Optimizer(model, optax.adamw(1e-3), wrt=nnx.Param)

    batch = {"image": jnp.ones((2, 8, 8, 1)), "label": jnp.array([1, 2])}
    return train_step, fresh, batch


def test_nnx_state_updated_inside_plain_jit_is_drawn_as_lost():
    train_step, fresh, batch = nnx_programs()

    model, optimizer = fresh()
    step = jax.jit(train_step)
    program = jaxviz.trace(step, model, optimizer, batch)
    returned = step(model, optimizer, batch)
    assert int(optimizer.step[...]) == 0  # JAX computed the update and dropped it
    assert len(program.output_names) == len(jax.tree_util.tree_leaves(returned)) == 3
    lost = [n for n in program.graph.nodes if n.kind == "output" and n.input_kind == "lost"]
    assert "optimizer.opt_state[0].mu.linear1.kernel (lost)" in [n.label for n in lost]
    assert "model.conv1.kernel (lost)" in [n.label for n in lost]
    fed = {e.dst for e in program.graph.edges}
    assert all(n.id in fed for n in lost)  # wired from what computed them
    assert "`model` and `optimizer` are updated inside `jax.jit` but never returned: their new state " \
        "is lost; use `nnx.jit` or return them" in program.summary()
    assert "lost" in program.to_dot(expand="all")


def test_nnx_state_returned_from_plain_jit_is_not_lost():
    """The other fix the summary suggests: return what was updated."""
    train_step, fresh, batch = nnx_programs()

    def returning_step(model, optimizer, batch):
        loss = train_step(model, optimizer, batch)[0]
        return loss, model, optimizer

    model, optimizer = fresh()
    step = jax.jit(returning_step)
    program = jaxviz.trace(step, model, optimizer, batch)
    assert not program.lost_outputs and "lost" not in program.summary()
    assert len(program.output_names) == len(jax.tree_util.tree_leaves(step(model, optimizer, batch)))


def test_nnx_jit_twin_writes_the_state_back():
    train_step, fresh, batch = nnx_programs()

    model, optimizer = fresh()
    step = nnx.jit(train_step)
    program = jaxviz.trace(step, model, optimizer, batch)
    assert not program.lost_outputs and "lost" not in program.summary()
    assert "optimizer.opt_state[0].mu.linear1.kernel" in program.output_names
    step(model, optimizer, batch)
    assert int(optimizer.step[...]) == 1


def test_a_cell_writes_back_only_what_really_changed():
    train_step, fresh, batch = nnx_programs()

    for wrap, steps in ((jax.jit, 0), (nnx.jit, 1)):
        model, optimizer = fresh()
        ns = {"step": wrap(train_step), "model": model, "optimizer": optimizer, "batch": batch}
        staged = stage_cell("loss, accuracy, count = step(model, optimizer, batch)", ns)
        staged.run()
        assert int(optimizer.step[...]) == steps
        written = [n for n in staged.program.output_names if n.startswith(("model", "optimizer"))]
        assert bool(written) == bool(steps), written


# ---------------------------------------------------------------------- captured values, named constants
class Schedule(NamedTuple):
    warmup: float
    scale: jax.Array


def const_labels(program):
    return {n.label: n.input_kind for n in program.graph.nodes if n.kind == "const"}


# In the style of optimistix's root-finding example (https://docs.kidger.site/optimistix/api/root_find/):
# the initial guess is a tuple of arrays, a global the solve reads.
def root_fn(y, args):
    a, b = y
    return jnp.tanh(jnp.sum(b)) - a * args, a**2 - jnp.sinh(b + 1)


Y0 = (jnp.array(0.5), jnp.zeros((2, 2)))


def solve(scale):
    solver = optx.Newton(rtol=1e-8, atol=1e-8)
    return optx.root_find(root_fn, solver, Y0, args=scale, throw=False).value


def test_arrays_in_a_global_tuple_are_captured_under_its_name_and_path():
    program = jaxviz.trace(solve, jnp.array(1.0))
    labels = const_labels(program)
    assert labels.get("Y0[0]") == "captured" and labels.get("Y0[1]") == "captured"
    assert {i.name for i in program.inputs_of_kind("captured")} >= {"Y0[0]", "Y0[1]"}
    assert not [label for label in labels if label.startswith("const ")]  # every array constant is named


def test_a_cell_calling_the_solve_names_the_global_it_reads():
    program = stage_cell("root = solve(scale)", {"solve": solve, "scale": jnp.array(1.0)}).program
    labels = const_labels(program)
    assert labels.get("Y0[0]") == "captured" and labels.get("Y0[1]") == "captured"
    assert {i.name for i in program.inputs_of_kind("captured")} >= {"Y0[0]", "Y0[1]"}


DEPTH = 3  # read by Tower.__init__ alone: not while traced
WIDTH = 4
GAIN = 2  # read by Tower.__call__: baked into the trace
SHIFT = jnp.arange(4.0)


class Tower:
    """A model whose constructor reads globals its call never reads."""

    def __init__(self):
        self.weights = [jnp.eye(WIDTH) * (k + 1) for k in range(DEPTH)]

    def __call__(self, x):
        for w in self.weights:
            x = jnp.tanh(x @ w) * GAIN
        return x + SHIFT


TOWER = Tower()


def tower_apply(x):
    return TOWER(x)


def test_only_globals_read_while_traced_are_captured():
    for program in (jaxviz.trace(tower_apply, jnp.ones(4)),
                    stage_cell("out = tower_apply(x)", {"tower_apply": tower_apply, "x": jnp.ones(4)}).program):
        captured = {i.name for i in program.inputs_of_kind("captured")}
        assert {"GAIN", "SHIFT"} <= captured, captured
        assert not {"DEPTH", "WIDTH"} & captured, captured  # only Tower.__init__ reads them, and it did not run


def test_a_closure_config_dict_is_captured_leaf_by_leaf():
    """``make_step(config)`` returns a step closing over a dict of Python numbers and
    arrays (and a NamedTuple inside it), as hyper-parameters often travel."""
    def make_step(config):
        def step(w, x):
            grads = jax.grad(lambda w: jnp.sum((x @ w) ** 2))(w)
            return w * config["decay"] - config["lr"] * grads * config["schedule"].scale

        return step

    config = {"lr": 0.1, "decay": jnp.full((3,), 0.99), "schedule": Schedule(0.2, jnp.ones(3))}
    program = jaxviz.trace(make_step(config), jnp.ones(3), jnp.ones((2, 3)))
    captured = {i.name: i for i in program.inputs_of_kind("captured")}
    assert captured["config['lr']"].value == "0.1" and captured["config['lr']"].source == "closure"
    assert captured["config['decay']"].aval is not None and captured["config['schedule'].scale"].aval is not None
    labels = const_labels(program)
    assert labels.get("config['decay']") == "captured" and labels.get("config['schedule'].scale") == "captured"
    assert not [label for label in labels if label.startswith("const ")]


def test_an_array_no_name_holds_is_named_after_what_made_it():
    def weighted(v):
        return v * np.arange(3.0)

    labels = const_labels(jaxviz.trace(weighted, jnp.ones(3)))
    line = weighted.__code__.co_firstlineno + 1
    assert list(labels) == [f"line {line}: return v * np.arange(3.0)"], labels


# ---------------------------------------------------------------------- other stateful frameworks
class NormedLinear(eqx.Module):
    """Equinox's stateful-layer example (https://docs.kidger.site/equinox/examples/stateful/)."""

    linear: Any  # eqx.nn.Linear (Equinox is imported by importorskip: not a type here)
    norm: Any  # eqx.nn.BatchNorm

    def __init__(self, key):
        self.linear = eqx.nn.Linear(3, 4, key=key)
        self.norm = eqx.nn.BatchNorm(4, axis_name="batch", mode="batch")

    def __call__(self, x, state):
        return self.norm(self.linear(x), state)


def test_equinox_state_is_an_output_only_where_returned():
    model, state = eqx.nn.make_with_state(NormedLinear)(jax.random.key(0))
    x = jnp.ones((5, 3))

    @eqx.filter_jit
    def step(model, state, x):
        y, state = jax.vmap(model, axis_name="batch", in_axes=(0, None), out_axes=(0, None))(x, state)
        return y.sum(), state

    @eqx.filter_jit
    def evaluate(model, state, x):
        return step(model, state, x)[0]

    for fn in (step, evaluate):
        program = jaxviz.trace(fn, model, state, x)
        real = eqx.filter(fn(model, state, x), eqx.is_array)
        assert len(program.output_names) == len(jax.tree_util.tree_leaves(real))
        assert not program.lost_outputs


def test_haiku_state_of_a_jitted_apply_with_static_arguments():
    """``jax.jit(f.apply, static_argnums=4)`` copies Haiku's attributes onto the jit: it is
    unwrapped as a jit (its static ``is_training`` held static), not taken for ``apply``."""
    def forward(x, is_training):
        return hk.BatchNorm(True, True, 0.9)(hk.Linear(4)(x), is_training)

    transformed = hk.transform_with_state(forward)
    x = jnp.ones((5, 3))
    params, state = transformed.init(jax.random.key(0), x, True)
    apply = jax.jit(transformed.apply, static_argnums=4)
    program = jaxviz.trace(apply, params, state, None, x, True)
    assert len(program.output_names) == len(jax.tree_util.tree_leaves(apply(params, state, None, x, True)))
    assert program.input("is_training").kind == "static"


# ---------------------------------------------------------------------- custom rules
def test_custom_vjp_and_custom_jvp_calls_are_named_after_their_function():
    """As Pallas' flash attention wraps its kernel: ``functools.partial(jax.custom_vjp,
    nondiff_argnums=...)`` on ``mha``; and a ``jax.custom_jvp`` softplus."""
    @functools.partial(jax.custom_vjp, nondiff_argnums=[2])
    def mha(q, k, causal):
        return jnp.tanh(q @ k.T) * (2.0 if causal else 1.0)

    def mha_forward(q, k, causal):
        return mha(q, k, causal), (q, k)

    def mha_backward(causal, residuals, g):
        q, k = residuals
        return g @ k, g.T @ q

    mha.defvjp(mha_forward, mha_backward)

    @jax.custom_jvp
    def softplus(x):
        return jnp.log1p(jnp.exp(x))

    softplus.defjvp(lambda primals, tangents: (softplus(primals[0]), tangents[0] * jax.nn.sigmoid(primals[0])))

    def loss(q, k):
        return jnp.sum(mha(q, k, True)) + jnp.sum(softplus(q))

    groups = [(g.name, g.kind) for g in jaxviz.trace(loss, jnp.ones((2, 2)), jnp.ones((2, 2))).graph.groups]
    assert ("mha", "eqn") in groups and ("softplus", "eqn") in groups
    assert not [name for name, _ in groups if name.startswith("custom_")]


class StepCounter(nnx.Module):
    """A layer that counts its calls in a ``BatchStat``, as BatchNorm keeps its statistics."""

    def __init__(self):
        self.calls = nnx.BatchStat(jnp.zeros(()))
        self.scale = nnx.Param(jnp.ones(3))

    def __call__(self, x):
        self.calls[...] = self.calls[...] + 1
        return x * self.scale[...]


def test_nnx_state_under_other_jax_transforms_is_not_written_back():
    """``jax.vmap`` takes the Module as a pytree too: what it updates inside is dropped."""
    def apply(model, x):
        return model(x)

    counter, x = StepCounter(), jnp.ones((2, 3))
    vmapped = jax.vmap(apply, in_axes=(None, 0))
    program = jaxviz.trace(vmapped, counter, x)
    vmapped(counter, x)
    assert int(counter.calls[...]) == 0
    assert program.output_names == ["out"]
    plain = jaxviz.trace(apply, counter, x)  # called without a transformation: updated in place, for real
    assert plain.output_names == ["out", "model.calls", "model.scale"]


class Affine:
    """A model class of the user's own (not a pytree), holding its arrays as attributes."""

    def __init__(self):
        self.weight = jnp.ones((3, 2))
        self.extra = {"bias": jnp.zeros(2)}

    def __call__(self, x):
        return x @ self.weight + self.extra["bias"]


def test_arrays_held_by_an_object_are_named_by_attribute():
    affine = Affine()
    labels = const_labels(jaxviz.trace(affine, jnp.ones(3)))
    assert labels == {"self.weight": "captured", "self.extra['bias']": "captured"}

    def predict(model, x):
        return model(x)

    labels = const_labels(jaxviz.trace(predict, affine, jnp.ones(3)))  # a static argument
    assert labels == {"model.weight": "captured", "model.extra['bias']": "captured"}


def test_a_constant_named_by_its_line_is_the_same_constant_when_the_line_moves():
    def weighted(v):
        return v * np.arange(3.0)

    def weighted_again(v):
        v = v + 0.0  # one line more: the constant's line moves
        return v * np.arange(3.0)

    changes = jaxviz.diff(jaxviz.trace(weighted, jnp.ones(3)), jaxviz.trace(weighted_again, jnp.ones(3)))
    assert [c.node.kind for c in [*changes.added, *changes.removed, *changes.changed]] == ["eqn"]  # the add


def test_a_constant_made_inside_jax_s_own_library_is_named_after_it():
    """``odeint``'s Dormand-Prince tableau is made inside ``jax.experimental.ode``, which no
    user or other library frame reaches: named after JAX's module and function, not ``const
    f32[6,7]``."""
    def final_state(theta, y0):
        return odeint(lambda y, t, k: -k * y, y0, jnp.linspace(0.0, 1.0, 3), theta)[-1]

    program = jaxviz.trace(jax.jit(jax.grad(lambda k, y: jnp.sum(final_state(k, y)))), 1.0, jnp.ones(2))
    labels = {n.label for n in program.graph.nodes if n.kind == "const"}
    assert labels and not any(label.startswith("const ") for label in labels), labels
    assert any(label.startswith("jax.experimental.ode: ") for label in labels), labels


def test_a_library_call_made_through_a_private_jitted_function_is_one_group():
    """``odeint`` calls its private ``_odeint_wrapper`` under ``jax.jit``: the call is one
    group, ``odeint``'s, holding that ``jit`` equation's node, with the integrator inside
    it, not an ``odeint`` group around a ``jit: _odeint_wrapper`` group around it. A call of
    one of JAX's jitted helpers keeps its own group (``jax.random.normal`` runs ``jit:
    _normal_real``)."""
    def final_state(theta, y0):
        noise = jax.random.normal(jax.random.key(0), y0.shape)
        return odeint(lambda y, t, k: -k * y, y0 + noise, jnp.linspace(0.0, 1.0, 3), theta)[-1]

    graph = jaxviz.trace(final_state, 1.0, jnp.ones(2)).graph
    (call,) = [g for g in graph.groups if g.name == "jax.experimental.ode.odeint"]
    assert call.kind == "library" and call.holder in call.nodes
    assert graph.nodes[call.holder].label == "jit: _odeint_wrapper"
    inside = [graph.groups[g].name for g in call.groups]
    assert "_odeint" in inside and not [g for g in graph.groups if g.name == "jit: _odeint_wrapper"], inside
    assert all(graph.nodes[n].group == call.id for n in call.nodes)
    (normal,) = [g for g in graph.groups if g.name == "normal"]
    assert normal.helper and [graph.groups[c].name for c in normal.groups] == ["jit: _normal_real"]


def test_a_library_function_under_jit_is_one_call_however_a_scope_it_opens_cuts_it():
    """``diffrax.diffeqsolve`` runs under Equinox's ``filter_jit``, and its adjoint's loop
    under ``jax.named_call(..., name="outer-loop")``. The name stack puts that scope
    outside the library's calls, the tracebacks put the calls inside it: the call was
    ``jit: diffeqsolve`` around a ``diffrax.diffeqsolve`` group and an ``outer-loop`` group
    holding a second piece of ``RecursiveCheckpointAdjoint.loop``. It is one
    ``diffrax.diffeqsolve`` group holding the ``jit`` equation, one
    ``RecursiveCheckpointAdjoint.loop`` in it, and ``outer-loop`` inside that loop."""
    diffrax = pytest.importorskip("diffrax")

    def solve(y0):
        return diffrax.diffeqsolve(diffrax.ODETerm(lambda t, y, args: -y), diffrax.Tsit5(), t0=0.0, t1=1.0,
                                   dt0=0.1, y0=y0).ys

    graph = jaxviz.trace(solve, jnp.ones(2)).graph
    (call,) = [g for g in graph.groups if g.name == "diffrax.diffeqsolve"]
    assert call.kind == "library" and graph.nodes[call.holder].label == "jit: diffeqsolve"
    assert not [g for g in graph.groups if g.name == "jit: diffeqsolve"]
    (loop,) = [g for g in graph.groups if g.name == "RecursiveCheckpointAdjoint.loop"]
    assert call.id in graph.ancestors(loop.id)
    (scope,) = [g for g in graph.groups if g.name == "outer-loop"]
    assert loop.id in graph.ancestors(scope.id), [graph.groups[a].name for a in graph.ancestors(scope.id)]
    # differentiated, the scope also holds the library's own nested scope (``checkpointed-fwd``)
    graph = jaxviz.trace(jax.grad(lambda y0: solve(y0).sum()), jnp.ones(2)).graph
    scopes = [g for g in graph.groups if g.name == "outer-loop"]
    assert len(scopes) == 2 and "checkpointed-fwd" in {graph.groups[c].name for s in scopes for c in s.groups}
    for scope in scopes:
        assert "RecursiveCheckpointAdjoint.loop" in [graph.groups[a].name for a in graph.ancestors(scope.id)]


def test_a_call_of_jax_nn_is_one_group_however_the_scopes_it_opens_cut_it():
    """``jax.nn`` is JAX's own library, its calls named like any library's:
    ``jax.nn.gelu``, not a line's pieces. ``jax.nn.dot_product_attention`` opens a ``vmap``
    and ``jnp.einsum``'s named scopes inside itself; the name stack puts them outside the
    call, so it was three groups (one per scope). It is one, forward and backward, the
    scopes inside it. A call that runs as JAX's jitted helper is that helper's one group
    (``one_hot``), as is a helper whose code makes the call (``standardize``)."""

    def layer(w, x):
        q = x @ w
        h = jax.nn.gelu(jax.nn.dot_product_attention(q, q, q))
        return jax.nn.standardize(h, axis=-1)

    def loss(w, x, labels):
        return jnp.sum(layer(w, x) * jax.nn.one_hot(labels, 8)[:, :, None, :])

    x, w, labels = jnp.ones((2, 4, 1, 8)), jnp.ones((8, 8)), jnp.zeros((2, 4), jnp.int32)
    graph = jaxviz.trace(jax.grad(loss), w, x, labels).graph
    live = [g for g in graph.groups if g.id == 0 or g.parent is not None]
    for phase in ("forward", "backward"):
        (pass_,) = [g for g in live if g.kind == "phase" and g.name == phase]
        below = [g for g in live if pass_.id in graph.ancestors(g.id)]
        (attention,) = [g for g in below if g.name == "jax.nn.dot_product_attention"]
        einsums = [g for g in below if "->" in g.name]
        assert len(einsums) == 2 and all(attention.id in graph.ancestors(g.id) for g in einsums)
        # its vmap over the heads is one, however the einsums' scopes cut its equations
        assert len([g for g in below if g.name == "vmap" and attention.id in graph.ancestors(g.id)]) == 1
        assert [g.name for g in below if g.name == "jax.nn.gelu"] == ["jax.nn.gelu"]
        assert not [g for g in below if g.name == "jax.nn.standardize"]
    (one_hot,) = [g for g in live if "one_hot" in g.name]
    assert one_hot.name == "one_hot" and one_hot.helper and graph.groups[one_hot.parent].kind != "library"


def test_a_library_call_is_one_group_where_the_framework_s_vmap_holds_a_piece_of_it():
    """Equinox's ``MultiheadAttention`` runs ``equinox.dot_product_attention`` under its
    own ``vmap``, which also holds a transpose of the module's; the einsum's scope inside
    that ``vmap`` held a second piece of the call. It is one call, both einsums in it."""
    eqx = pytest.importorskip("equinox")
    attention = eqx.nn.MultiheadAttention(2, 8, key=jax.random.PRNGKey(0))
    x = jnp.ones((4, 8))
    graph = jaxviz.trace(lambda x: attention(x, x, x), x).graph
    live = [g for g in graph.groups if g.parent is not None]
    (call,) = [g for g in live if g.name == "equinox.dot_product_attention"]
    einsums = [g for g in live if "->" in g.name]
    assert len(einsums) == 2 and all(call.id in graph.ancestors(g.id) for g in einsums), \
        [(g.name, [graph.groups[a].name for a in graph.ancestors(g.id)]) for g in einsums]


def test_a_vmap_inside_a_gradient_is_drawn_in_both_passes():
    """``jax.grad`` of a loss that maps ``predict`` with ``jax.vmap``: the name stack
    reads ``jvp``, then ``vmap``; the ``vmap`` is the user's, inside each pass, not a part
    of how JAX differentiates (it was dropped with the ``jvp``)."""
    def predict(w, x):
        return jnp.tanh(x @ w).sum()

    def loss(w, xs):
        return jnp.mean(jax.vmap(predict, (None, 0))(w, xs))

    graph = jaxviz.trace(jax.grad(loss), jnp.ones((3, 4)), jnp.ones((5, 3))).graph
    for phase in ("forward", "backward"):
        (pass_,) = [g for g in graph.groups if g.kind == "phase" and g.name == phase]
        (vmap,) = [graph.groups[c] for c in pass_.groups]
        assert (vmap.kind, vmap.name) == ("transform", "vmap"), (phase, vmap.name)
        assert [graph.groups[c].name for c in vmap.groups] == ["predict"]


def test_a_vmapped_call_is_one_group_however_a_loop_s_hoisted_equations_interrupt_it():
    """Under ``grad``, JAX hoists a scan body's loop-invariant equations out of the loop
    with the body's own name stack, outside the pass: ``jax.vmap(model)(x)``'s ``vmap``
    was cut into three around them (``vmap › RNN`` three times). It is the ``vmap`` of
    that one call: one group, in each pass. (Imitates Equinox's RNN example.)"""
    eqx = pytest.importorskip("equinox")

    class RNN(eqx.Module):
        cell: eqx.nn.GRUCell
        linear: eqx.nn.Linear

        def __call__(self, xs):
            def step(h, x):
                return self.cell(x, h), None

            h, _ = jax.lax.scan(step, jnp.zeros(self.cell.hidden_size), xs)
            return jax.nn.sigmoid(self.linear(h))

    key_cell, key_linear = jax.random.split(jax.random.PRNGKey(0))
    model = RNN(eqx.nn.GRUCell(2, 8, key=key_cell), eqx.nn.Linear(8, 1, key=key_linear))

    def loss(model, x):
        return jnp.mean(jax.vmap(model)(x))

    graph = jaxviz.trace(eqx.filter_grad(loss), model, jnp.ones((4, 5, 2))).graph
    for phase in ("forward", "backward"):
        (pass_,) = [g for g in graph.groups if g.kind == "phase" and g.name == phase]
        maps = [g for g in graph.groups if g.kind == "transform" and pass_.id in graph.ancestors(g.id)]
        assert [(g.name, [graph.groups[c].name for c in g.groups]) for g in maps] == [("vmap", ["RNN"])], phase


def test_sibling_transformations_are_named_after_the_call_each_maps_not_numbered():
    """Two ``vmap``s of different functions are no repeats of one layer (``vmap 1/2``,
    ``vmap 2/2``): each is named after the function it maps."""
    def encode(x):
        return jnp.tanh(x)

    def decode(x):
        return jnp.sin(x) * 2.0

    def autoencode(xs):
        return jax.vmap(decode)(jax.vmap(encode)(xs) + 1.0)

    graph = jaxviz.trace(autoencode, jnp.ones((4, 3))).graph
    maps = [g.repeat for g in graph.groups if g.kind == "transform" and g.parent is not None]
    assert maps == ["vmap · encode", "vmap · decode"], maps


def test_a_library_class_made_through_its_metaclass_is_named_after_the_class():
    """``dist.Normal(a * x, b)`` runs numpyro's ``DistributionMeta.__call__``: the call is
    the class the user named, ``numpyro.Normal``, not its metaclass."""
    numpyro = pytest.importorskip("numpyro")
    dist = pytest.importorskip("numpyro.distributions")
    log_density = pytest.importorskip("numpyro.infer.util").log_density

    def model(x):
        a = numpyro.sample("a", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(a * x, 1.0), obs=x)

    def log_p(params, x):
        return log_density(model, (x,), {}, params)[0]

    graph = jaxviz.trace(jax.grad(log_p), {"a": 0.5}, jnp.ones(4)).graph
    names = {g.name for g in graph.groups if g.parent is not None}
    assert "numpyro.Normal" in names and not any("Meta" in n for n in names), sorted(names)


def test_a_call_into_jax_s_own_numerical_library_is_a_library_call_around_its_callbacks():
    """``jax.scipy.optimize.minimize`` is a library like any other: one group named after
    it holds its loop and the passes over the loss it differentiates (the user's function
    it calls back), where it was a line (``line N: result = minimize(...)``) with the
    loss's passes beside it."""
    xs = jnp.linspace(-1.0, 1.0, 8).reshape(4, 2)

    def loss(w):
        return jnp.sum((xs @ w - 1.0) ** 2)

    @jax.jit
    def fit(w0):
        return minimize(loss, w0, method="BFGS").x

    graph = jaxviz.trace(fit, jnp.zeros(2)).graph
    calls = [g for g in graph.groups if g.name == "jax.scipy.optimize.minimize"]
    assert len(calls) == 1 and calls[0].parent == 0, [(g.name, g.parent) for g in graph.groups]
    assert graph.groups[0].groups == [calls[0].id]  # nothing of the solver's beside it
    losses = [g for g in graph.groups if g.name == "loss"]
    assert losses and all(calls[0].id in graph.ancestors(g.id) for g in losses)


def test_user_code_a_library_call_runs_is_inside_that_call():
    """blackjax's ``hmc.init`` evaluates the user's log density and its gradient: those
    passes are the library call's work, inside its group, not passes of the user's
    function beside it. An Equinox bound method (``BoundMethod``, optimistix's solver
    steps) only passes the call on: not a call of its own."""
    blackjax = pytest.importorskip("blackjax")

    def logdensity(x):
        return -0.5 * jnp.sum(x ** 2)

    graph = jaxviz.trace(jax.jit(lambda x: blackjax.hmc.init(x, logdensity).logdensity_grad), jnp.ones(3)).graph
    top = [graph.groups[g] for g in graph.groups[0].groups]
    assert [g.kind for g in top] == ["library"], [(g.name, g.kind) for g in top]
    assert {graph.groups[g].kind for g in top[0].groups} == {"phase"}

    solved = jaxviz.trace(jax.jit(lambda a: optx.root_find(lambda y, a: jnp.tanh(y + a) - y, optx.Newton(1e-6, 1e-6),
                                                           jnp.zeros(2), a).value), jnp.ones(2)).graph
    names = {g.name for g in solved.groups}
    assert "BoundMethod" not in names and "ImplicitAdjoint.apply" in names, sorted(names)


def test_user_code_a_library_runs_in_a_loop_body_is_inside_the_calls_that_ran_it():
    """NUTS evaluates the model inside the while loop of its leapfrog steps, whose body
    JAX traces apart: the model's traceback ends in numpyro's loop body, no user frame
    beyond it. The library calls between that body and the model (``potential_energy``
    › ``log_density`` › ...) still hold it, in both passes, as they hold the model where
    the user calls ``log_density`` directly."""
    numpyro = pytest.importorskip("numpyro")
    dist = pytest.importorskip("numpyro.distributions")
    nuts = pytest.importorskip("numpyro.infer").NUTS

    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(jnp.zeros(3), 1.0))
        numpyro.sample("y", dist.Normal(x @ w, 1.0), obs=y)

    x, y = jnp.ones((5, 3)), jnp.ones(5)
    kernel = nuts(regression, max_tree_depth=2)
    state = kernel.init(jax.random.PRNGKey(0), 5, None, (x,), {"y": y})
    graph = jaxviz.trace(jax.jit(lambda s: kernel.sample(s, (x,), {"y": y})), state).graph
    models = [g for g in graph.groups if g.name == "regression"]
    assert models, sorted({g.name for g in graph.groups})
    for model in models:
        around = [graph.groups[a].name for a in graph.ancestors(model.id)]
        assert "numpyro.potential_energy" in around and "numpyro.log_density" in around, around


def test_a_solver_called_in_the_update_keeps_its_calls():
    """An optimizer's inner calls (``chain`` › ``scale_by_adam``) give way to its
    transformations; a solver the update calls (a diffusion model sampling with the new
    parameters) is no optimizer: it keeps its calls, drawn as it is drawn anywhere else,
    and the user's vector field stays inside the solver's loop."""
    diffrax = pytest.importorskip("diffrax")
    optax = pytest.importorskip("optax")
    optimizer = optax.adam(1e-2)

    def drift(t, y, w):
        return -w * y

    def step(w, opt_state):
        grads = jax.grad(lambda w: jnp.sum(w ** 2))(w)
        updates, opt_state = optimizer.update(grads, opt_state)
        w = optax.apply_updates(w, updates)
        sample = diffrax.diffeqsolve(diffrax.ODETerm(drift), diffrax.Tsit5(), 0.0, 1.0, 0.1, jnp.ones(2), args=w)
        return w, opt_state, sample.ys

    w = jnp.ones(2)
    graph = jaxviz.trace(jax.jit(step), w, optimizer.init(w)).graph
    (solve,) = [g for g in graph.groups if g.name == "diffrax.diffeqsolve"]
    assert any(g.name == "update" and g.kind == "phase" for g in map(graph.groups.__getitem__, graph.ancestors(solve.id)))
    inner = {graph.groups[d].name for d in graph.descendants(solve.id) if graph.groups[d].kind == "library"}
    assert len(inner) > 1, inner  # diffeqsolve's own calls, not dissolved into the update
    (field,) = {g.id for g in graph.groups if g.name == "drift"}
    assert "body_jaxpr" in [graph.groups[a].name for a in graph.ancestors(field)]


def test_a_closure_a_library_function_made_is_named_after_that_function():
    """``optax.value_and_grad_from_state(f)`` returns a private closure; the user's call of
    it is a group named after the function that made it, holding ``f``'s passes, not a
    line of the user's."""
    def rosenbrock(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)

    value_and_grad = optax.value_and_grad_from_state(rosenbrock)
    opt = optax.lbfgs()

    @jax.jit
    def step(params, state):
        return value_and_grad(params, state=state)

    params = jnp.zeros(3)
    graph = jaxviz.trace(step, params, opt.init(params)).graph
    made = [g for g in graph.groups if g.name == "optax.value_and_grad_from_state"]
    assert len(made) == 1, sorted(g.name for g in graph.groups)
    assert not [g.name for g in graph.groups if g.kind == "line"]
    losses = [g for g in graph.groups if g.name == "rosenbrock"]
    assert all(made[0].id in graph.ancestors(g.id) for g in losses)


def test_jax_s_own_combinator_layers_are_calls_each_its_own():
    """JAX's MNIST example builds its model with ``stax.serial(Dense(...), Relu, ...)``:
    each layer is a closure ``stax`` made, all called from one line of ``serial``'s loop.
    Each is a group named after its factory, one per layer, in order, where the model
    was one line of the user's (``preds = predict(params, inputs)``)."""
    stax = pytest.importorskip("jax.example_libraries.stax")
    init, predict = stax.serial(stax.Dense(8), stax.Relu, stax.Dense(8), stax.Relu, stax.Dense(2))
    _, params = init(jax.random.PRNGKey(0), (-1, 4))
    graph = jaxviz.trace(jax.jit(lambda p, x: predict(p, x)), params, jnp.ones((3, 4))).graph
    serial = [g for g in graph.groups if g.name == "stax.serial"]
    assert len(serial) == 1, sorted(g.name for g in graph.groups)
    layers = [graph.groups[c].name for c in serial[0].groups]
    assert layers == ["stax.Dense", "stax.elementwise"] * 2 + ["stax.Dense"], layers


def test_a_transformation_wrapped_by_a_library_factory_is_named_after_the_call():
    """``optax.inject_hyperparams(optax.adam)`` runs Adam inside the factory's
    ``wrapped_transform``: the user's ``optimizer.update`` is one group named after it,
    and Adam's own transformation is named inside it."""
    optimizer = optax.inject_hyperparams(optax.adam)(learning_rate=0.1)
    params = {"w": jnp.zeros((3, 1)), "b": jnp.zeros(1)}

    @jax.jit
    def step(params, opt_state, x):
        grads = jax.grad(lambda p: jnp.sum(x @ p["w"] + p["b"]))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    graph = jaxviz.trace(step, params, optimizer.init(params), jnp.ones((2, 3))).graph
    names = {g.name: g for g in graph.groups}
    assert "optax.inject_hyperparams.update" in names, sorted(names)
    assert "wrapped_transform" not in names
    assert graph.groups[names["scale_by_adam"].parent].name == "optax.inject_hyperparams.update"
