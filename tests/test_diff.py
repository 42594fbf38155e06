"""jaxviz.diff: two traces of one function matched by structure; what a recompile changed."""

import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import pydot
import pytest
from jax import lax

import jaxviz
from jaxviz.diff import HISTORY, ProgramDiff, anchors
from jaxviz.graph import MIME_TYPE
from jaxviz.render import embed
from jaxviz.text import esc


# ---------------------------------------------------------------------- programs
def branchy(x, use_sin):
    y = jnp.sin(x) if use_sin else jnp.cos(x)
    return (y * 2.0).sum()


def gated(x, positive):
    return lax.cond(positive, lambda v: v * 2.0, lambda v: -v, x).sum()


def predict(w, x):
    h = jnp.tanh(x @ w["hidden"])
    return jax.nn.log_softmax(h @ w["out"], axis=-1)


def xent(w, x, labels):
    logits = predict(w, x)
    return -jnp.take_along_axis(logits, labels[:, None], axis=1).mean()


class MLP(nn.Module):
    widths: tuple[int, ...]

    @nn.compact
    def __call__(self, x):
        for width in self.widths[:-1]:
            x = nn.relu(nn.Dense(width)(x))
        return nn.Dense(self.widths[-1])(x)


def dense(p, x):
    return x @ p["w"] + p["b"]


def block(p, x):
    h = jax.nn.gelu(dense(p["up"], x))
    x = x + dense(p["down"], h)
    return x / jnp.sqrt(1e-5 + (x * x).mean(-1, keepdims=True))


def transformer(params, x):
    for p in params:
        x = block(p, x)
    return x


def train_loss(params, x):
    return (transformer(params, x) ** 2).mean()


def init_blocks(widths, d=16):
    return [{"up": {"w": jnp.full((d, w), 0.01), "b": jnp.zeros(w)},
             "down": {"w": jnp.full((w, d), 0.01), "b": jnp.zeros(d)}} for w in widths]


@pytest.fixture(scope="module")
def mlp_weights():
    return {"hidden": jnp.ones((4, 8)), "out": jnp.ones((8, 3))}


@pytest.fixture(scope="module")
def transformer_diff():
    """A 12-block train step (forward and backward) in which block 6 is twice as wide."""
    x = jnp.ones((4, 16))
    return jaxviz.diff(jax.grad(train_loss), (init_blocks([32] * 12), x),
                       (init_blocks([32] * 5 + [64] + [32] * 6), x))


def dot_nodes(source):
    """{node id: attributes} of a DOT source, clusters included."""
    (graph,) = pydot.graph_from_dot_data(source)
    found = {}

    def walk(g):
        for n in g.get_nodes():
            found[n.get_name().strip('"')] = n.get_attributes()
        for sub in g.get_subgraphs():
            found[sub.get_name().strip('"')] = sub.get_attributes()
            walk(sub)

    walk(graph)
    return found


# ---------------------------------------------------------------------- tests
def test_identical_traces_give_an_empty_diff(mlp_weights):
    x, labels = jnp.ones((5, 4)), jnp.zeros(5, jnp.int32)
    a = jaxviz.trace(xent, mlp_weights, x, labels)
    jnp.ones(3) + 1  # other traces in between renumber JAX's variables
    b = jaxviz.trace(jax.jit(xent), mlp_weights, x, labels)
    d = jaxviz.diff(a, b)
    assert isinstance(d, ProgramDiff)
    assert d.empty and not (d.added or d.removed or d.changed or d.inputs)
    assert d.unchanged == a.eqn_count
    assert "no difference" in d.summary()
    assert d.expand == {0} and not d.marks.status  # nothing to open, nothing coloured


