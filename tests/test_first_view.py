"""The first view tells the program's story, on programs written in each library's style:
it fits about two screens as ``dot`` lays it out (legend included) and shows the model's
repeated layers folded; chains of single groups open through, titled by their path; rows
of like leaves fold into one box; library calls are groups named after the library
function; loops are named after the function they run, with their trip count."""

from __future__ import annotations

import re
import shutil
import sys
from typing import NamedTuple
from xml.etree import ElementTree

import equinox as eqx
import haiku as hk
import jax
import jax.numpy as jnp
import mctx
import numpyro
import numpyro.distributions as dist
import optax
import pytest
from flax import nnx
from numpyro.infer import NUTS
from views import rows_problem

import jaxviz
from benchmarks import models, programs
from jaxviz.graph import AUTO_WIDTH_PT, MIME_TYPE
from jaxviz.render import dot as dot_renderer
from jaxviz.render.dot import first_view_svg, program_dot, render_svg, svg_items, svg_size_pt
from jaxviz.render.notebook import program_mimebundles

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="needs Graphviz")
MAX_PT = 3000  # about two screens, each way
PIECE = re.compile(r"\b\d+/\d+\b")  # "line 36: … 3/6": a line cut into pieces
SVG = "{http://www.w3.org/2000/svg}"


def laid_out_size(program) -> tuple[float, float]:
    """(width, height) in pt of the first view as ``dot`` lays it out, legend included
    (fitted to dot's layout, as the notebook shows it)."""
    return svg_size_pt(first_view_svg(program))


def first_view_boxes(program) -> list[str]:
    """The titles of what the first view shows: its closed boxes and open groups."""
    graph = program.graph
    expanded = graph.expansion("auto")
    shown = [c for g in expanded for c in graph.groups[g].groups] + [g for g in expanded if g]
    return [graph.groups[c].repeat or graph.groups[c].name for c in shown]


def assert_no_pieces(program) -> None:
    labels = [g.name for g in program.graph.groups if g.kind == "line"]
    labels += [g.repeat for g in program.graph.groups
               if g.kind == "line" and g.repeat and program.graph.groups[g.parent].kind != "repeat"]
    assert not [t for t in labels if PIECE.search(t)], labels


# ---------------------------------------------------------------------- rule 1 and 2
@needs_dot
def test_transformer_train_step_opens_through_to_its_folded_blocks():
    """Our own 12-block transformer (benchmarks/models.py): the first view shows
    ``block ×12`` in the forward pass, through the ``forward › loss_fn`` chain."""
    program = jaxviz.trace(models.train_step, models.init_params(12), models.tokens())
    width, height = laid_out_size(program)
    assert width <= MAX_PT and height <= MAX_PT, (width, height)
    assert first_view_boxes(program).count("block ×12") >= 1, first_view_boxes(program)
    source = program_dot(program).source
    assert "forward › loss_fn (" in source  # the chain is one cluster, titled by its path


class HaikuBlock(hk.Module):
    """Imitates Haiku's examples/transformer/model.py (pre-LN blocks of attention + MLP)."""

    def __call__(self, x):
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        x = x + hk.MultiHeadAttention(num_heads=2, key_size=8, w_init=hk.initializers.VarianceScaling())(h, h, h)
        h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
        return x + hk.nets.MLP([32, 16])(h)


def haiku_forward(tokens):
    x = hk.Embed(vocab_size=32, embed_dim=16)(tokens)
    for _ in range(6):
        x = HaikuBlock()(x)
    return hk.Linear(32)(x)


