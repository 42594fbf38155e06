"""jaxviz on the programs users really write: the zoo in ``frameworks.py``, each traced as
the user calls it and compared with the library's own trace and the real call."""

import functools
import json
import sys
from typing import Any

import jax
import jax.extend.core as jcore
import jax.numpy as jnp
import pytest
from frameworks import BY_NAME, INTERNAL_NAMES, ZOO
from IPython.core.interactiveshell import InteractiveShell
from zoo import recursive_eqn_count

import jaxviz
from jaxviz import UnsplittableArgument


def dead_eqn_count(jaxpr) -> int:
    """Equations whose results reach no output of their jaxpr (sub-jaxprs included; an
    equation with effects is live)."""
    live = {v for v in jaxpr.outvars if not isinstance(v, jcore.Literal)}
    dead = 0
    for eqn in reversed(jaxpr.eqns):
        subs = jcore.jaxprs_in_params(eqn.params)
        if eqn.effects or any(v in live for v in eqn.outvars):
            live.update(v for v in eqn.invars if not isinstance(v, jcore.Literal))
            dead += sum(dead_eqn_count(s) for s in subs)
        else:
            dead += 1 + sum(recursive_eqn_count(s) for s in subs)
    return dead


class Traced:
    """One zoo program: built, traced by jaxviz as called, traced by its library, run."""

    def __init__(self, entry):
        self.entry = entry
        self.fn, self.args, self.kwargs = entry.build()
        self.program = jaxviz.trace(self.fn, *self.args, **self.kwargs)
        self.reference = entry.reference(self.fn, self.args, self.kwargs)
        self.real_outputs = entry.real_outputs(self.fn, self.args, self.kwargs)
        graph = self.program.graph
        self.text = self.program.to_dot(expand="all") + json.dumps(graph.to_json())


_traced: dict[str, Traced] = {}


@pytest.fixture(params=ZOO, ids=lambda e: e.name)
def traced(request):
    """Each zoo program traced once for the whole module."""
    entry = request.param
    if entry.name not in _traced:
        _traced[entry.name] = Traced(entry)
    return _traced[entry.name]


def test_zoo_program_runs_as_written(traced):
    """Each zoo program runs for real, and its library traces it."""
    assert traced.real_outputs > 0
    assert isinstance(traced.reference, jcore.ClosedJaxpr) and traced.reference.jaxpr.outvars


def test_every_equation_is_a_node(traced):
    program = traced.program
    assert len(program.graph.eqn_nodes()) == recursive_eqn_count(program.jaxpr.jaxpr) > 0


def test_as_many_outputs_as_the_real_call(traced):
    program = traced.program
    assert len(program.jaxpr.jaxpr.outvars) == traced.real_outputs
    assert sum(n.kind == "output" for n in program.graph.nodes) == traced.real_outputs


def test_no_more_discarded_work_than_the_library_trace(traced):
    assert dead_eqn_count(traced.program.jaxpr.jaxpr) <= dead_eqn_count(traced.reference.jaxpr)


def test_user_names_are_groups(traced):
    program = traced.program
    names = {g.name for g in program.graph.groups}
    assert set(traced.entry.groups) <= names, sorted(names)
    if traced.entry.root:
        assert program.name == program.graph.groups[0].name == traced.entry.root
    captured = {i.name for i in program.inputs if i.kind == "captured"}
    assert set(traced.entry.captured) <= captured
    drawn = {n.label for n in program.graph.nodes if n.kind == "const"}
    assert set(traced.entry.captured) <= drawn  # named, not an anonymous constant


def test_no_internal_names(traced):
    found = [name for name in INTERNAL_NAMES if name in traced.text]
    assert not found