def test_python_branch_on_a_static_flag(capsys):
    x = jnp.linspace(0.0, 1.0, 6)
    d = jaxviz.diff(branchy, (x, True), (x, False), static_argnums=1)
    assert [c.label for c in d.equations("removed")] == ["sin"]
    assert [c.label for c in d.equations("added")] == ["cos"]
    assert not d.equations("changed")  # the mul and the sum after the branch are the same
    assert d.unchanged == 2
    assert [str(i) for i in d.inputs] == ["use_sin: static True → static False"]
    dot = d.to_dot()
    nodes = dot_nodes(dot)
    removed = [a for a in nodes.values() if "jaxviz-removed" in a.get("class", "")]
    added = [a for a in nodes.values() if "jaxviz-added" in a.get("class", "")]
    assert len(removed) == 1 and "sin" in removed[0]["label"] and "dashed" in removed[0]["style"]
    assert len(added) == 1 and "cos" in added[0]["label"]
    assert {"legend_added", "legend_removed"} <= nodes.keys()


def test_lax_cond_on_a_flipped_static_flag():
    x = jnp.ones(3)
    d = jaxviz.diff(gated, (x, True), (x, False), static_argnums=1)
    # The predicate is a literal: the same cond, taking the other branch.
    (change,) = d.equations("changed")
    assert change.label == "cond" and change.kinds == ("literals",)
    assert change.details == ("literals 1 → 0",)  # the branch index
    assert not d.equations("added") and not d.equations("removed")
    assert not d.shape_only


def test_lax_cond_whose_branch_a_static_flag_rewrites():
    def step(x, scale_up):
        up = (lambda v: v * 3.0 + 1.0) if scale_up else (lambda v: v * 3.0)
        return lax.cond(x.sum() > 0, up, jnp.negative, x)

    x = jnp.ones(4)
    d = jaxviz.diff(step, (x, True), (x, False), static_argnums=1)
    (removed,) = d.equations("removed")
    assert removed.label == "add" and "branch 1" in removed.path  # inside the true branch
    assert not d.equations("added")
    # named after the function its branches run: ``negative (cond)``
    cond = next(g for g in d.graph.groups if g.kind == "eqn" and g.name.endswith("(cond)"))
    assert d.marks.status[("g", cond.id)] == "changed" and cond.id in d.expand


def test_batch_size_change_is_a_change_in_shape_only(mlp_weights):
    a = jaxviz.trace(xent, mlp_weights, jnp.ones((8, 4)), jnp.zeros(8, jnp.int32))
    b = jaxviz.trace(xent, mlp_weights, jnp.ones((16, 4)), jnp.zeros(16, jnp.int32))
    d = jaxviz.diff(a, b)
    eqn_changes = d.equations("changed")
    assert eqn_changes and not d.added and not d.removed
    assert d.shape_only and all(c.kinds == ("shape",) for c in d.changed)
    assert d.dims == {8: {16}}
    # The mean's divisor (a literal 8.0 → 16.0) and broadcast shapes count as shape too.
    assert any("literals" in detail for c in eqn_changes for detail in c.details)
    assert "every change is a shape change (8 → 16)" in d.summary()
    assert {str(i) for i in d.inputs} == {"x: traced f32[8,4] → traced f32[16,4] (axis 0: 8 → 16)",
                                         "labels: traced i32[8] → traced i32[16] (axis 0: 8 → 16)"}
    # The weights' matmul output is per example: changed; nothing is "100 % different".
    assert len(eqn_changes) < a.eqn_count


def test_a_layer_added_to_a_flax_model():
    x = jnp.ones((2, 4))
    small, big = MLP((8, 3)), MLP((8, 8, 3))
    params_small = small.init(jax.random.key(0), x)
    params_big = big.init(jax.random.key(0), x)
    a = jaxviz.trace(small.apply, params_small, x)
    b = jaxviz.trace(big.apply, params_big, x)
    d = jaxviz.diff(a, b)
    added_paths = {c.path for c in d.equations("added")}
    assert any("Dense_2" in p for p in added_paths)
    assert not any("Dense_0" in p for p in added_paths)
    new_group = next(g for g in d.graph.groups if g.name == "Dense_2")
    assert d.marks.status[("g", new_group.id)] == "added"
    # Dense_1 was the output layer (8 → 3) and is now a hidden one (8 → 8): changed.
    assert any("Dense_1" in c.path for c in d.equations("changed"))
    assert any(i.name.endswith("['Dense_2']['kernel']") and i.status == "added" for i in d.inputs)