@needs_dot
def test_haiku_transformer_train_step_shows_its_blocks_folded():
    """A Haiku transformer's train step in the style of Haiku's examples/transformer
    (hk.transform, optax.adam, value_and_grad of the loss)."""
    model = hk.without_apply_rng(hk.transform(haiku_forward))
    tokens = jnp.zeros((2, 8), jnp.int32)
    params = model.init(jax.random.PRNGKey(0), tokens)
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(params)

    def loss_fn(params, tokens):
        logits = model.apply(params, tokens)
        return optax.softmax_cross_entropy_with_integer_labels(logits[:, :-1], tokens[:, 1:]).mean()

    def update(params, opt_state, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    program = jaxviz.trace(update, params, opt_state, tokens)
    width, height = laid_out_size(program)
    assert width <= MAX_PT and height <= MAX_PT, (width, height)
    assert any(re.fullmatch(r"haiku_block\S* ×6", t) for t in first_view_boxes(program)), \
        first_view_boxes(program)
    assert_no_pieces(program)


# ---------------------------------------------------------------------- rule 3
class AttentionBlock(eqx.Module):
    """Imitates the Equinox ViT example
    (https://docs.kidger.site/equinox/examples/vision_transformer/): static dropout rates."""

    norm: eqx.nn.LayerNorm
    linear: eqx.nn.Linear
    dropout1: eqx.nn.Dropout
    dropout2: eqx.nn.Dropout

    def __init__(self, dim, key):
        self.norm = eqx.nn.LayerNorm(dim)
        self.linear = eqx.nn.Linear(dim, dim, key=key)
        self.dropout1 = eqx.nn.Dropout(0.1)
        self.dropout2 = eqx.nn.Dropout(0.1)

    def __call__(self, x, key):
        k1, k2 = jax.random.split(key)
        h = self.dropout1(jax.vmap(self.norm)(x), key=k1)
        return x + self.dropout2(jax.vmap(self.linear)(h), key=k2)


class ViT(eqx.Module):
    blocks: list[AttentionBlock]
    head: eqx.nn.Linear

    def __init__(self, key):
        keys = jax.random.split(key, 7)
        self.blocks = [AttentionBlock(16, k) for k in keys[:6]]
        self.head = eqx.nn.Linear(16, 4, key=keys[6])

    def __call__(self, x, key):
        for block, k in zip(self.blocks, jax.random.split(key, len(self.blocks))):
            x = block(x, k)
        return jax.vmap(self.head)(x).mean(0)


@needs_dot
def test_equinox_statics_fold_into_one_box_by_key_path():
    """The ViT's static fields (each dropout's ``p``, ``inference``…) are one box, opening
    by key path, not a row of nodes setting the view's width."""
    model = ViT(jax.random.PRNGKey(0))
    optimizer = optax.adam(1e-3)
    opt_state = optimizer.init(eqx.filter(model, eqx.is_array))

    @eqx.filter_jit
    def step(model, opt_state, x, y, key):
        def loss(model):
            return ((model(x, key) - y) ** 2).mean()

        value, grads = eqx.filter_value_and_grad(loss)(model)
        updates, opt_state = optimizer.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        return eqx.apply_updates(model, updates), opt_state, value

    program = jaxviz.trace(step, model, opt_state, jnp.ones((5, 16)), jnp.ones(4), jax.random.PRNGKey(1))
    graph = program.graph
    statics = [g for g in graph.groups if g.kind == "inputs" and re.fullmatch(r"model statics \(\d+\)", g.name)]
    assert statics, [g.name for g in graph.groups if g.kind == "inputs"]
    root_statics = [n for n in graph.groups[0].nodes if graph.nodes[n].input_kind == "static"]
    assert len(root_statics) < 4, [graph.nodes[n].label for n in root_statics]
    inside = [graph.groups[c].name for c in statics[0].groups]  # opens by key path
    assert any(name.startswith("model.blocks") for name in inside), inside
    width, height = laid_out_size(program)
    assert width <= MAX_PT and height <= MAX_PT, (width, height)


LEARNING_RATE, MOMENTUM, WEIGHT_DECAY, CLIP, WARMUP = 3e-4, 0.9, 1e-4, 1.0, 0.1
EPS, BETA1, BETA2, SCALE, SHIFT = 1e-8, 0.9, 0.999, 2.0, 0.5


def hyper_step(w, g):
    """Ten captured Python constants, as hand-written optimizers in scripts have them."""
    g = jnp.clip(g, -CLIP, CLIP) * SCALE + SHIFT * WARMUP
    m = BETA1 * g + (1 - BETA2) * g * g
    return w * (1 - WEIGHT_DECAY) - LEARNING_RATE * m / (jnp.sqrt(m * m) + EPS) * MOMENTUM


class Metrics(NamedTuple):
    loss: jax.Array
    acc: jax.Array
    grad_norm: jax.Array
    param_norm: jax.Array
    lr: jax.Array
    entropy: jax.Array
    kl: jax.Array
    value_loss: jax.Array
    policy_loss: jax.Array
    clip_frac: jax.Array
    explained_var: jax.Array
    step: jax.Array


def metrics_step(x):
    """Twelve named results, as an RL update returns its metrics."""
    return Metrics(*(jnp.sum(x * k) for k in range(12)))


def test_captured_constants_and_many_outputs_fold():
    program = jaxviz.trace(hyper_step, jnp.ones(3), jnp.ones(3))
    names = [g.name for g in program.graph.groups if g.kind == "inputs"]
    assert "captured (10)" in names, names
    program = jaxviz.trace(metrics_step, jnp.ones(3))
    names = [g.name for g in program.graph.groups if g.kind == "outputs"]
    assert "out (12 arrays)" in names, names


# ---------------------------------------------------------------------- rule 4
def numpyro_model(x, y=None):
    """Imitates numpyro's examples/baseball.py-style regression, sampled step by step."""
    w = numpyro.sample("w", dist.Normal(jnp.zeros(8), 1.0))
    b = numpyro.sample("b", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Normal(x @ w + b, 1.0), obs=y)


def test_numpyro_sample_step_is_one_library_call_not_pieces_of_a_line():
    x, y = jnp.ones((20, 8)), jnp.ones(20)
    sampler = NUTS(numpyro_model)
    state = sampler.init(jax.random.PRNGKey(0), 10, model_args=(x, y))

    def step(state):
        return sampler.sample(state, (x, y), {})

    program = jaxviz.trace(step, state)
    graph = program.graph
    top = [graph.groups[c] for c in graph.groups[0].groups if graph.groups[c].kind not in ("inputs", "outputs")]
    # named after the object called (a NUTS), not the class defining sample (HMC)
    assert [(g.kind, g.name) for g in top] == [("library", "NUTS.sample")]
    names = {g.name for g in graph.groups if g.kind == "library"}
    assert {"numpyro.build_tree", "numpyro.hmc.sample_kernel"} <= names, names  # one level at a time
    assert_no_pieces(program)
    loose = [graph.nodes[n] for n in graph.groups[0].nodes if graph.nodes[n].kind in ("input", "const")]
    for kind in ("traced", "static", "captured", "constant"):  # left unfolded: fewer than four of a kind
        assert sum(n.input_kind == kind for n in loose) < 4, [n.label for n in loose]


def test_a_library_function_calling_itself_is_one_call_and_its_kernel_opens():
    # numpyro's momentum_generator dispatches to an implementation of its own name: one
    # call (its pieces were two boxes, "1/2" and "2/2"). Then the sampler's kernel holds
    # 20 loose equations beside four boxes that hold 97% of its equations: structure, not
    # a box of loose equations, so the first view opens it (benchmarks/programs/numpyro_nuts.py).
    case = programs.load("numpyro_nuts")
    program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    graph = program.graph
    names = [g.name for g in graph.groups if g.kind == "library"]
    assert names.count("numpyro.momentum_generator") == 1, names
    opened = {graph.groups[g].name for g in graph.expansion(program.expand)}
    assert {"NUTS.sample", "numpyro.hmc.sample_kernel"} <= opened, opened


def test_a_layer_written_inline_folds_with_its_residual_adds():
    # Haiku's transformer example writes each layer inline in a loop: layer_norm,
    # attention, h = h + attn, layer_norm, dense_block, h = h + dense. The residual adds
    # are the layer's: they fold with it (4 layers here), not trail the fold as a column
    # of eight adds (benchmarks/programs/haiku_transformer.py).
    case = programs.load("haiku_transformer")
    graph = jaxviz.trace(case.fn, *case.args, **case.kwargs).graph
    forward = next(g for g in graph.groups if g.kind == "phase" and g.name.startswith("forward"))
    fold = next(g for g in graph.groups if g.kind == "repeat" and "multi_head_attention" in g.name
                and forward.id in graph.ancestors(g.id))
    assert fold.name.endswith(" ×4"), fold.name
    around = graph.groups[fold.parent]
    assert not [n for n in around.nodes if graph.nodes[n].primitive == "add"], around.name
    layer = graph.groups[fold.groups[0]]
    assert sum(graph.nodes[n].primitive == "add" for n in layer.nodes) == 2


def recurrent_fn(params, rng_key, action, embedding):
    """Imitates mctx's examples/policy_improvement_demo.py (a toy environment model)."""
    # mctx's outputs are chex dataclasses, whose fields pyright does not see
    out = mctx.RecurrentFnOutput(reward=jnp.zeros(2), discount=jnp.ones(2),  # pyright: ignore[reportCallIssue]
                                 prior_logits=jnp.zeros((2, 4)),  # pyright: ignore[reportCallIssue]
                                 value=jnp.zeros(2))  # pyright: ignore[reportCallIssue]
    return out, embedding + 1.0


def test_mctx_search_is_named_after_the_policy():
    def search(rng_key):
        root = mctx.RootFnOutput(prior_logits=jnp.zeros((2, 4)), value=jnp.zeros(2),  # pyright: ignore[reportCallIssue]
                                 embedding=jnp.zeros((2, 3)))  # pyright: ignore[reportCallIssue]
        return mctx.gumbel_muzero_policy(params=(), rng_key=rng_key, root=root, recurrent_fn=recurrent_fn,
                                         num_simulations=8, max_depth=4)

    program = jaxviz.trace(search, jax.random.PRNGKey(0))
    graph = program.graph
    top = [graph.groups[c] for c in graph.groups[0].groups if graph.groups[c].kind not in ("inputs", "outputs")]
    assert [g.name for g in top] == ["mctx.gumbel_muzero_policy"]  # everything it does is inside
    policy = top[0]
    assert "mctx.search" in [graph.groups[c].name for c in policy.groups]
    assert_no_pieces(program)


def test_mctx_s_vmaps_are_one_where_one_and_named_after_the_call_each_maps():
    """mctx maps ``qtransform_completed_by_mix_value`` with one ``vmap``, whose pieces the
    calls inside it cut (four ``vmap k/4`` boxes, as if four repeats); its search maps
    ``simulate``, then ``backward``: two ``vmap``s, each named after the call it maps."""
    def search(rng_key):
        root = mctx.RootFnOutput(prior_logits=jnp.zeros((2, 4)), value=jnp.zeros(2),  # pyright: ignore[reportCallIssue]
                                 embedding=jnp.zeros((2, 3)))  # pyright: ignore[reportCallIssue]
        return mctx.gumbel_muzero_policy(params=(), rng_key=rng_key, root=root, recurrent_fn=recurrent_fn,
                                         num_simulations=8, max_depth=4)

    graph = jaxviz.trace(search, jax.random.PRNGKey(0)).graph
    live = [g for g in graph.groups if g.parent is not None]
    policy = next(g for g in live if g.name == "mctx.gumbel_muzero_policy")
    (qtransform,) = [graph.groups[c] for c in policy.groups
                     if graph.groups[c].name == "mctx.qtransform_completed_by_mix_value"]
    assert [graph.groups[c].name for c in qtransform.groups] == ["vmap"], qtransform.groups
    body = next(g for g in live if g.name == "mctx.search.body_fun")
    maps = [graph.groups[c].repeat for c in body.groups if graph.groups[c].kind == "transform"]
    assert maps == ["vmap · mctx.simulate", "vmap · mctx.backward"], maps


def test_optax_update_outside_a_gradient_is_named_after_the_transformation():
    optimizer = optax.adam(1e-3)
    params = {"w": jnp.ones((3, 3)), "b": jnp.zeros(3)}

    def apply(grads, opt_state, params):
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    program = jaxviz.trace(apply, params, optimizer.init(params), params)
    names = [g.name for g in program.graph.groups if g.kind == "library"]
    assert "optax.scale_by_adam.update" in names and "optax.apply_updates" in names, names
    # the call the user made: ``update`` of what ``optax.adam(...)`` returned (optax's chain)
    assert "optax.adam.update" in names and "optax.chain.update" not in names, names


class Trainer:
    """Holds its optimizer as an attribute, as flax's examples/mnist keeps
    ``tx = optax.sgd(...)`` (https://github.com/google/flax/tree/main/examples/mnist)."""

    def __init__(self) -> None:
        self.tx = optax.adamw(1e-3, weight_decay=1e-2)

    def train_step(self, params, opt_state, x):
        grads = jax.grad(lambda p: jnp.sum(jnp.tanh(x @ p["w"] + p["b"]) ** 2))(params)
        updates, opt_state = self.tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state


def test_library_call_is_named_after_the_function_that_made_the_value_called():
    trainer = Trainer()
    params = {"w": jnp.ones((4, 3)), "b": jnp.zeros(3)}
    program = jaxviz.trace(jax.jit(trainer.train_step), params, trainer.tx.init(params), jnp.ones((2, 4)))
    graph = program.graph
    update = next(g for g in graph.groups if g.kind == "phase" and g.name == "update")
    made = {graph.groups[c].name: graph.groups[c] for c in update.groups}
    assert "optax.adamw.update" in made, list(made)  # not optax.chain.update, the code that ran
    inside = [graph.groups[c].name for c in made["optax.adamw.update"].groups]
    assert {"scale_by_adam", "add_decayed_weights"} <= set(inside), inside  # its transformations


# ---------------------------------------------------------------------- rule 5
def _update_step(runner_state, _):
    """Imitates PureJaxRL's ppo.py: ``jax.lax.scan(_update_step, runner_state, None,
    config["NUM_UPDATES"])``."""
    w, obs = runner_state
    grad = jax.grad(lambda w: ((obs @ w) ** 2).sum())(w)
    return (w - 0.1 * grad, obs), grad.sum()


def test_scan_is_named_after_its_step_with_its_trip_count():
    def train(w, obs):
        return jax.lax.scan(_update_step, (w, obs), None, 100)

    program = jaxviz.trace(train, jnp.ones((3, 3)), jnp.ones((2, 3)))
    assert "_update_step ×100 (scan)" in first_view_boxes(program), first_view_boxes(program)


def loop_groups(graph, primitive: str) -> list:
    return [g for g in graph.groups if g.holder is not None and g.kind == "eqn"
            and graph.nodes[g.holder].primitive == primitive]


def library_callers(graph, gid: int) -> list[str]:
    names, up = [], graph.groups[gid].parent
    while up is not None:
        if graph.groups[up].kind == "library":
            names.append(graph.groups[up].name)
        up = graph.groups[up].parent
    return names


def test_a_library_s_loop_is_named_after_the_step_it_runs_not_the_frames_it_was_called_from():
    """diffrax's solve is Equinox's ``checkpointed_while_loop`` over diffrax's
    ``body_fun``: every traceback in the body holds the frames the loop was called from
    (``diffeqsolve`` › … › ``checkpointed_while_loop``) and Equinox's wrappers
    (``_body_fun``, ``new_body_fun``) hand the step on: the loop, forward and backward
    (its adjoint runs the step's ``jvp``), is named after diffrax's step."""
    case = programs.load("diffrax_neural_ode")
    graph = jaxviz.trace(case.fn, *case.args, **case.kwargs).graph
    solves = [g for g in loop_groups(graph, "while") if "equinox.checkpointed_while_loop" in library_callers(graph, g.id)
              and not any(graph.nodes[o.holder].primitive == "while" for o in map(graph.groups.__getitem__,
                                                                                  _ancestors(graph, g.id))
                          if o.holder is not None)]
    assert len(solves) == 2, [g.name for g in solves]  # the forward solve and its adjoint
    assert all(g.name == "diffrax.loop.body_fun (while)" for g in solves), [g.name for g in solves]
    for loop in loop_groups(graph, "while"):  # no loop is named after the frame that called it
        assert loop.name.split(" (")[0] != library_callers(graph, loop.id)[0], loop.name


def _ancestors(graph, gid: int) -> list[int]:
    out, up = [], graph.groups[gid].parent
    while up is not None:
        out.append(up)
        up = graph.groups[up].parent
    return out


class DotReluDot(nnx.Module):
    """Imitates Flax's "Scan over layers" guide (nnx.vmap to create, nnx.scan to run)."""

    def __init__(self, dim, rngs):
        self.linear1 = nnx.Linear(dim, dim, rngs=rngs)
        self.linear2 = nnx.Linear(dim, dim, rngs=rngs)

    def __call__(self, x):
        return self.linear2(nnx.relu(self.linear1(x)))


def test_nnx_scan_over_stacked_layers_reads_as_the_layers():
    @nnx.vmap(in_axes=0, out_axes=0)
    def create(key):
        return DotReluDot(8, nnx.Rngs(key))

    layers = create(jax.random.split(jax.random.key(0), 4))

    @nnx.jit
    def forward(layers, x):
        @nnx.scan(in_axes=(nnx.Carry, 0), out_axes=nnx.Carry)
        def run(x, layer):
            return layer(x)

        return run(x, layers)

    program = jaxviz.trace(forward, layers, jnp.ones((2, 8)))
    assert any(t.startswith("DotReluDot ×4 (scan") for t in first_view_boxes(program)), first_view_boxes(program)


# ---------------------------------------------------------------------- rule 6
def mlp_loss(params, x, y):
    for w, b in params:
        x = jnp.tanh(x @ w + b)
    return ((x - y) ** 2).mean()


@jax.jit
def sgd(params, grads):
    return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)