def test_inputs_named_by_the_users_fields():
    names = [i.name for i in _get("equinox_mlp").program.inputs]
    assert "model.layers[1].weight" in names and "opt_state[0].mu.layers[0].bias" in names
    static = {i.name: i for i in _get("equinox_mlp").program.inputs if i.kind == "static"}
    assert {"model.activation", "model.depth"} <= set(static)
    assert "held static, as eqx.filter_jit does: model.activation, model.depth" in _get("equinox_mlp").program.summary()
    nnx_mlp = _get("nnx_mlp")
    assert type(nnx_mlp.args[0].linear1).__name__ == "Linear"
    assert type(nnx_mlp.args[0].linear1).__module__.startswith("flax")  # the user's objects untouched
    assert not [k for k in vars(nnx_mlp.args[0].linear1) if "jaxviz" in k]  # nothing of ours left on it
    names = [i.name for i in nnx_mlp.program.inputs]
    assert "model.linear1.kernel" in names and "optimizer.opt_state[0].mu.linear2.bias" in names
    assert "model.bn.mean" in names  # batch statistics: state nnx.jit propagates
    assert "optimizer.step" in _get("nnx_mlp").program.output_names
    names = [i.name for i in _get("linen_cnn").program.inputs]
    assert "state.params['Dense_0']['kernel']" in names


class Moments:
    """A pytree registered without keys, as some optimizer states are."""

    def __init__(self, mu, nu):
        self.mu, self.nu = mu, nu


jax.tree_util.register_pytree_node(Moments, lambda m: ((m.mu, m.nu), None), lambda _, c: Moments(*c))


def test_keyless_pytree_leaves_named_by_position():
    program = jaxviz.trace(lambda opt_state: Moments(opt_state.mu * 2, opt_state.nu),
                           Moments(jnp.ones(2), jnp.zeros(2)))
    assert [i.name for i in program.inputs] == ["opt_state[0]", "opt_state[1]"]
    assert program.output_names == ["out[0]", "out[1]"]


def _get(name: str) -> Traced:
    if name not in _traced:
        _traced[name] = Traced(BY_NAME[name])
    return _traced[name]


def run_with_jaxviz(cell: str, **namespace: Any) -> dict[str, Any]:
    """Run ``cell`` in IPython with jaxviz loaded, the names given defined; return the
    namespace after it (jaxviz is unloaded again: the shell is shared with other test files)."""
    shell = InteractiveShell.instance()
    shell.user_ns.update(namespace)
    shell.run_cell("%load_ext jaxviz")
    try:
        result = shell.run_cell(cell)
    finally:
        shell.run_cell("%unload_ext jaxviz")
    assert result.error_in_exec is None
    return shell.user_ns


@pytest.mark.parametrize("name", ["equinox_mlp", "nnx_mlp"])
def test_line_magic_traces_as_called(name):
    fn, args, _ = BY_NAME[name].build()
    program = run_with_jaxviz("%jaxpr --quiet -o prog step(*args)", step=fn, args=args)["prog"]
    assert len(program.jaxpr.jaxpr.outvars) == _get(name).real_outputs


def test_cell_magic_splits_a_module_as_filter_jit_does():
    """%%jaxpr: a Module read by the cell has its arrays traced and the rest held static."""
    fn, (model, opt_state, x, y), _ = BY_NAME["equinox_mlp"].build()
    ns = run_with_jaxviz("%%jaxpr --quiet -o prog\nmodel2, opt_state2, loss = train_step(model, opt_state, x, y)\n",
                         train_step=fn, model=model, opt_state=opt_state, x=x, y=y)
    program = ns["prog"]
    kinds = {i.name: i.kind for i in program.inputs}
    assert kinds["model.layers[0].weight"] == "traced" and kinds["model.activation"] == "static"
    assert len(program.jaxpr.jaxpr.outvars) == _get("equinox_mlp").real_outputs
    assert ns["model2"].depth == 2 and ns["loss"].shape == ()