def test_twelve_block_transformer_opens_only_the_changed_block(transformer_diff):
    d = transformer_diff
    assert d.a.eqn_count == d.b.eqn_count > 700
    assert d.shape_only and d.dims == {32: {64}}
    groups = d.graph.groups
    opened_blocks = {groups[g].repeat for g in d.expand if groups[g].name == "block"}
    assert opened_blocks == {"block 6/12"}  # in the forward and the backward pass
    changed_paths = {c.path.split(" > ")[2] for c in d.equations("changed")}
    assert changed_paths == {"block 6/12"}
    # The other blocks stay collapsed, folded into "block ×N" boxes, uncoloured.
    folds = [g for g in groups if g.kind == "repeat"]
    assert folds and all(("g", g.id) not in d.marks.status for g in folds)
    assert not any(g.id in d.expand for g in folds)
    nodes = dot_nodes(d.to_dot())
    changed_clusters = [k for k, a in nodes.items() if k.startswith("cluster_g")
                        and "jaxviz-changed" in a.get("class", "")]
    assert changed_clusters  # opened groups outlined as changed
    assert any("×" in a.get("label", "") for a in nodes.values())


def test_view_of_a_change_everywhere_stays_within_budget():
    x = jnp.ones((4, 16))
    d = jaxviz.diff(jax.grad(train_loss), (init_blocks([32] * 12), x),
                    (init_blocks([32] * 12), jnp.ones((8, 16))))
    assert d.shape_only and d.dims == {4: {8}}
    n_nodes, n_groups = d.graph.view(d.expand).visible_counts()
    assert n_nodes + n_groups <= 150 and len(d.expand) > 1
    groups = d.graph.groups
    folds = [g for g in groups if g.kind == "repeat" and g.id in d.expand]
    assert folds  # the 12 blocks, all changed alike: the fold opens, one block in it
    for fold in folds:
        assert sum(m in d.expand for m in fold.groups) == 1


def test_fn_form_and_bad_input():
    with pytest.raises(TypeError, match="two jaxviz.Program"):
        jaxviz.diff(jaxviz.trace(jnp.sin, jnp.ones(2)), jnp.ones(2))
    with pytest.raises(TypeError, match="a function and two tuples"):
        jaxviz.diff(3, (1,), (2,))
    d = jaxviz.diff(jnp.sin, jnp.ones(2), jax.ShapeDtypeStruct((3,), jnp.float32))
    assert d.shape_only and d.dims == {2: {3}}


def test_recompile_diff_of_the_last_recompile(capsys):
    @jax.jit
    def normalise(x):
        return (x - x.mean()) / x.std()

    HISTORY.clear()
    with jaxviz.watch():
        normalise(jnp.ones(8))
        normalise(jnp.ones(8))  # a cache hit: not a compile
        normalise(jnp.ones(12))
    (first, second) = HISTORY.records("normalise")
    assert (first.count, second.count) == (1, 2)
    assert isinstance(second.args[0], jax.ShapeDtypeStruct)  # no array kept
    d = jaxviz.recompile_diff("normalise")
    assert d.shape_only and d.dims == {8: {12}}
    assert d.b.name == "normalise #2"
    with pytest.raises(LookupError, match="no earlier compile"):
        jaxviz.recompile_diff("normalise", 1)
    with pytest.raises(LookupError, match="no compile of 'nowhere'"):
        jaxviz.recompile_diff("nowhere")


def test_history_keeps_no_function_alive():
    import gc
    import weakref

    def make(big):
        return jax.jit(lambda x: x @ big)

    HISTORY.clear()
    fn = make(jnp.ones((64, 64)))
    with jaxviz.watch():
        fn(jnp.ones((2, 64)))
        fn(jnp.ones((3, 64)))
    (_, record) = HISTORY.records("<lambda>")
    alive = weakref.ref(record.fun())
    del fn
    gc.collect()
    assert alive() is None
    with pytest.raises(LookupError, match="no longer exists"):
        jaxviz.recompile_diff("<lambda>")


def test_history_is_bounded():
    @jax.jit
    def grow(x):
        return x * 2

    HISTORY.clear()
    with jaxviz.watch():
        for n in range(1, 7):
            grow(jnp.ones(n))
    records = HISTORY.records("grow")
    assert [r.count for r in records] == [4, 5, 6]  # the last KEEP compiles