def test_a_jitted_call_is_one_group_not_a_group_around_itself():
    def step(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return sgd(params, grads), loss

    params = [(jnp.ones((4, 4)), jnp.zeros(4)) for _ in range(4)]
    graph = jaxviz.trace(step, params, jnp.ones((2, 4)), jnp.ones((2, 4))).graph
    (call,) = [g for g in graph.groups if g.name == "sgd"]
    assert not [g for g in graph.groups if g.name == "jit: sgd"]
    assert not [c for c in call.groups if graph.groups[c].name == "sgd"]
    assert call.holder is not None and call.holder in call.nodes
    assert graph.nodes[call.holder].label == "jit: sgd"


def test_sgd_update_names_the_parameter_each_equation_updates():
    """The MLP step of demo 01: ``p - lr * g`` per parameter, via tree_map."""
    def step(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads), loss

    params = [(jnp.ones((4, 4)), jnp.zeros(4)) for _ in range(4)]
    graph = jaxviz.trace(step, params, jnp.ones((2, 4)), jnp.ones((2, 4))).graph
    (update,) = [g for g in graph.groups if g.kind == "phase" and g.name == "update"]
    labels = [graph.nodes[n].label for g in graph.descendants(update.id) for n in graph.groups[g].nodes
              if graph.nodes[n].kind == "eqn"]
    assert len(labels) == 16, labels
    assert sorted(labels) == sorted(f"{op} · params[{i}][{j}]" for op in ("mul", "sub")
                                    for i in range(4) for j in range(2)), labels


# ---------------------------------------------------------------------- the first view's choices
def test_a_wrapper_opens_only_with_what_it_wraps():
    """Haiku's ``transformer`` scope only wraps the ``Transformer`` call: it opens with it
    (its fold shows in the forward pass), never alone around a closed box; so does every
    group of single children in the first view."""
    program = programs.load("haiku_transformer")
    traced = jaxviz.trace(program.fn, *program.args, **program.kwargs)
    graph = traced.graph
    expanded = graph.expansion("auto")
    for gid in expanded:
        g = graph.groups[gid]
        if gid and not g.nodes and len(g.groups) == 1:
            child = graph.groups[g.groups[0]]
            assert child.id in expanded or child.kind == "repeat", (g.name, child.name)
    forward = next(g for g in graph.groups if g.kind == "phase" and g.name == "forward")
    folds = [graph.groups[c].name for c in graph.descendants(forward.id)
             if graph.groups[c].kind == "repeat" and graph.groups[c].parent in expanded]
    assert folds and all(re.search(r" ×4$", f) for f in folds), folds


def inner(x):
    for _ in range(4):
        x = jnp.tanh(x @ x.T) + x
    return x


def middle(x):
    return inner(x)


def outer(x):
    return middle(x)


def test_a_chain_is_estimated_as_the_one_cluster_it_is_drawn():
    """``outer › middle › inner`` is one cluster: as tall as ``inner`` alone, one title
    row and one margin, not one per level."""
    deep = jaxviz.trace(outer, jnp.ones((3, 3))).graph
    shallow = jaxviz.trace(inner, jnp.ones((3, 3))).graph
    deep_rows = deep.layout_extent(deep.expansion("all"))[1]
    shallow_rows = shallow.layout_extent(shallow.expansion("all"))[1]
    assert deep_rows - shallow_rows <= 0.5 + 1e-9, (deep_rows, shallow_rows)


@needs_dot
@pytest.mark.parametrize("name", [
    "diffrax_neural_ode", "numpyro_nuts", "haiku_transformer", "nanogpt", "blackjax_nuts_adaptation"])
def test_the_size_estimate_tracks_dot_and_the_first_view_fits(name):
    case = programs.load(name)
    program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    width, height = laid_out_size(program)
    assert width <= MAX_PT and height <= MAX_PT, (width, height)
    estimate = program.graph.layout_extent(program.graph.expansion("auto"))[0]
    assert 0.5 <= width / estimate <= 1.7, (width, estimate)


def test_a_library_s_control_flow_opens_after_the_rest():
    """numpyro's step: numpyro's own ``cond`` (its warmup adapter) and its branches do not
    take the first view's room before the sampler's structure (its kernel's calls)."""
    x, y = jnp.ones((20, 8)), jnp.ones(20)
    sampler = NUTS(numpyro_model)
    state = sampler.init(jax.random.PRNGKey(0), 10, model_args=(x, y))
    graph = jaxviz.trace(lambda state: sampler.sample(state, (x, y), {}), state).graph
    expanded = graph.expansion("auto")
    opened = [graph.groups[g].name for g in expanded if graph.groups[g].kind in ("eqn", "jaxpr")]
    assert not opened, opened
    assert any(graph.groups[g].name == "numpyro.hmc.sample_kernel" for g in expanded)


def test_a_sampler_taking_gradients_in_its_kernel_has_no_train_phases():
    """blackjax's window adaptation takes the log density's gradient at its starting
    point, then runs a kernel that differentiates again at every step: no forward /
    backward / update phases (a train step, as the MLP step's, keeps them); the
    gradient at the starting point is the adaptation's work, inside its call; its
    ``cond`` between a fast and a slow update is named after both."""
    case = programs.load("blackjax_nuts_adaptation")
    graph = jaxviz.trace(case.fn, *case.args, **case.kwargs).graph
    top = [graph.groups[c] for c in graph.groups[0].groups]
    assert not [g.name for g in top if g.kind == "phase"], [g.name for g in top]
    run = next(g for g in top if g.name == "blackjax.window_adaptation.run")
    densities = [g for g in graph.groups if g.name == "logdensity_fn"]
    assert densities and all(run.id in graph.ancestors(g.id) for g in densities)
    # a cond's box names the functions its branches run, though a library wrote them
    conds = [g.name for g in graph.groups if g.name.endswith(")") and "(cond" in g.name]
    assert any("fast_update" in name and "slow_update" in name for name in conds), conds

    def step(params, x, y):
        loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
        return sgd(params, grads), loss

    params = [(jnp.ones((4, 4)), jnp.zeros(4)) for _ in range(2)]
    graph = jaxviz.trace(step, params, jnp.ones((2, 4)), jnp.ones((2, 4))).graph
    assert [graph.groups[c].name for c in graph.groups[0].groups if graph.groups[c].kind == "phase"] \
        == ["forward", "backward", "update"]


def path_below_phase(graph, gid: int) -> tuple[str, tuple[str, ...]] | None:
    """(its phase, the names from below the phase down to the group), or None outside."""
    names = []
    while gid is not None and graph.groups[gid].kind != "phase":
        names.append(graph.groups[gid].name)
        gid = graph.groups[gid].parent
    return None if gid is None else (graph.groups[gid].name, tuple(reversed(names)))


@pytest.mark.parametrize("name", ["nnx_mnist", "equinox_vit", "haiku_transformer"])
@pytest.mark.parametrize("room", [(0.8, 0.8), (1.0, 1.0), (1.4, 1.25)])
def test_a_model_opens_in_the_backward_pass_only_where_it_opens_in_the_forward(name, room):
    """An opening is granted per model, not per pass copy: the backward's ``loss_fn ›
    CNN`` does not open where the forward's stays closed (it would take the room the
    forward could not get, and show the model's structure only backwards)."""
    case = programs.load(name)
    graph = jaxviz.trace(case.fn, *case.args, **case.kwargs).graph
    graph.first_view_room = room
    opened = {found for g in graph.expansion("auto") if (found := path_below_phase(graph, g)) is not None}
    forward = {path for phase, path in (path_below_phase(graph, g.id) or ("", ()) for g in graph.groups)
               if phase == "forward"}
    alone = [path for phase, path in opened if phase != "forward" and path in forward and ("forward", path) not in opened]
    assert not alone, alone


def test_an_argument_and_the_state_written_back_into_it_are_not_numbered_as_layers():
    """``nnx.jit`` writes the model's and the optimizer's new state back: their input
    and output groups share the argument's name, and read ``model (6 arrays)``, not
    ``model (6 arrays) 1/2`` and ``2/2`` (halves of one)."""
    case = programs.load("nnx_ensemble")
    graph = jaxviz.trace(case.fn, *case.args, **case.kwargs).graph
    ends = [g for g in graph.groups if g.kind in ("inputs", "outputs") and g.name.startswith(("model", "optimizer"))]
    assert len(ends) >= 4, [g.name for g in ends]
    assert not [g.repeat for g in ends if g.repeat], [g.repeat for g in ends]


# The first screen at a legible zoom (1 px a pt): what a JupyterLab output shows before
# any scroll or pan, about 1,000 px wide and 700 tall.
FIRST_SCREEN_PT = 700
FIRST_SCREEN_WIDTH_PT = 1000


def text_places_pt(svg: str) -> list[tuple[str, float, float]]:
    """Each text of a Graphviz SVG and where it stands (pt from the drawing's top left)."""
    root = ElementTree.fromstring(svg)
    shift = re.search(r"translate\(([\d.]+) ([\d.]+)\)", next(root.iter(f"{SVG}g")).get("transform", ""))
    dx, dy = (float(shift.group(1)), float(shift.group(2))) if shift else (0.0, 0.0)
    return [(t.text or "", float(t.get("x", "0")) + dx, float(t.get("y", "0")) + dy) for t in root.iter(f"{SVG}text")]


def first_screen_columns(program, svg: str) -> tuple[float, float]:
    """The columns (pt) the first screen shows, as the viewer pans a drawing wider than
    it: to the program's own structure (the root's groups but inputs and outputs),
    centred when it fits, else from its left edge."""
    width = svg_size_pt(svg)[0]
    if width <= FIRST_SCREEN_WIDTH_PT:
        return 0.0, width
    graph, boxes = program.graph, svg_items(svg)
    spans = [boxes[key][0] for c in graph.groups[0].groups if graph.groups[c].kind not in ("inputs", "outputs")
             for key in (f"g{c}", f"cluster_g{c}") if key in boxes]
    left, right = min(b[0] for b in spans), max(b[2] for b in spans)
    if right - left <= FIRST_SCREEN_WIDTH_PT:
        return (left + right - FIRST_SCREEN_WIDTH_PT) / 2, (left + right + FIRST_SCREEN_WIDTH_PT) / 2
    return left, left + FIRST_SCREEN_WIDTH_PT


def folds_on_first_screen(program, svg: str, folds) -> dict[str, list[tuple[float, float]]]:
    """Per fold (``Block ×6``) where its titles stand, if none is on the first screen."""
    lo, hi = first_screen_columns(program, svg)
    places = text_places_pt(svg)
    off = {}
    for layer, count in folds:
        fold = re.compile(rf"{re.escape(layer)}\b.*×\s*{count}\b")
        drawn = [(x, y) for text, x, y in places if fold.search(text)]
        if not any(lo <= x <= hi and y <= FIRST_SCREEN_PT for x, y in drawn):
            off[f"{layer} ×{count}"] = drawn
    return off


@needs_dot
def test_the_first_view_is_fitted_to_the_drawing_a_notebook_shows():
    """``first_view_svg`` fits the first view to the drawing a notebook shows, whose boxes
    carry their costs (every display estimates them first): the view it settles on is the
    one the notebook's payload opens. The associative scan is where the two drawings
    differ: its ``apply_ssm`` fits beside the boxes drawn without their costs only."""
    case = programs.load("associative_scan")
    fitted = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    first_view_svg(fitted)
    shown = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    payload = shown._repr_mimebundle_()[MIME_TYPE]
    names = sorted(fitted.graph.groups[g].name for g in fitted.graph.expansion(fitted.expand))
    assert names == sorted(shown.graph.groups[g].name for g in payload["expanded"])
    assert "apply_ssm" not in names, names


@needs_dot
@pytest.mark.parametrize("name", ["ppo_gymnax", "haiku_transformer", "nanogpt", "equinox_vit"])
def test_the_first_view_shows_its_folds_on_the_first_screen(name):
    """The repeated layers the program states (``_update_step ×3``, ``Transformer ×4``)
    are drawn within the first screen, both ways: what opens above them or before them
    (a network's initialisation, before the training loop) stays closed when it would
    push them off it."""
    case = programs.load(name)
    program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    svg = first_view_svg(program)
    assert not folds_on_first_screen(program, svg, case.folds), svg_size_pt(svg)


def init_layer(key, n_in, n_out):
    w_key, b_key = jax.random.split(key)
    return {"w": jax.random.normal(w_key, (n_in, n_out)) / jnp.sqrt(n_in),
            "b": jax.random.normal(b_key, (n_out,)) * 0.0}


def init_network(key, sizes):
    keys = jax.random.split(key, len(sizes) - 1)
    return [init_layer(k, a, b) for k, a, b in zip(keys, sizes[:-1], sizes[1:])]


def normalise(x):
    mean = x.mean(0)
    std = x.std(0) + 1e-6
    centred = x - mean
    scaled = centred / std
    return jnp.clip(scaled, -5, 5)


HIDDEN_LAYERS = 10


def train(key, x, y):
    """Imitates PureJaxRL's ``train(rng)`` (https://github.com/luchris429/purejaxrl,
    ppo.py): the network initialised inside the jitted function, then the whole training
    loop one ``lax.scan`` over ``_update_step``."""
    params = init_network(key, [8] + [16] * HIDDEN_LAYERS + [1])
    x = normalise(x)
    y = normalise(y)

    def loss_fn(params):
        h = x
        for layer in params[:-1]:
            h = jnp.tanh(h @ layer["w"] + layer["b"])
        out = h @ params[-1]["w"] + params[-1]["b"]
        return jnp.mean((out - y) ** 2)

    def _update_step(params, _):
        loss, grads = jax.value_and_grad(loss_fn)(params)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads)
        return params, loss

    return jax.lax.scan(_update_step, params, None, 20)


