"""A train step as the user thinks of it: forward, backward and update phases, layers folded
by structure whatever they are called, loop rounds kept apart, and a first view that shows
structure (issue #13, the model side). Real Flax Linen + optax programs, traced for real."""

import importlib
import json
import shutil
import subprocess

import flax.linen as nn
import frameworks
import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
import optax
import pytest
import zoo
from flax.training import train_state
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoDiagonalNormal

import jaxviz
from jaxviz.graph import AUTO_RANKS, common_name
from jaxviz.phases import nodes_below, param_subtree
from jaxviz.render.dot import chain_label, view_to_dot


class Block(nn.Module):
    width: int = 32

    @nn.compact
    def __call__(self, x):
        h = nn.Dense(self.width)(nn.LayerNorm()(x))
        return x + nn.Dense(x.shape[-1])(nn.gelu(h))


class Tower(nn.Module):
    """Four identical blocks named h_0 … h_3 (as GPT ports name them), then a wider one."""

    @nn.compact
    def __call__(self, tokens):
        x = nn.Embed(50, 16)(tokens)
        for i in range(4):
            x = Block(name=f"h_{i}")(x)
        x = Block(width=64, name="h_4")(x)
        return nn.Dense(50)(x)


@pytest.fixture(scope="module")
def tower_step():
    model = Tower()
    tokens = jnp.zeros((2, 8), jnp.int32)
    params = model.init(jax.random.PRNGKey(0), tokens)["params"]
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3))
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=tx)

    @jax.jit
    def train_step(state, tokens):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, tokens)
            return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    return jaxviz.trace(train_step, state, tokens)


def _dot_json(source):
    return json.loads(subprocess.run(["dot", "-Tjson"], input=source, capture_output=True, text=True,
                                     check=True).stdout)


def children(graph, gid, kind=None):
    return [graph.groups[c] for c in graph.groups[gid].groups if kind is None or graph.groups[c].kind == kind]


def find(graph, gid, name):
    """The first group named ``name`` below ``gid`` (breadth first)."""
    todo = [gid]
    while todo:
        g = graph.groups[todo.pop(0)]
        if g.name == name and g.id != gid:
            return g
        todo += g.groups
    raise AssertionError(f"no group {name!r} below {graph.groups[gid].name!r}")


def top_phases(graph):
    """The phase groups of the train step (inside the jitted call, when there is one)."""
    gid = 0
    while not children(graph, gid, "phase"):
        inner = [c for c in children(graph, gid) if c.kind in ("eqn", "call")]
        assert len(inner) == 1, [c.name for c in children(graph, gid)]
        gid = inner[0].id
    return children(graph, gid, "phase")


def test_one_forward_one_backward_one_update(tower_step):
    graph = tower_step.graph
    assert [p.name for p in top_phases(graph)] == ["forward", "backward", "update"]
    assert sum(g.kind == "phase" for g in graph.groups) == 3
    assert graph.eqn_count == len(graph.eqn_nodes())
    forward, backward, update = top_phases(graph)
    assert forward.n_eqns + backward.n_eqns + update.n_eqns >= 0.95 * graph.eqn_count


def test_backward_mirrors_the_forward_layers_in_reverse(tower_step):
    graph = tower_step.graph
    forward, backward, _ = top_phases(graph)
    layer_names = lambda phase: [g.name for g in children(graph, find(graph, phase.id, "Tower").id)]  # noqa: E731
    assert layer_names(forward) == ["Embed_0", "h ×4", "h_4", "Dense_0"]
    assert layer_names(backward) == ["Dense_0", "h_4", "h ×4", "Embed_0"]
    fold = find(graph, backward.id, "h ×4")
    assert [m.name for m in children(graph, fold.id)] == ["h_3", "h_2", "h_1", "h_0"]


def test_layers_fold_by_structure_not_by_name(tower_step):
    graph = tower_step.graph
    folds = [g for g in graph.groups if g.kind == "repeat"]
    assert folds and all(g.name == "h ×4" for g in folds), [g.name for g in folds]
    for fold in folds:  # the wider h_4 is never folded with the others
        assert "h_4" not in [m.name for m in children(graph, fold.id)]
        assert len({graph.groups[m].n_eqns for m in fold.groups}) == 1
    assert common_name(["Dense_0", "Dense_1", "Dense_2"]) == "Dense"
    assert common_name(["blocks[0]", "blocks[1]", "blocks[2]"]) == "blocks"
    assert common_name(["block"] * 3) == "block"
    assert common_name(["encoder", "decoder", "head"]) == "encoder … head"