def test_jaxviz_diff_magic(capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "jaxviz")
    try:
        result = shell.run_cell("import jax, jax.numpy as jnp\n"
                                "@jax.jit\ndef scale(x, k):\n    return x * k\n"
                                "scale(jnp.ones(3), 2.0); scale(jnp.ones(5), 2.0)\n")
        assert result.error_in_exec is None
        shell.run_line_magic("jaxviz", "diff scale")
        out = capsys.readouterr().out
        assert "scale #1 → scale #2" in out and "every change is a shape change (3 → 5)" in out
        shell.run_line_magic("jaxviz", "diff unknown_fn")
        assert "no compile of 'unknown_fn'" in capsys.readouterr().out
    finally:
        shell.run_line_magic("unload_ext", "jaxviz")


def test_every_recompile_in_the_compile_log_offers_its_diff():
    """The compile log (notebook HTML and text) gives each recompile the command that
    shows what it changed in the program, and that command works as written."""
    @jax.jit
    def scale(x):
        return x * 2.0

    HISTORY.clear()
    with jaxviz.watch() as log:
        scale(jnp.ones(4))
        scale(jnp.ones(6))
    snapshot = log.view("scale")
    text, page = str(snapshot), snapshot._repr_html_()
    assert "%jaxviz diff scale 2" in text and "%jaxviz diff scale 2" in page
    assert "%jaxviz diff scale 1" not in text  # a first compile has nothing to diff against
    name, count = "%jaxviz diff scale 2".split()[2:]
    assert jaxviz.recompile_diff(name, int(count)).shape_only


def test_a_dropped_log_is_freed_though_the_diff_history_remembers_its_compiles():
    """The history keeps what re-traces a compile, not its event: an event holds the
    watches that saw it, and a watch every event it saw."""
    import gc
    import weakref

    @jax.jit
    def grow(x):
        return x * 2

    HISTORY.clear()
    log = jaxviz.watch().start()
    for n in range(1, 6):
        grow(jnp.ones(n))
    log.stop()
    event = log.events[-1]
    dropped = weakref.ref(log)
    del log
    gc.collect()
    assert dropped() is None, [type(r).__name__ for r in gc.get_referrers(dropped())]
    assert [r.count for r in HISTORY.records("grow")] == [3, 4, 5]
    assert jaxviz.recompile_diff("grow").shape_only
    assert event.count == 5  # an event the user kept still reads as it did


def test_a_shape_change_names_its_axis():
    def f(x, w):
        return jnp.tanh(x @ w).sum()

    w = jnp.ones((4, 3))
    d = jaxviz.diff(f, (jnp.ones((32, 4)), w), (jnp.ones((48, 4)), w))
    assert d.shape_only
    assert "x: traced f32[32,4] → traced f32[48,4] (axis 0: 32 → 48)" in d.summary()
    (tanh,) = [c for c in d.changed if c.label == "tanh"]
    assert tanh.details == ("f32[32,3] → f32[48,3] (axis 0: 32 → 48)",)


def test_a_dtype_change_says_so_with_the_casts_it_adds():
    def f(x, w):
        return jnp.tanh(x @ w).sum()  # a bf16 sum accumulates in f32: casts are added

    d = jaxviz.diff(f, (jnp.ones((8, 4)), jnp.ones((4, 3))),
                    (jnp.ones((8, 4), jnp.bfloat16), jnp.ones((4, 3), jnp.bfloat16)))
    assert d.dtype_only and not d.shape_only
    assert "every change is a dtype change (f32 → bf16)" in d.summary()
    (dot,) = [c for c in d.changed if c.label == "dot_general"]
    assert dot.kinds == ("dtype",)  # preferred_element_type=float32 → bfloat16 follows the values


def test_a_literal_of_another_type_is_not_a_shape_change():
    def clip(x):
        return jnp.maximum(x, 0)

    d = jaxviz.diff(clip, (jnp.ones(3),), (jnp.ones(3, jnp.int32),))
    (op,) = [c for c in d.changed if c.label == "max"]
    assert "literals 0.0 → 0" in op.details and "shape" not in op.kinds
    assert not d.shape_only and "every change is a dtype change (f32 → i32)" in d.summary()
    grown = jaxviz.diff(clip, (jnp.ones(3),), (jnp.ones(4, jnp.int32),))
    (op,) = [c for c in grown.changed if c.label == "max"]
    assert set(op.kinds) == {"shape", "dtype"}, op  # 0.0 → 0 is the literal's dtype, not a size