@needs_dot
def test_what_pushes_a_fold_off_the_first_screen_stays_closed(monkeypatch):
    """On a small screen (600 x 600 pt, the boxes drawn with their costs: the inputs
    stand a rank above each open group around what they feed, clear of its title), the
    estimate's first view puts both folds off it as dot lays it out (the network's
    initialisation and the inputs' normalising stand before and above them): what
    stands wholly before or above a fold stays closed, the room it leaves given to
    nothing else, and more folds are then on the first screen; none is hidden, the view
    stays within its size, and every later drawing of the first view is this one."""
    screen = (600.0, 600.0)
    monkeypatch.setattr(dot_renderer, "FIRST_SCREEN_PT", screen)
    monkeypatch.setattr(sys.modules[__name__], "FIRST_SCREEN_WIDTH_PT", screen[0])
    monkeypatch.setattr(sys.modules[__name__], "FIRST_SCREEN_PT", screen[1])
    program = jaxviz.trace(train, jax.random.PRNGKey(0), jnp.ones((32, 8)), jnp.ones((32, 1)))
    program.costs()  # drawn as a notebook draws it (and as first_view_svg fits it): boxes with their costs
    folds = [("init_layer", HIDDEN_LAYERS - 1), ("_update_step", 20)]
    dot_renderer.start_first_view(program.graph)
    estimated = dot_renderer.fit_view_size(program, render_svg(program_dot(program)))
    off_before = folds_on_first_screen(program, estimated, folds)
    assert len(off_before) == 2, off_before
    svg = first_view_svg(program)
    off_after = folds_on_first_screen(program, svg, folds)
    assert len(off_after) < len(off_before), off_after
    assert all(re.search(rf"{layer}\b.*×\s*{n}\b", svg) for layer, n in folds)
    assert max(svg_size_pt(svg)) <= dot_renderer.VIEW_FIT_PT
    assert program.graph.first_view_opens is not None
    assert render_svg(program_dot(program)) == svg