TREE_LIBRARY = """
import jax, jax.numpy as jnp, optax


@jax.jit  # kept as one equation over the whole tree (optax's own is inlined, but not on every JAX)
def tree_bias_correction(moments, decay, count):
    return jax.tree.map(lambda t: t / (1 - decay ** count).astype(t.dtype), moments)


def scale_by_momentum(decay=0.9):
    def init(params):
        return jax.tree.map(jnp.zeros_like, params), jnp.zeros([], jnp.int32)

    def update(updates, state, params=None):
        mu, count = state
        mu = jax.tree.map(lambda m, g: decay * m + (1 - decay) * g, mu, updates)
        return tree_bias_correction(mu, decay, count + 1), (mu, count + 1)

    return optax.GradientTransformation(init, update)
"""


def test_a_library_s_jit_over_the_whole_tree_passes_each_parameter_through(tmp_path, monkeypatch):
    """A library's jitted function over the whole parameter tree is one equation that
    every leaf flows through: each leaf's value is followed through it, so the
    transformations before it still group by parameter (on JAX 0.11, optax's
    ``tree_bias_correction`` is such an equation)."""
    (tmp_path / "treeopt").mkdir()
    (tmp_path / "treeopt" / "__init__.py").write_text(TREE_LIBRARY)
    (tmp_path / "treeopt-1.0.dist-info").mkdir()  # installed, as ``pip install --target`` leaves it
    (tmp_path / "treeopt-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: treeopt\nVersion: 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    treeopt = importlib.import_module("treeopt")
    model = Tower()
    tokens = jnp.zeros((2, 8), jnp.int32)
    tx = optax.chain(optax.clip_by_global_norm(1.0), treeopt.scale_by_momentum(), optax.scale(-1e-3))
    state = train_state.TrainState.create(apply_fn=model.apply, tx=tx,
                                          params=model.init(jax.random.PRNGKey(0), tokens)["params"])

    @jax.jit
    def train_step(state, tokens):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, tokens)
            return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

        return state.apply_gradients(grads=jax.grad(loss_fn)(state.params))

    graph = jaxviz.trace(train_step, state, tokens).graph
    assert any(n.label == "jit: tree_bias_correction" for n in graph.nodes)  # one equation, kept
    update = top_phases(graph)[2]
    for name in ("clip_by_global_norm", "scale_by_momentum"):  # the second, the library's own
        transformation = find(graph, update.id, name)
        assert {"Embed_0", "h ×4", "h_4", "Dense_0"} <= {g.name for g in children(graph, transformation.id)}
    # The jit's body stays inside its equation, in the transformation that called it, and
    # is grouped by parameter there: nothing of it is left loose in the call the user made.
    body = find(graph, update.id, "jit: tree_bias_correction")
    assert graph.groups[body.parent].name == "scale_by_momentum"
    assert body.n_eqns > 100
    assert {"Embed_0", "h ×4", "h_4", "Dense_0"} <= {g.name for g in children(graph, body.id)}
    made = find(graph, update.id, "TrainState.apply_gradients")
    assert sum(graph.nodes[n].kind == "eqn" for n in made.nodes) <= 2, [graph.nodes[n].label for n in made.nodes]


def test_update_grouped_by_transformation_then_parameter_subtree(tower_step):
    graph = tower_step.graph
    update = top_phases(graph)[2]
    made = children(graph, update.id)  # the call the user made stays, named as called
    assert [g.name for g in made] == ["TrainState.apply_gradients"]
    transforms = [g.name for g in children(graph, made[0].id)]
    assert transforms == ["clip_by_global_norm", "scale_by_adam", "add_decayed_weights", "scale",
                          "apply_updates"]
    for t in children(graph, made[0].id):
        names = {g.name for g in children(graph, t.id)}
        assert {"Embed_0", "h ×4", "h_4", "Dense_0"} <= names, (t.name, names)
    adam = find(graph, update.id, "scale_by_adam")
    assert adam.n_eqns > 5 * sum(graph.nodes[n].kind == "eqn" for n in adam.nodes)  # not one flat box


def test_param_subtree_in_the_user_s_words():
    assert param_subtree("out[0].params['h_0']['Dense_0']['kernel']") == "h_0"
    assert param_subtree("out[0].opt_state[1][0].mu['h_0']['Dense_0']['kernel']") == "h_0"
    assert param_subtree("out[0]['blocks'][3]['qkv']") == "blocks[3]"
    assert param_subtree("out[1][0].mu.blocks[2].mlp.weight") == "blocks[2]"
    assert param_subtree("out[0].head.weight") == "head"
    assert param_subtree("out") is None
    # An optimizer's state named as the input it is: the parameter's subtree, not the state's
    assert param_subtree("opt_state[1][0].mu['h_0']['Dense_0']['kernel']") == "h_0"
    assert param_subtree("opt_state[1][0].mu.blocks[2].mlp.weight") == "blocks[2]"
    assert param_subtree("opt_state[0].count") is None  # a step count: no parameter's
    assert param_subtree("opt_state[1][0].mu[2]['w']") is None  # of a list whose name it does not say
    assert param_subtree("params[1]['w']") == "params[1]"