def test_a_diff_in_a_notebook_is_the_interactive_graph_view(monkeypatch):
    """The graph MIME bundle (with the statuses) and the HTML that the standalone viewer
    turns into the interactive view; the drawing coloured by status; without Graphviz,
    the HTML listing."""
    def f(x):
        return jnp.tanh(x).sum()

    d = jaxviz.diff(f, (jnp.ones(3),), (jnp.ones(5),))
    bundle = d._repr_mimebundle_()
    payload = bundle[MIME_TYPE]
    assert payload["schema"] == "jaxviz.program" and payload["graph"]["nodes"]
    assert payload["diff"]["summary"] == d.summary() and "changed" in payload["diff"]["nodes"].values()
    # The graph itself carries the statuses, so the browser's drawing colours them too.
    assert payload["graph"]["marks"]["nodes"] == payload["diff"]["nodes"]
    page = bundle["text/html"]
    if embed.viewer_payload() is not None:  # built with the extension (Node.js at install)
        assert 'class="jaxviz-data"' in page and 'class="jaxviz-static"' in page  # its data
    assert "jaxviz&#45;changed" in bundle["image/svg+xml"] and "<svg" in page
    assert esc(d.summary()) in page
    monkeypatch.setattr(sys.modules["jaxviz.render.diff"], "dot_available", lambda: False)
    plain = d._repr_mimebundle_()
    assert "image/svg+xml" not in plain and "<svg" not in plain["text/html"]
    assert 'class="jaxviz-listing"' in plain["text/html"] or "<table" in plain["text/html"]
    assert plain[MIME_TYPE]["diff"] == payload["diff"]


class NamedBlocks(nn.Module):
    """Blocks and a head, named as in Flax's examples (``name=f"block_{i}"``)."""
    blocks: int

    @nn.compact
    def __call__(self, x):
        for i in range(self.blocks):
            x = nn.relu(nn.Dense(16, name=f"block_{i}")(x))
        return nn.Dense(10, name="head")(x)


def optax_train_step(blocks):
    """A train step as in Flax's MNIST example with an optax optimizer
    (https://github.com/google/flax/blob/main/examples/mnist/train.py)."""
    import optax

    model, tx = NamedBlocks(blocks), optax.sgd(0.1)
    params = model.init(jax.random.PRNGKey(0), jnp.ones((4, 16)))

    def train_step(params, opt_state, x, y):
        def loss(p):
            return ((model.apply(p, x) - y) ** 2).mean()

        grads = jax.grad(loss)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return jaxviz.trace(train_step, params, tx.init(params), jnp.ones((4, 16)), jnp.ones((4, 10)))


def test_a_block_added_to_a_flax_optax_model_pairs_each_update_with_its_parameter():
    """The optimizer's per-leaf equations (``tx.update``'s ``scale``, ``apply_updates``)
    of ``head`` pair with those of ``head``, not with the new block's that took their
    place."""
    d = jaxviz.diff(optax_train_step(1), optax_train_step(2))
    update = [c for c in [*d.changed, *d.added, *d.removed] if c.path.startswith("update")]
    assert {(c.status, c.path, c.label) for c in update} == {
        ("added", "update > optax.sgd.update", "mul"), ("added", "update > optax.apply_updates", "add")}
    assert len(update) == 4  # bias and kernel of block_1, each scaled and applied
    assert not d.changed and not d.removed  # block_0 and head are the same program
    # the inputs gathered in one box in the new trace (6 leaves), not in the old (4)
    assert {c.label for c in d.added if c.node.kind == "input"} == {
        "params['params']['block_1']['bias']", "params['params']['block_1']['kernel']"}
    worked_on = anchors(d.b.graph)  # the input or output each equation works on
    assert all("['block_1']" in worked_on[c.new.id] for c in update), [worked_on[c.new.id] for c in update]