@needs_dot
def test_the_first_view_is_fitted_to_dot_s_layout(monkeypatch):
    """Where dot lays the estimated first view out wider or taller than the limit, the
    budget narrows (groups close) until it fits or the tries are spent; the room found
    stays, so every later drawing of the first view is the one measured."""
    program = jaxviz.trace(models.train_step, models.init_params(12), models.tokens())
    roomy = svg_size_pt(first_view_svg(program))
    opened = program.graph.expansion("auto")
    limit = 0.9 * min(roomy)  # over it both ways
    monkeypatch.setattr(dot_renderer, "VIEW_FIT_PT", limit)
    svg = first_view_svg(program)
    (width, height), (roomy_width, roomy_height) = svg_size_pt(svg), roomy
    assert width * height < roomy_width * roomy_height, (svg_size_pt(svg), roomy)
    assert program.graph.expansion("auto") < opened
    assert render_svg(program_dot(program)) == svg


# ---------------------------------------------------------------------- rows of inputs and outputs
def replicated_step(params, batch):
    """Imitates Flax's ImageNet example's ``train_step`` under ``jax.pmap``
    (https://github.com/google/flax/blob/main/examples/imagenet/train.py): a gradient
    averaged over the devices with ``lax.pmean``, the whole program one pmap."""
    def loss_fn(p):
        return jnp.mean((jnp.tanh(batch["x"] @ p["w"]) - batch["y"]) ** 2)

    grads = jax.lax.pmean(jax.grad(loss_fn)(params), axis_name="batch")
    return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)