def test_first_view_shows_the_phases_and_the_model_s_layers(tower_step):
    graph = tower_step.graph
    expanded = graph.expansion("auto")
    n_nodes, n_boxes = graph.view(expanded).visible_counts()
    assert 8 <= n_nodes + n_boxes <= 45
    assert graph.layout_ranks(expanded) <= AUTO_RANKS  # legible without scrolling
    forward, backward, update = top_phases(graph)
    assert forward.id in expanded  # the phases show (open, or as boxes in their order)
    loss_fn = find(graph, forward.id, "loss_fn")
    assert loss_fn.id in expanded  # the model shows in the forward pass, as a box here
    assert {g.name for g in children(graph, loss_fn.id)} >= {"Tower"}
    for g in graph.groups:  # argument leaves and folds never spend the budget
        if g.kind in ("inputs", "outputs", "repeat"):
            assert g.id not in expanded


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_first_view_rows_estimate_the_layout_height(tower_step):
    """``layout_ranks`` (the first view's height budget, in rows) against the height of
    dot.s own layout: about 35 to 80 pt a row, whatever is open."""
    graph = tower_step.graph
    for expand in (graph.expansion("auto"), graph.expansion(1), graph.expansion(2), graph.expansion(3)):
        laid = _dot_json(view_to_dot(graph.view(expand), legend=False).source)
        height = float(laid["bb"].split(",")[3])
        assert 35 <= height / graph.layout_ranks(expand) <= 80, (height, graph.layout_ranks(expand))


def test_forward_mode_alone_is_no_phase():
    program = jaxviz.trace(lambda x: jax.jvp(jnp.sin, (x,), (jnp.ones(3),)), jnp.ones(3))
    assert not [g for g in program.graph.groups if g.kind == "phase"]
    assert [g.name for g in program.graph.groups if g.kind == "transform"] == ["jvp"]


def message_passing(adj, h, w):
    for _ in range(5):
        h = jax.nn.relu(adj @ h @ w) + h
    return h.sum()


def test_loop_rounds_on_one_line_stay_apart():
    program = jaxviz.trace(message_passing, jnp.eye(6), jnp.ones((6, 4)), jnp.ones((4, 4)))
    graph = program.graph
    (fold,) = [g for g in graph.groups if g.kind == "repeat"]
    rounds = children(graph, fold.id)
    assert len(rounds) == 5 and all(r.kind == "line" for r in rounds)
    assert [r.repeat.rsplit(" ", 1)[1] for r in rounds] == [f"{k}/5" for k in range(1, 6)]
    # Each round feeds the next only, not a hub wired to all five.
    view = graph.view([fold.id])
    links = {(e.src[1], e.dst[1]) for e in view.edges if e.src[0] == e.dst[0] == "g"}
    ids = [r.id for r in rounds]
    assert links == set(zip(ids, ids[1:]))


@pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
def test_phases_are_stacked_forward_backward_update():
    """The update's step-count arithmetic reads only inputs; without the phase order it
    floats up beside the forward pass. Laid out by dot, each phase sits below the last."""
    fn, args, kwargs = frameworks.BY_NAME["linen_gpt"].build()
    graph = jaxviz.trace(fn, *args, **kwargs).graph
    source = view_to_dot(graph.view("auto"), legend=False).source
    laid = _dot_json(source)
    boxes = {}
    for o in laid["objects"]:
        if "bb" in o:  # an open group: its cluster
            boxes[o["name"]] = [float(v) for v in o["bb"].split(",")]
        elif "pos" in o:  # a closed one: a box
            x, y = map(float, o["pos"].split(","))
            w, h = float(o["width"]) * 36, float(o["height"]) * 36
            boxes[o["name"]] = [x - w, y - h, x + w, y + h]
    spans = [boxes.get(f"cluster_g{p.id}", boxes.get(f"g{p.id}")) for p in top_phases(graph)]  # y up
    for upper, lower in zip(spans, spans[1:]):
        assert upper[1] > lower[3], (upper, lower)


def checkpointed_loss(params, x):
    def block(x, w):
        return jnp.tanh(x @ w)

    for w in params:
        x = jax.checkpoint(block)(x, w)
    return jnp.sum(x**2)


def test_checkpointed_layers_sit_in_the_backward_pass_once():
    """A remat's backward re-enters the pass's own scopes (JAX records ``loss/…/jvp(loss)/…``):
    they are not nested again, and the remat reads as the user wrote it: ``checkpoint``."""
    params = [jnp.ones((4, 4)) * 0.1 for _ in range(4)]
    program = jaxviz.trace(lambda p, x: jax.grad(checkpointed_loss)(p, x), params, jnp.ones((2, 4)))
    graph = program.graph
    (backward,) = [g for g in graph.groups if g.kind == "phase" and g.name == "backward"]
    (loss,) = children(graph, backward.id)
    assert loss.name == "checkpointed_loss", loss.name
    below = [graph.groups[g] for g in graph.descendants(loss.id) if g != loss.id]
    assert "checkpointed_loss" not in [g.name for g in below]
    remats = [g for g in below if g.kind == "eqn"]
    assert len(remats) == 4 and {g.name for g in remats} == {"block (checkpoint)"}
    for remat in remats:
        names = [c.name for c in children(graph, remat.id)]
        assert names == ["recomputed forward", "block"], names