def test_cell_magic_writes_back_nnx_state_as_nnx_jit_does():
    """%%jaxpr on a cell calling an nnx.jit step: the model and optimizer are updated as
    the real call updates them, and their state is among the outputs."""
    from flax import nnx

    fn, (model, optimizer, x, y), _ = BY_NAME["nnx_mlp"].build()
    real_model, real_optimizer = nnx.clone((model, optimizer))
    fn(real_model, real_optimizer, x, y)
    ns = run_with_jaxviz("%%jaxpr --quiet -o prog\nloss = train_step(model, optimizer, x, y)\n",
                         train_step=fn, model=model, optimizer=optimizer, x=x, y=y)
    program = ns["prog"]
    assert "model.linear1.kernel" in [i.name for i in program.inputs]
    assert "optimizer.step" in program.output_names
    assert len(program.jaxpr.jaxpr.outvars) == _get("nnx_mlp").real_outputs
    assert int(optimizer.step[...]) == 1
    for ours, real in zip(jax.tree_util.tree_leaves(nnx.state((model, optimizer))),
                          jax.tree_util.tree_leaves(nnx.state((real_model, real_optimizer)))):
        assert jnp.allclose(ours, real, atol=1e-6)


# ---------------------------------------------------------------------- bad input
def test_unsplittable_argument_is_one_line_naming_it():
    def apply_all(x, layers):
        return [f(x) for f in layers]

    with pytest.raises(UnsplittableArgument) as info:
        jaxviz.trace(apply_all, jnp.ones(2), [jnp.tanh, jnp.sin])
    message = str(info.value)
    assert "\n" not in message and "'layers'" in message and "layers[0]" in message
    assert "static" in message


def test_unsplittable_equinox_field_names_the_field():
    import equinox as eqx

    class Tagged(eqx.Module):
        weight: jax.Array
        tags: set

        def __call__(self, x):
            return self.weight * x

    with pytest.raises(UnsplittableArgument, match=r"Tagged.tags \(set\).*eqx.field\(static=True\)"):
        jaxviz.trace(Tagged(jnp.ones(2), {"a"}), jnp.ones(2))
    program = jaxviz.trace(Tagged(jnp.ones(2), frozenset({"a"})), jnp.ones(2))  # hashable: static
    assert {i.name: i.kind for i in program.inputs} == {"Tagged.weight": "traced", "Tagged.tags": "static",
                                                        "x": "traced"}


# ---------------------------------------------------------------------- wrappers
def test_partial_arguments_are_named_inputs():
    def scale(w, x, *, power):
        return (w * x) ** power

    program = jaxviz.trace(jax.tree_util.Partial(scale, jnp.ones(3), power=2), jnp.ones(3))
    assert [i.name for i in program.inputs if i.kind == "traced"] == ["w", "x", "power"]
    program = jaxviz.trace(functools.partial(jax.jit(scale, static_argnames="power"), power=3),
                           jnp.ones(3), jnp.ones(3))
    assert program.name == "scale" and program.input("power").kind == "static"


def test_decorated_helper_named_after_itself():
    def traced_op(fn):
        @functools.wraps(fn)
        def wrapper(*args):
            return fn(*args) + 0.0

        return wrapper

    @traced_op
    def attention(q, k):
        return jax.nn.softmax(q @ k.T)

    def model(q, k):
        return attention(q, k).sum()

    program = jaxviz.trace(model, jnp.ones((2, 3)), jnp.ones((2, 3)))
    names = {g.name for g in program.graph.groups}
    assert "attention" in names and "wrapper" not in names and "traced_op" not in names


def test_haiku_ties_the_original_function():
    """jaxviz.adapters.haiku names a transformed apply after ``_original_fn``."""
    import haiku as hk

    def forward(x):
        return hk.Linear(2)(x)

    model = hk.transform(forward)
    assert model.apply._original_fn is forward
    params = model.init(jax.random.PRNGKey(0), jnp.ones((1, 3)))
    program = jaxviz.trace(model.apply, params, None, jnp.ones((1, 3)))
    assert program.name == "forward.apply"
    assert "x" in [i.name for i in program.inputs] and "linear" in {g.name for g in program.graph.groups}