def collatz_steps(n):
    """A ``lax.while_loop`` whose carry starts from literals (its equation's node feeds
    its body), as in JAX's docs for ``lax.while_loop``."""
    def cond(carry):
        value, _ = carry
        return jnp.any(value > 1)

    def step(carry):
        value, count = carry
        value = jnp.where(value % 2 == 0, value // 2, 3 * value + 1)
        return jnp.where(value > 1, value, 1), count + 1

    return jax.lax.while_loop(cond, step, (n, 0))


def one_loop_programs():
    devices = jax.local_device_count()
    params = {"w": jnp.ones((devices, 4, 2))}
    batch = {"x": jnp.ones((devices, 8, 4)), "y": jnp.ones((devices, 8, 2))}
    return {
        "pmap": jaxviz.trace(jax.pmap(replicated_step, axis_name="batch"), params, batch),
        "while": jaxviz.trace(collatz_steps, jnp.array([7, 12, 27])),
        "corpus while_loop": corpus_program("while_loop"),
        "corpus ppo_gymnax": corpus_program("ppo_gymnax"),
    }


def corpus_program(name):
    case = programs.load(name)
    return jaxviz.trace(case.fn, *case.args, **case.kwargs)


@needs_dot
def test_the_inputs_of_a_program_that_is_one_loop_stand_on_the_top_row():
    """A program that is one loop or one pmap (its equation's node feeding its body and
    taking its results back) reads top to bottom as every other program: its inputs
    above the loop on the top row, its outputs below it on the bottom row, as dot lays
    the first view out."""
    problems = {name: problem for name, program in one_loop_programs().items()
                if (problem := rows_problem(program, first_view_svg(program)))}
    assert not problems, problems


@needs_dot
@pytest.mark.parametrize("name, refitted", [("haiku_lstm", True), ("mctx_gumbel_muzero", False)])
def test_the_payload_is_shown_before_dot_and_kept_where_dot_keeps_the_view(name, refitted):
    """A notebook shows the payload before ``dot`` lays the view out
    (``program_mimebundles``), then the whole bundle: its payload is the one shown
    (the browser keeps its view) unless dot's fit chose another first view (Haiku's
    LSTM: narrowed to fit), and then only the expansion differs."""
    case = programs.load(name)
    program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    first, last = program_mimebundles(program)
    assert "image/svg+xml" not in first and "<svg" in last["image/svg+xml"]
    assert (last[MIME_TYPE] is not first[MIME_TYPE]) == refitted
    assert last[MIME_TYPE]["graph"] is first[MIME_TYPE]["graph"]  # the graph encoded once
    assert last[MIME_TYPE]["expanded"] == sorted(program.graph.expansion(program.expand))
    assert (last[MIME_TYPE]["expanded"] != first[MIME_TYPE]["expanded"]) == refitted


def test_a_call_of_jax_s_own_helper_opens_only_where_a_loop_runs_in_it():
    """``jnp.linspace`` and ``random.normal`` are one operation each to the user: their
    equations are JAX's implementation, not the program's structure, so the first view
    leaves their boxes closed, however much room it has. A helper that runs a loop
    (``lax.scan`` jitted, as blackjax calls it) holds the user's step, and opens."""

    def layer(x, w):
        return jnp.tanh(x @ w + 1.0) * 2.0 - x

    def body(carry, w):
        return layer(carry, w), None

    def step(x, ws, key):
        grid = jnp.linspace(0.0, 1.0, 8)
        noise = jax.random.normal(key, x.shape)
        start = x * grid + noise
        y, _ = jax.jit(jax.lax.scan, static_argnums=0)(body, start, ws)
        return jnp.sum(y)

    program = jaxviz.trace(step, jnp.ones((4, 8)), jnp.ones((5, 8, 8)), jax.random.key(0))
    graph = program.graph
    opened = graph.expansion(program.expand)
    helpers = {g.name: g.id for g in graph.groups if g.helper}
    assert {"linspace", "normal", "scan"} <= helpers.keys(), helpers
    assert helpers["linspace"] not in opened and helpers["normal"] not in opened
    assert helpers["scan"] in opened


def test_one_operation_repeated_is_no_fold_of_layers():
    """Three calls of ``jnp.where`` in a row fold into ``where ×3`` (drawn as one box), but
    that is one operation repeated, not the model's layers: the first view is not
    fitted to bring it on screen. A layer of two operations is a fold."""

    def clamp_thrice(x):
        x = jnp.where(x > 1.0, 1.0, x)
        x = jnp.where(x < -1.0, -1.0, x)
        return jnp.where(jnp.isnan(x), 0.0, x)

    def layer(x, w):
        return jnp.tanh(x @ w)

    def mlp(x, w):
        return layer(layer(layer(x, w), w), w)

    x, w = jnp.ones((2, 3)), jnp.ones((3, 3))
    for fn, args, folded in ((clamp_thrice, (x,), False), (mlp, (x, w), True)):
        graph = jaxviz.trace(fn, *args).graph
        (repeat,) = [g.id for g in graph.groups if g.kind == "repeat"]
        assert graph.is_fold(repeat) == folded, graph.groups[repeat]


@needs_dot
@pytest.mark.parametrize("name", ["scipy_bfgs", "optax_lbfgs"])
def test_an_optimizer_s_loop_is_not_closed_for_a_repeated_helper(name):
    """scipy's BFGS and optax's L-BFGS repeat a helper (``where ×3``,
    ``optax.tree_zeros_like ×3``): not layers, so dot's fit does not close the
    optimizer's ``while`` loop to bring them on the first screen; the view the
    estimate chose is drawn."""
    case = programs.load(name)
    program = jaxviz.trace(case.fn, *case.args, **case.kwargs)
    program.costs()
    dot_renderer.start_first_view(program.graph)
    estimated = program.graph.expansion(program.expand)
    first_view_svg(program)
    shown = program.graph.expansion(program.expand)
    assert shown == estimated
    assert any("while" in program.graph.groups[g].name for g in shown), \
        sorted(program.graph.groups[g].name for g in shown)


def test_one_box_beside_the_arguments_opens_though_they_are_many():
    """A step that is one wide call (36 chains side by side: over the width budget) with
    six arguments: eight items, but one box beside the arguments and the results says
    nothing, so the first view opens it (diffrax's ``diffeqsolve``, called with four
    arrays, was a lone closed box)."""
    def wide(a, b, c, d, e, f):
        return [jnp.sin(x * k) for x in (a, b, c, d, e, f) for k in range(1, 7)]

    def step(a, b, c, d, e, f):
        return wide(a, b, c, d, e, f)

    program = jaxviz.trace(step, *[jnp.ones(3) * i for i in range(6)])
    graph = program.graph
    (call,) = [g for g in graph.groups if g.name == "wide"]
    assert graph.layout_extent({0, call.id})[0] > AUTO_WIDTH_PT  # the greedy choice cannot open it
    assert call.id in graph.expansion(program.expand)


def test_story_window_takes_the_inputs_nearest_the_structure_and_cuts_none():
    """The first screen across (as the viewer pans to it): the structure centred with the
    inputs beside it that fit, nearest first, on the drawing; a window edge that would cut
    an input in half moves by the smaller move that keeps the structure in view."""
    structure, params, y, x = (394, 1085), (4, 104), (122, 222), (240, 340)
    inputs, drawing = [params, y, x], (0, 1097)
    assert dot_renderer.story_window(structure, [], 800, (0, 2000)) == 394 - (800 - 691) / 2
    assert dot_renderer.story_window(structure, [], 800, drawing) == 1097 - 800
    for room, shown in [(1000, [y, x]), (900, [x]), (700, [])]:
        left = dot_renderer.story_window(structure, inputs, room, drawing)
        left = dot_renderer.uncut_window(left, room, inputs, structure)
        whole = [s for s in inputs if left <= s[0] and s[1] <= left + room]
        cut = [s for s in inputs if s[0] < left < s[1] or s[0] < left + room < s[1]]
        assert left <= structure[0] and structure[1] <= left + room, (room, left)
        assert whole == shown and not cut, (room, left, whole, cut)
    assert dot_renderer.uncut_window(337, 1000, [x], structure) == 340  # out past it: 3, not 97
    assert dot_renderer.uncut_window(243, 800, [x], (300, 1040)) == 240  # over it: the other way cuts
    assert dot_renderer.uncut_window(300, 700, [x], (330, 1000)) == 300  # neither keeps the rest


def mix(xs):
    return jnp.tanh(sum(jnp.sin(v) for v in xs))


def thirteen_inputs(a, b, c, d, e, f, g, h, i, j, k, m, n):
    return mix([a, b, c, d, e, f, g, h, i, j, k, m, n]).sum()


@needs_dot
def test_the_first_screen_shows_the_inputs_beside_the_structure_whole():
    """A row of inputs wider than the screen above a narrow structure, as dot lays out
    the first view: the screen the viewer opens on holds the structure and, whole, the
    inputs nearest it, as many as fit with it; it cuts none in half."""
    program = jaxviz.trace(thirteen_inputs, *[jnp.ones(3)] * 13)
    svg = first_view_svg(program)
    items, graph = svg_items(svg), program.graph
    lo, hi = dot_renderer.first_screen_span(graph, items, svg_size_pt(svg)[0])
    (structure,) = [items[f"cluster_g{c}"][0][::2] for c in graph.groups[0].groups if f"cluster_g{c}" in items]
    assert lo <= structure[0] and structure[1] <= hi, (lo, hi, structure)
    inputs = {graph.nodes[n].label: items[f"n{n}"][0][::2] for n in graph.groups[0].nodes
              if graph.nodes[n].kind == "input"}
    assert len(inputs) == 13 and max(r for _, r in inputs.values()) - min(x for x, _ in inputs.values()) > hi - lo
    shown = {name: s for name, s in inputs.items() if lo <= s[0] and s[1] <= hi}
    cut = {name for name, s in inputs.items() if s[0] < lo < s[1] or s[0] < hi < s[1]}
    assert shown and not cut, (lo, hi, inputs)
    left = min(structure[0], *(s[0] for s in shown.values()))
    right = max(structure[1], *(s[1] for s in shown.values()))
    fitting = [name for name, s in inputs.items() if name not in shown and max(right, s[1]) - min(left, s[0]) <= hi - lo]
    assert not fitting, f"{fitting} fit beside the shown inputs {sorted(shown)}, yet are out of view"