class SmallCNN(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.avg_pool(nn.relu(nn.Conv(4, (3, 3))(x)), (2, 2), strides=(2, 2))
        return nn.Dense(10)(nn.relu(nn.Dense(16)(x.reshape((x.shape[0], -1)))))


def test_a_model_called_under_grad_in_a_user_function_is_one_group_in_each_pass():
    """Flax's MNIST example differentiates inside its own ``apply_model``: the transpose
    of ``relu``'s custom rule is recorded as ``apply_model / transpose / apply_model /
    jvp / …``, restating the scope around the pass. It belongs in the backward pass's
    ``CNN``, which stays one group, not four cut apart by a stray ``apply_model``."""
    model = SmallCNN()
    images = jnp.ones((2, 8, 8, 1))
    state = train_state.TrainState.create(apply_fn=model.apply, tx=optax.sgd(0.1),
                                          params=model.init(jax.random.PRNGKey(0), images)["params"])

    @jax.jit
    def apply_model(state, images, labels):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, images)
            return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()

        return jax.value_and_grad(loss_fn)(state.params)

    @jax.jit
    def train_step(state, images, labels):
        loss, grads = apply_model(state, images, labels)
        return state.apply_gradients(grads=grads), loss

    graph = jaxviz.trace(train_step, state, images, jnp.zeros((2,), jnp.int32)).graph
    forward, backward = top_phases(graph)[:2]
    for phase in (forward, backward):
        loss_fn = find(graph, phase.id, "loss_fn")
        assert [g.name for g in children(graph, loss_fn.id)].count("SmallCNN") == 1, phase.name
    assert [g.name for g in children(graph, backward.id)] == ["loss_fn"]
    selects = [n for n in nodes_below(graph, find(graph, backward.id, "SmallCNN").id)
               if graph.nodes[n].primitive == "select_n"]
    assert len(selects) == 2  # relu's backward, in the model


class ScannedLSTM(nn.Module):
    """``nn.scan`` over an LSTM cell, as Flax's ``nn.scan`` docs write it."""

    @nn.compact
    def __call__(self, xs):
        lstm = nn.scan(nn.LSTMCell, variable_broadcast="params", split_rngs={"params": False},
                       in_axes=1, out_axes=1)(8)
        carry = lstm.initialize_carry(jax.random.key(0), xs[:, 0].shape)
        return nn.Dense(1)(lstm(carry, xs)[1][:, -1])


@pytest.fixture(scope="module")
def scanned_lstm_grads():
    model = ScannedLSTM()
    xs = jnp.ones((2, 6, 3))
    params = model.init(jax.random.PRNGKey(0), xs)["params"]

    @jax.jit
    def grads(params, xs):
        return jax.grad(lambda p: jnp.mean(model.apply({"params": p}, xs) ** 2))(params)

    return jaxviz.trace(grads, params, xs).graph


def test_a_module_s_one_call_is_one_group_though_jax_interrupts_it(scanned_lstm_grads):
    """Flax's lifted scan hoists the cell's parameter reshapes out of the loop under a name
    stack of their own, between the module's equations: its scope is still one group
    (a module called twice is two, by its calls)."""
    graph = scanned_lstm_grads
    for phase in top_phases(graph)[:2]:
        assert sum(graph.groups[g].name == "ScannedLSTM" for g in graph.descendants(phase.id)) == 1, phase.name


def test_what_one_pass_alone_reads_is_in_that_pass(scanned_lstm_grads):
    """The hoisted reshapes read the parameters but no value being differentiated, so JAX
    records them outside the ``jvp``: they are the model's, drawn inside the forward pass,
    not as a stray ``ScanLSTMCell_0`` beside the phases."""
    graph = scanned_lstm_grads
    forward = top_phases(graph)[0]
    beside = [graph.groups[c] for c in graph.groups[forward.parent].groups]
    assert {g.kind for g in beside} <= {"phase", "inputs", "outputs"}, [(g.name, g.kind) for g in beside]
    reshapes = [n for n in nodes_below(graph, find(graph, forward.id, "ScannedLSTM").id)
                if graph.nodes[n].primitive == "reshape"]
    assert len(reshapes) >= 8