def test_adapters_import_no_library():
    """The adapters look only at libraries already imported."""
    import subprocess

    code = ("import sys, jaxviz, jax.numpy as jnp; jaxviz.trace(lambda x: x + 1, jnp.ones(2)); "
            "print(sorted(m for m in ('equinox', 'flax', 'haiku', 'optax', 'diffrax') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------- names and labels
def test_jnp_helpers_are_the_users_call_and_literals_are_values():
    program = jaxviz.trace(lambda x: jnp.clip(jnp.where(x > 0, x, 0) + 1.0, 0.0, 2.0) * 0.1, jnp.ones(3))
    for name in ("where", "clip"):
        groups = [g for g in program.graph.groups if g.name == name]
        assert len(groups) == 1 and groups[0].kind == "call"
    assert not any(g.name.startswith("jit") for g in program.graph.groups)
    text = program.to_dot(expand="all") + json.dumps(program.graph.to_json())
    assert "_where" not in text and "TypedInt" not in text and "TypedNdArray" not in text
    literals = [lit for n in program.graph.eqn_nodes() for lit in n.literals]
    assert "0" in literals and "1.0" in literals and "0.1" in literals


def block(x, s):
    return jax.jit(lambda v, t: v * t + t)(x, s) + s


def test_edge_counts_distinct_values_once_uncapped():
    program = jaxviz.trace(lambda x, s: block(x, s) * 2, jnp.ones(3), jnp.float32(2.0))
    graph = program.graph
    (call,) = [g.id for g in graph.groups if g.name == "block"]
    s_node = next(n.id for n in graph.nodes if n.label == "s")
    view = graph.view(expand=0)  # the call of block is one box
    labels = [e.label for e in view.edges if e.src == ("n", s_node) and e.dst == ("g", call)]
    assert labels == ["f32[]"]  # one scalar, used inside and outside the jit: one value

    arrays = [jnp.ones(2) * i for i in range(100)]
    program = jaxviz.trace(lambda xs: jax.jit(lambda ys: [y + 1 for y in ys])(xs), arrays)
    (jit_group,) = [g.id for g in program.graph.groups if g.kind == "eqn"]
    into = [e.label for e in program.graph.view(expand=0).edges if e.dst == ("g", jit_group)]
    assert into == ["100 values"]  # not capped at 64


# ---------------------------------------------------------------------- combinators, globals
def Dense(width):
    def init_fun(rng, shape):
        return shape[:-1] + (width,), (jax.random.normal(rng, (shape[-1], width)),)

    def apply_fun(params, x):
        return x @ params[0]

    return init_fun, apply_fun


def serial(*layers):
    def init_fun(rng, shape):
        params = []
        for init, _ in layers:
            shape, p = init(rng, shape)
            params.append(p)
        return shape, params

    def apply_fun(params, x):
        for (_, apply), p in zip(layers, params):
            x = apply(p, x)
        return x

    return init_fun, apply_fun


def test_own_combinators_named_after_the_layer():
    init, predict = serial(Dense(4), serial(Dense(3), Dense(2)))
    _, params = init(jax.random.PRNGKey(0), (1, 5))
    program = jaxviz.trace(predict, params, jnp.ones((1, 5)))
    assert program.name == "serial"
    calls = sorted(g.name for g in program.graph.groups if g.kind == "call")
    assert calls == ["Dense", "Dense", "Dense", "serial"]  # the inner serial is a call
    text = program.to_dot(expand="all") + json.dumps(program.graph.to_json())
    assert "apply_fun" not in text


GAIN = jnp.array([1.0, 2.0, 3.0])  # globals read only inside library-called code


def test_globals_reached_through_linen_and_haiku_are_captured():
    import flax.linen as nn
    import haiku as hk

    class Scaled(nn.Module):
        @nn.compact
        def __call__(self, x):
            return nn.Dense(3)(x) * GAIN

    model = Scaled()
    variables = model.init(jax.random.PRNGKey(0), jnp.ones((1, 2)))

    def loss(variables, x):
        return model.apply(variables, x).sum()

    captured = [i.name for i in jaxviz.trace(loss, variables, jnp.ones((1, 2))).inputs if i.kind == "captured"]
    assert "GAIN" in captured

    def forward(x):
        return hk.Linear(3)(x) * GAIN

    transformed = hk.transform(forward)
    params = transformed.init(jax.random.PRNGKey(0), jnp.ones((1, 2)))
    program = jaxviz.trace(jax.jit(transformed.apply), params, None, jnp.ones((1, 2)))
    assert "GAIN" in [i.name for i in program.inputs if i.kind == "captured"]
    assert any(n.label == "GAIN" for n in program.graph.nodes)  # the constant is named


def test_a_library_s_own_traced_function_is_not_named_beside_the_user_s():
    """``eqx.filter_checkpoint(block)`` has JAX trace Equinox's ``fun_checkpoint``, which
    calls the user's ``Block``: the backward box reads ``Block (checkpoint)``, in the style
    of Equinox's docs (https://docs.kidger.site/equinox/api/transformations/#checkpointing)."""
    eqx = pytest.importorskip("equinox")

    class Block(eqx.Module):
        linear: eqx.nn.Linear

        def __call__(self, x):
            return x + jnp.tanh(self.linear(x))

    blocks = [Block(eqx.nn.Linear(8, 8, key=k)) for k in jax.random.split(jax.random.PRNGKey(0), 4)]

    def loss(blocks, x):
        for block in blocks:
            x = eqx.filter_checkpoint(block)(x)
        return x.sum()

    graph = jaxviz.trace(eqx.filter_jit(eqx.filter_grad(loss)), blocks, jnp.ones(8)).graph
    boxes = {g.name for g in graph.groups if g.holder is not None and graph.nodes[g.holder].primitive == "remat2"}
    assert boxes == {"Block (checkpoint)"}, boxes
    assert not [g.name for g in graph.groups if "fun_checkpoint" in g.name]


def test_a_linen_remat_layer_s_box_is_named_after_the_module():
    """``nn.remat(Block)`` has JAX trace Flax's lifting function ``core_fn``: the backward
    boxes read ``Block (checkpoint)`` (Flax's docs, https://flax.readthedocs.io/en/latest/api_reference/flax.linen/transformations.html#flax.linen.remat)."""
    nn = pytest.importorskip("flax.linen")

    class Block(nn.Module):
        @nn.compact
        def __call__(self, x):
            return x + nn.Dense(8)(jnp.tanh(x))

    class Model(nn.Module):
        @nn.compact
        def __call__(self, x):
            for _ in range(3):
                x = nn.remat(Block)()(x)
            return x.sum()

    model = Model()
    params = model.init(jax.random.PRNGKey(0), jnp.ones(8))
    graph = jaxviz.trace(jax.jit(jax.grad(model.apply)), params, jnp.ones(8)).graph
    boxes = {g.name for g in graph.groups if g.holder is not None and graph.nodes[g.holder].primitive == "remat2"}
    assert boxes == {"Block (checkpoint)"}, boxes


def test_a_framework_s_modules_are_their_scopes_not_library_calls_again():
    """Haiku, Flax and Equinox name each module's scope themselves (``mlp / linear_0``,
    ``query``, ``eqx.nn.Linear``); the framework's calls of those modules
    (``run_interceptors``, ``MLP``, ``DenseGeneral``) are how it calls them, not calls of
    their own drawn again inside the scope. What a module runs that is no module of its
    own (Haiku's MLP's ``relu``) is inside the module's scope, beside its layers."""
    eqx, nn, hk = (pytest.importorskip(name) for name in ("equinox", "flax.linen", "haiku"))
    x = jnp.ones((2, 4))
    mlp = hk.without_apply_rng(hk.transform(lambda x: hk.nets.MLP([8, 8, 2])(x)))

    class Attention(nn.Module):
        @nn.compact
        def __call__(self, x):
            q, k = nn.Dense(4, name="query")(x), nn.Dense(4, name="key")(x)
            return jax.nn.softmax(q @ k.T)

    eqx_mlp = eqx.nn.MLP(4, 2, 8, 2, key=jax.random.PRNGKey(0))
    graphs = {
        "haiku": jaxviz.trace(mlp.apply, mlp.init(jax.random.PRNGKey(0), x), x).graph,
        "flax": jaxviz.trace(Attention().apply, Attention().init(jax.random.PRNGKey(0), x), x).graph,
        "equinox": jaxviz.trace(jax.vmap(eqx_mlp), x).graph,
    }
    for framework, graph in graphs.items():
        library = [g.name for g in graph.groups if g.kind == "library"]  # JAX's own calls alone
        assert library == (["jax.nn.softmax"] if framework == "flax" else []), (framework, library)
    haiku = graphs["haiku"]
    scope = next(g for g in haiku.groups if g.name == "mlp")
    assert [haiku.groups[c].name for c in scope.groups] == ["linear_0", "relu", "linear_1", "relu", "linear_2"]


def test_an_optimizer_s_transformations_are_groups_as_the_user_combined_them():
    """optax's ``multi_transform`` docs (Adam for the kernels, SGD for the biases, the
    embedding frozen) with weight decay on the kernels through ``optax.masked``: the
    update reads as the optimizer was written, ``masked › add_decayed_weights`` and
    ``multi_transform › [adam › [scale_by_adam, scale], scale, set_to_zero]``. Adam's
    learning-rate ``scale`` and SGD's are two transformations, two groups each updating
    its own parameters (they were one ``scale`` box holding both, and the combinators
    were gone)."""
    optax = pytest.importorskip("optax")

    def label_fn(params):
        return {"embed": "frozen", "layers": [{"kernel": "adam", "bias": "sgd"} for _ in params["layers"]]}

    def decay_mask(params):
        return jax.tree_util.tree_map_with_path(lambda path, _: path[-1].key == "kernel", params)

    optimizer = optax.chain(
        optax.masked(optax.add_decayed_weights(1e-4), decay_mask),
        optax.multi_transform({"adam": optax.adam(1e-3), "sgd": optax.sgd(1e-2), "frozen": optax.set_to_zero()},
                              label_fn),
    )

    def loss_fn(params, tokens, y):
        x = params["embed"][tokens].mean(axis=1)
        for layer in params["layers"]:
            x = jnp.tanh(x @ layer["kernel"] + layer["bias"])
        return jnp.mean((x - y) ** 2)

    @jax.jit
    def step(params, opt_state, tokens, y):
        grads = jax.grad(loss_fn)(params, tokens, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    sizes = [8, 16, 16, 1]
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = {"embed": jax.random.normal(keys[0], (20, 8)),
              "layers": [{"kernel": jax.random.normal(k, (m, n)), "bias": jnp.zeros(n)}
                         for k, m, n in zip(keys[1:], sizes[:-1], sizes[1:])]}
    graph = jaxviz.trace(step, params, optimizer.init(params), jnp.zeros((4, 5), jnp.int32), jnp.zeros((4, 1))).graph

    def named(name):
        return [g for g in graph.groups if g.name == name]

    def inside(group):
        return [graph.groups[c].name for c in group.groups]

    (chain,) = named("optax.chain.update")
    assert inside(chain) == ["optax.masked", "optax.multi_transform"], inside(chain)
    (masked,) = named("optax.masked")
    assert inside(masked) == ["add_decayed_weights"]
    (split,) = named("optax.multi_transform")
    assert inside(split) == ["adam", "scale", "set_to_zero"], inside(split)
    (adam,) = named("adam")
    assert inside(adam) == ["scale_by_adam", "scale"], inside(adam)

    consumers = {}
    for e in graph.edges:
        consumers.setdefault(e.src, []).append(e.dst)

    def updated(group):  # the parameters its equations' results go into (``kernel``, ``bias``)
        todo = [n for g in graph.descendants(group.id) for n in graph.groups[g].nodes]
        seen = set(todo)
        while todo:
            for n in consumers.get(todo.pop(), ()):
                if n not in seen:
                    seen.add(n)
                    todo.append(n)
        return {graph.nodes[n].label.rpartition("[")[2].strip("]'") for n in seen if graph.nodes[n].kind == "output"}

    scales = named("scale")
    assert len(scales) == 2 and {graph.groups[g.parent].name for g in scales} == {"adam", "optax.multi_transform"}
    assert sorted(updated(g) == {"kernel"} for g in scales) == [False, True]
    assert [updated(g) for g in scales if graph.groups[g.parent].name != "adam"] == [{"bias"}]


# ---------------------------------------------------------------------- NNX layers, untouched
def _group_paths(program) -> list[str]:
    groups = program.graph.groups

    def path(gid):
        names = []
        while gid is not None:
            names.append(groups[gid].name)
            gid = groups[gid].parent
        return "/".join(reversed(names))

    return [path(g.id) for g in groups]


def test_nnx_layers_are_named_after_their_attributes_and_left_as_they_are_while_traced():
    from flax import nnx

    seen = []

    class Net(nnx.Module):
        def __init__(self, rngs):
            self.layers = nnx.List([nnx.Linear(4, 4, rngs=rngs) for _ in range(3)])
            self.head = nnx.Linear(4, 2, rngs=rngs)

        def __call__(self, x):
            # what the user's code (and Flax's, which walks these objects) sees while traced
            seen.append((type(self.head), sorted(vars(self.head))))
            for layer in self.layers:
                x = nnx.relu(layer(x))
            return self.head(x)

    model = Net(nnx.Rngs(0))
    plain_keys = sorted(vars(model.head))
    program = jaxviz.trace(nnx.jit(lambda m, x: m(x)), model, jnp.ones(4))
    assert seen and all(cls is nnx.Linear and keys == plain_keys for cls, keys in seen), seen
    paths = _group_paths(program)
    assert "<lambda>/Net/head" in paths, paths  # ``self.head(x)``: the attribute's name
    # The loop's three calls of one line are three calls, folded as alike, not one group
    assert any(p.endswith("/Linear + relu ×3") for p in paths), paths
    assert sum(p.endswith("/Linear + relu ×3/Linear + relu/Linear") for p in paths) == 3, paths


def test_an_nnx_library_layers_own_layers_are_named_after_their_attributes_and_the_call_is_whole():
    from flax import nnx

    class Tagger(nnx.Module):
        def __init__(self, rngs):
            self.rnn = nnx.RNN(nnx.LSTMCell(3, 8, rngs=rngs))
            self.head = nnx.Linear(8, 1, rngs=rngs)

        def __call__(self, x):
            return self.head(self.rnn(x))

    @nnx.jit
    def step(model, x):
        return nnx.grad(lambda m: m(x).sum())(model)

    program = jaxviz.trace(step, Tagger(nnx.Rngs(0)), jnp.ones((2, 5, 3)))
    groups = program.graph.groups
    forward = next(g for g in groups if g.kind == "phase" and g.name == "forward")
    rnn = [groups[d] for d in program.graph.descendants(forward.id) if groups[d].name.startswith("rnn")]
    assert len(rnn) == 1 and rnn[0].repeat is None, [(g.name, g.repeat) for g in rnn]  # one call, not pieces
    inside = {groups[d].name for d in program.graph.descendants(rnn[0].id)}
    # LSTMCell's own layers (``self.ii(x)`` in Flax's code), not eight calls of ``Linear``
    assert {"ii", "hi", "if_", "ho"} <= inside and "Linear" not in inside, sorted(inside)
    assert not any("ScanFn" in name for name in inside), sorted(inside)  # nnx.scan's wrapper passes the call on