def test_what_a_later_pass_reads_again_is_in_the_forward_pass():
    """Differentiating Haiku's ``dynamic_unroll`` of an LSTM, JAX hoists the loop's
    invariant work out of the loop and the ``jvp``; the forward pass reads it and the
    backward pass reads it again as a residual. It is the forward computation: drawn in
    the forward pass, not as a stray ``deep_rnn`` beside the phases."""
    hk = pytest.importorskip("haiku")

    def unroll(xs):
        core = hk.DeepRNN([hk.LSTM(4), jax.nn.relu, hk.LSTM(4)])
        return hk.dynamic_unroll(core, xs, core.initial_state(2))[0]

    model = hk.transform(unroll)
    xs = jnp.ones((5, 2, 3))
    params = model.init(jax.random.PRNGKey(0), xs)
    graph = jaxviz.trace(jax.jit(jax.grad(lambda p: jnp.sum(model.apply(p, None, xs)))), params).graph
    forward = top_phases(graph)[0]
    beside = [graph.groups[c] for c in graph.groups[forward.parent].groups]
    assert {g.kind for g in beside} <= {"phase", "inputs", "outputs"}, [(g.name, g.kind) for g in beside]


class ScannedBlock(nn.Module):
    @nn.compact
    def __call__(self, x, _):
        return x + nn.Dense(x.shape[-1])(nn.gelu(nn.LayerNorm()(x))), None


class ScannedStack(nn.Module):
    """Layers created stacked and run by ``nn.scan(nn.remat(...), variable_axes={"params":
    0})``, the scan-over-layers pattern of Flax's ``nn.scan`` docs."""

    @nn.compact
    def __call__(self, x):
        stack = nn.scan(nn.remat(ScannedBlock), variable_axes={"params": 0}, split_rngs={"params": True},
                        length=3)
        return nn.Dense(1)(stack(name="blocks")(x, None)[0])


def test_a_backward_loop_is_named_as_its_forward_copy():
    """The transposed scan's body holds only Flax's wrappers (``flax.scan.inner.scanned``);
    it runs the backward of the same layers and reads as the forward's loop."""
    model = ScannedStack()
    x = jnp.ones((2, 8))
    params = model.init(jax.random.PRNGKey(0), x)["params"]

    @jax.jit
    def grads(params, x):
        return jax.grad(lambda p: jnp.sum(model.apply({"params": p}, x)))(params)

    graph = jaxviz.trace(grads, params, x).graph
    loops = {}
    for phase in top_phases(graph)[:2]:
        loops[phase.name] = [graph.groups[g].name for g in graph.descendants(phase.id)
                             if graph.groups[g].kind == "eqn" and "×3" in graph.groups[g].name]
    assert loops["forward"] == ["ScannedBlock ×3 (scan)"], loops
    assert loops["backward"] == ["ScannedBlock ×3 (scan)"], loops


def test_a_gradient_taken_inside_the_differentiated_function_has_passes_of_its_own():
    """MAML differentiates through an inner SGD step: the inner ``grad``'s forward,
    backward and update are passes inside ``inner_update``, within the outer forward
    pass, not one line cut in two (the inner forward's and backward's pieces)."""
    def net(params, x):
        for w, b in params[:-1]:
            x = jnp.tanh(x @ w + b)
        return x @ params[-1][0] + params[-1][1]

    def loss(params, x, y):
        return jnp.mean((net(params, x) - y) ** 2)

    def inner_update(params, x, y):
        grads = jax.grad(loss)(params, x, y)
        return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)

    @jax.jit
    def maml_step(params, x1, y1, x2, y2):
        grads = jax.grad(lambda p: loss(inner_update(p, x1, y1), x2, y2))(params)
        return jax.tree.map(lambda p, g: p - 1e-3 * g, params, grads)

    params = [(jnp.ones((1, 8)), jnp.zeros(8)), (jnp.ones((8, 8)), jnp.zeros(8)), (jnp.ones((8, 1)), jnp.zeros(1))]
    x = jnp.ones((10, 1))
    graph = jaxviz.trace(maml_step, params, x, x, x, x).graph
    outer = top_phases(graph)
    assert [p.name for p in outer] == ["forward", "backward", "update"]
    inner = find(graph, outer[0].id, "inner_update")
    assert [g.name for g in children(graph, inner.id, "phase")] == ["forward", "backward", "update"]
    inner_net = find(graph, inner.id, "net")
    net_lines = [graph.groups[g].name for g in graph.descendants(inner_net.id) if graph.groups[g].kind == "line"]
    assert len(net_lines) == len(set(net_lines)), net_lines  # no line in two pieces


def logistic_model(x, y=None):
    """Imitates numpyro's SVI examples (a Bayesian logistic regression, AutoDiagonalNormal)."""
    w = numpyro.sample("w", dist.Normal(jnp.zeros(x.shape[1]), 1.0).to_event(1))
    with numpyro.plate("data", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ w), obs=y)


def test_a_library_step_that_differentiates_holds_its_passes():
    """``SVI.update`` takes the gradient of the ELBO and applies the optimizer itself: its
    call holds forward, backward and update (it was once beside the passes and again
    inside each), and the first view opens it. Its own equations that prepare what a
    pass reads are in that pass; what it does after the backward pass is its update."""
    x, y = jnp.ones((16, 3)), jnp.ones(16)
    svi = SVI(logistic_model, AutoDiagonalNormal(logistic_model), numpyro.optim.Adam(0.01), Trace_ELBO())
    state = svi.init(jax.random.PRNGKey(0), x, y)

    def svi_step(state):
        return svi.update(state, x, y)

    graph = jaxviz.trace(svi_step, state).graph
    top = [graph.groups[c] for c in graph.groups[0].groups if graph.groups[c].kind not in ("inputs", "outputs")]
    assert [(g.kind, g.name) for g in top] == [("library", "SVI.update")]
    update = top[0]
    assert [(graph.groups[c].kind, graph.groups[c].name) for c in update.groups] == [
        ("phase", "forward"), ("phase", "backward"), ("phase", "update")]
    in_passes = set(nodes_below(graph, update.id)) - set(update.nodes)
    readers: dict[int, set[int]] = {}
    for e in graph.edges:
        readers.setdefault(e.src, set()).add(e.dst)
    only_passes_read = [graph.nodes[n].label for n in update.nodes if readers.get(n, {-1}) <= in_passes]
    assert not only_passes_read
    assert len(update.nodes) <= 5, [graph.nodes[n].label for n in update.nodes]  # its key, split
    assert update.id in graph.expansion("auto")


def burgers_u(params, x, t):
    """A physics-informed network for Burgers' equation (the PINN pattern)."""
    h = jnp.stack([x, t])
    for w, b in params[:-1]:
        h = jnp.tanh(h @ w + b)
    w, b = params[-1]
    return (h @ w + b)[0]


def burgers_residual(params, x, t):
    u_t = jax.grad(burgers_u, argnums=2)(params, x, t)
    u_x = jax.grad(burgers_u, argnums=1)(params, x, t)
    u_xx = jax.grad(jax.grad(burgers_u, argnums=1), argnums=1)(params, x, t)
    return u_t + burgers_u(params, x, t) * u_x - 0.01 * u_xx


def test_derivatives_put_to_another_use_are_no_update():
    """An update applies gradients to what was differentiated (it reads the parameters
    the forward pass reads); a PDE's residual combines derivatives in the inputs and is
    no update. The train step around it has one."""
    tx = optax.adam(1e-3)

    def loss_fn(params, xs, ts):
        return jnp.mean(jax.vmap(burgers_residual, in_axes=(None, 0, 0))(params, xs, ts) ** 2)

    def train_step(params, opt_state, xs, ts):
        grads = jax.grad(loss_fn)(params, xs, ts)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    params = [(jnp.ones((2, 8)) * 0.1, jnp.zeros(8)), (jnp.ones((8, 1)) * 0.1, jnp.zeros(1))]
    graph = jaxviz.trace(train_step, params, tx.init(params), jnp.zeros(4), jnp.zeros(4)).graph
    updates = [g for g in graph.groups if g.kind == "phase" and g.name == "update"]
    assert [graph.groups[g.parent].name for g in updates] == ["train_step"]
    residuals = [g for g in graph.groups if g.name == "burgers_residual"]
    assert residuals and all({"forward", "backward"} <= {graph.groups[c].name for c in g.groups} for g in residuals)


class GanGenerator(nn.Module):
    @nn.compact
    def __call__(self, z):
        return nn.tanh(nn.Dense(16)(nn.relu(nn.Dense(32)(z))))


class GanDiscriminator(nn.Module):
    @nn.compact
    def __call__(self, x):
        return nn.Dense(1)(nn.leaky_relu(nn.Dense(32)(x), 0.2))


def test_two_gradients_taken_in_one_step_are_two_steps():
    """A GAN's step (the community Flax DCGAN pattern) takes the discriminator's gradient
    and applies it, then the generator's: forward, backward and update twice, in that
    order, each pass holding its own loss and named after it (they were one forward
    holding both losses, one backward, one update and the other optimizer loose beside
    them)."""
    gen, disc = GanGenerator(), GanDiscriminator()
    g_opt, d_opt = optax.adam(2e-4, b1=0.5), optax.adam(2e-4, b1=0.5)

    def train_step(g_params, d_params, g_state, d_state, real, z):
        def d_loss_fn(d_params):
            real_logits, fake_logits = disc.apply(d_params, real), disc.apply(d_params, gen.apply(g_params, z))
            return (optax.sigmoid_binary_cross_entropy(real_logits, jnp.ones_like(real_logits)).mean()
                    + optax.sigmoid_binary_cross_entropy(fake_logits, jnp.zeros_like(fake_logits)).mean())

        d_grads = jax.grad(d_loss_fn)(d_params)
        d_updates, d_state = d_opt.update(d_grads, d_state)
        d_params = optax.apply_updates(d_params, d_updates)

        def g_loss_fn(g_params):
            fake_logits = disc.apply(d_params, gen.apply(g_params, z))
            return optax.sigmoid_binary_cross_entropy(fake_logits, jnp.ones_like(fake_logits)).mean()

        g_grads = jax.grad(g_loss_fn)(g_params)
        g_updates, g_state = g_opt.update(g_grads, g_state)
        return optax.apply_updates(g_params, g_updates), d_params, g_state, d_state

    z, real = jnp.ones((4, 8)), jnp.ones((4, 16))
    g_params, d_params = gen.init(jax.random.PRNGKey(0), z), disc.init(jax.random.PRNGKey(1), real)
    graph = jaxviz.trace(train_step, g_params, d_params, g_opt.init(g_params), d_opt.init(d_params), real, z).graph
    top = [graph.groups[c] for c in graph.groups[0].groups if graph.groups[c].kind == "phase"]
    assert [g.name for g in top] == ["forward", "backward", "update"] * 2
    # each step's passes are named after the function it differentiates, not "forward 1/2"
    assert [g.repeat for g in top] == [f"{p} · {f}" for f in ("d_loss_fn", "g_loss_fn")
                                       for p in ("forward", "backward", "update")]
    assert [graph.groups[c].name for g in top[:2] for c in g.groups] == ["d_loss_fn"] * 2
    assert [graph.groups[c].name for g in top[3:5] for c in g.groups] == ["g_loss_fn"] * 2
    loose = [graph.groups[c].name for c in graph.groups[0].groups if graph.groups[c].kind == "library"]
    assert not loose, loose  # each optimizer's update is in its step's


def test_a_pass_opened_through_its_one_call_names_the_call_once():
    """A pass of one of two differentiations is told apart by its loss (``forward ·
    d_loss_fn``); opened with the loss's call it wraps, the two are one cluster, titled
    ``forward › d_loss_fn``, not ``forward · d_loss_fn › d_loss_fn``. A pass that holds
    no such call (the update) keeps its repeat text."""
    graph = jaxviz.trace(zoo.two_gradients, jnp.eye(4), jnp.eye(4), jnp.ones((2, 4))).graph
    view = graph.view("all")
    titles = [chain_label(graph, view.chain(g.id)).split(" (")[0] for g in graph.groups if g.kind == "phase"]
    assert titles == [f"{p} › {f}" for f in ("d_loss_fn", "g_loss_fn") for p in ("forward", "backward")] \
        + ["update · d_loss_fn", "update · g_loss_fn"], titles


def test_a_module_called_twice_in_a_row_is_two_groups_in_each_pass():
    """A siamese loss calls one Flax module on two inputs, one call after the other (a
    GAN's discriminator on the real and the fake batch): two groups in the forward pass
    and two in the backward, one per call, each as big as one call (they were one
    group holding both). The loss is the traced function, so its own call goes
    unrecorded: its two calls are still one differentiation, one forward and one
    backward (they were a ``jvp`` group, a ``forward`` and two ``backward``)."""
    disc = GanDiscriminator()
    a, b = jnp.ones((4, 16)), jnp.zeros((4, 16))
    params = disc.init(jax.random.PRNGKey(1), a)

    def loss(params):
        left = disc.apply(params, a)
        right = disc.apply(params, b)
        return jnp.mean((left - right) ** 2)

    graph = jaxviz.trace(jax.grad(loss), params).graph
    one_call = jaxviz.trace(lambda p: disc.apply(p, a), params).graph.groups[0].n_eqns
    assert [(g.name, g.kind) for g in children(graph, 0) if g.kind not in ("inputs", "outputs")] == [
        ("forward", "phase"), ("backward", "phase")]
    for phase in top_phases(graph):
        calls = [g for g in map(graph.groups.__getitem__, graph.descendants(phase.id)) if g.name == "GanDiscriminator"]
        assert len(calls) == 2, phase.name
        if phase.name == "forward":
            assert [g.n_eqns for g in calls] == [one_call] * 2


def test_a_jacobian_is_one_group_named_as_the_user_asked_for_it():
    """Newton's method on a logistic regression (the JAX autodiff cookbook's Hessians):
    ``jax.hessian(loss)`` is one group named ``hessian`` holding ``loss``, not JAX's
    composed ``vmap(jvp)(jvp)`` / ``vmap(jvp)(vmap)(transpose)(jvp)`` pieces; the
    gradient beside it keeps its passes (a linear solve's transposed product in the
    update is no second gradient)."""
    def loss(w, x, y):
        logits = x @ w
        return jnp.mean(jax.nn.softplus(logits) - y * logits)

    def newton_step(w, x, y):
        g = jax.grad(loss)(w, x, y)
        hess = jax.hessian(loss)(w, x, y)
        return w - jnp.linalg.solve(hess, g)

    graph = jaxviz.trace(newton_step, jnp.zeros(3), jnp.ones((8, 3)), jnp.ones(8)).graph
    transforms = [g.name for g in graph.groups if g.kind == "transform"]
    assert not [name for name in transforms if "(" in name], transforms
    (hessian,) = [g for g in graph.groups if g.name == "hessian"]
    assert [graph.groups[c].name for c in hessian.groups if graph.groups[c].kind == "call"] == ["loss"]
    assert [p.name for p in top_phases(graph)] == ["forward", "backward", "update"]


def test_a_batched_gradient_is_a_vmap_holding_its_passes():
    """Per-example gradients written as JAX's docs write them,
    ``jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))``: one ``vmap`` holding the forward
    and backward passes of ``loss``, not JAX's ``vmap(jvp)`` and ``vmap(transpose)(jvp)``."""
    def loss(w, x, y):
        return (jnp.tanh(x @ w).sum() - y) ** 2

    def private_step(w, xs, ys):
        grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0))(w, xs, ys)
        norms = jnp.linalg.norm(grads.reshape(grads.shape[0], -1), axis=1)
        return w - 0.1 * (grads / jnp.maximum(1.0, norms)[:, None, None]).mean(0)

    graph = jaxviz.trace(private_step, jnp.ones((3, 2)), jnp.ones((5, 3)), jnp.ones(5)).graph
    (vmap,) = [g for g in graph.groups if g.kind == "transform"]
    assert vmap.name == "vmap" and vmap.parent == 0
    assert [(graph.groups[c].name, [graph.groups[k].name for k in graph.groups[c].groups])
            for c in vmap.groups] == [("forward", ["loss"]), ("backward", ["loss"])]


def scoped_mlp(params, x):
    """An MLP whose author labels each layer with ``jax.named_scope`` (JAX's profiling docs)."""
    for i, (w, b) in enumerate(params):
        with jax.named_scope(f"layer{i}"):
            x = x @ w + b
            if i < len(params) - 1:
                x = jax.nn.gelu(x)
    return x


def test_a_backward_layer_whose_forward_copy_is_folded_stays_closed():
    """The forward pass shows ``layer ×3`` folded; the backward pass's ``layer2``,
    ``layer1``, ``layer0`` (not alike enough to fold) are those layers again: closed as
    their forward copies are (they were opened, each a row of equation boxes)."""
    sizes = [8, 32, 32, 32, 1]
    keys = jax.random.split(jax.random.PRNGKey(0), 4)
    params = [(jax.random.normal(k, (a, b)), jnp.zeros(b)) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]
    graph = jaxviz.trace(jax.grad(lambda p, x: jnp.mean(scoped_mlp(p, x) ** 2)), params, jnp.ones((16, 8))).graph
    forward, backward = top_phases(graph)[:2]
    assert any(graph.groups[c].kind == "repeat" for c in find(graph, forward.id, "scoped_mlp").groups)
    layers = [g for g in children(graph, find(graph, backward.id, "scoped_mlp").id) if g.name.startswith("layer")]
    assert {g.name for g in layers} >= {"layer0", "layer1", "layer2"}
    opened = graph.expansion("auto")
    assert not [g.name for g in layers if g.id in opened]
    assert all(graph.forward_copy(g.id) is not None for g in layers)


def test_a_chain_inside_the_user_s_chain_is_one_call():
    # optax.adam is itself a chain: the user's chain calls it as one of its
    # transformations. One call of chain.update, holding the three transformations (not
    # two "optax.chain.update" boxes side by side, the second adam's), each grouped by
    # parameter (the schedule's step count is none's: no "opt_state[…]" box).
    tx = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(optax.linear_schedule(1e-3, 1e-4, 100)))
    params = {"w": jnp.ones((4, 3)), "b": jnp.zeros(3)}

    def step(params, opt_state, x):
        grads = jax.grad(lambda p: jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    graph = jaxviz.trace(step, params, tx.init(params), jnp.ones((2, 4))).graph
    update = top_phases(graph)[2]
    chains = [g for g in graph.groups if g.name == "optax.chain.update"]
    assert len(chains) == 1 and chains[0].parent == update.id, [(g.id, g.parent) for g in chains]
    transforms = children(graph, chains[0].id)
    assert [g.name for g in transforms] == ["clip_by_global_norm", "scale_by_adam", "scale_by_schedule"]
    subtrees = {g.name for g in graph.groups if g.kind == "scope" and g.parent in [t.id for t in transforms]}
    assert subtrees == {"w", "b"}, subtrees  # the parameters', none named after the optimizer's state
