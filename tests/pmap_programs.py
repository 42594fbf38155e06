"""Programs mapped over 8 host devices (``jax.pmap``, ``eqx.filter_pmap``, ``jax.shard_map``),
traced by jaxviz as the user calls them. Run as a script by ``test_faithful.py`` with
``XLA_FLAGS=--xla_force_host_platform_device_count=8``; prints ``RESULT <json>``.

The train step imitates Flax's ImageNet example
(https://github.com/google/flax/blob/main/examples/imagenet/train.py): a ResNet with
BatchNorm synchronised over the ``batch`` axis, ``lax.pmean`` of the gradients and metrics,
``jax.pmap(functools.partial(train_step, ...), axis_name='batch')`` over a replicated state.
"""

import functools
import json
from typing import Any

import equinox as eqx
import flax.jax_utils
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax.training import train_state
from IPython.core.interactiveshell import InteractiveShell
from jax import lax
from jax.sharding import AxisType, PartitionSpec

import jaxviz


class ResNetBlock(nn.Module):
    filters: int

    @nn.compact
    def __call__(self, x, train: bool = True):
        norm = functools.partial(nn.BatchNorm, use_running_average=not train, momentum=0.9, axis_name="batch")
        residual = x
        y = nn.Conv(self.filters, (3, 3))(x)
        y = nn.relu(norm()(y))
        y = nn.Conv(self.filters, (3, 3))(y)
        y = norm(scale_init=nn.initializers.zeros)(y)
        return nn.relu(residual + y)


class ResNet(nn.Module):
    num_classes: int = 10

    @nn.compact
    def __call__(self, x, train: bool = True):
        x = nn.Conv(8, (3, 3))(x)
        x = ResNetBlock(8)(x, train)
        x = ResNetBlock(8)(x, train)
        x = jnp.mean(x, axis=(1, 2))
        return nn.Dense(self.num_classes)(x)


class TrainState(train_state.TrainState):
    batch_stats: dict


def cross_entropy_loss(logits, labels):
    return optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()


def train_step(state, batch, learning_rate):
    def loss_fn(params):
        logits, new_model_state = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, batch["image"],
            mutable=["batch_stats"])
        return cross_entropy_loss(logits, batch["label"]), (new_model_state, logits)

    (loss, (new_model_state, logits)), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    grads = lax.pmean(grads, axis_name="batch")
    metrics = lax.pmean({"loss": loss, "accuracy": jnp.mean(jnp.argmax(logits, -1) == batch["label"])},
                        axis_name="batch")
    state = state.apply_gradients(grads=grads, batch_stats=new_model_state["batch_stats"])
    return state, metrics


def make_state():
    model = ResNet()
    variables = model.init(jax.random.key(0), jnp.ones((1, 8, 8, 3)))
    state = TrainState.create(apply_fn=model.apply, params=variables["params"], tx=optax.sgd(0.1),
                              batch_stats=variables["batch_stats"])
    return flax.jax_utils.replicate(state)


def group_names(program):
    return [g.name for g in program.graph.groups]


def primitives_in(program, group_name):
    """The primitives of the equations anywhere inside the first group so named."""
    graph = program.graph
    top = next(g for g in graph.groups if g.name == group_name)
    todo, prims = [top.id], []
    while todo:
        g = graph.groups[todo.pop()]
        prims += [graph.nodes[n].primitive for n in g.nodes if graph.nodes[n].kind == "eqn"]
        todo += g.groups
    return prims


def leaves_equal(a, b):
    la, lb = jax.tree_util.tree_leaves(a), jax.tree_util.tree_leaves(b)
    return len(la) == len(lb) and all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(la, lb))


def main():
    out: dict[str, Any] = {"devices": jax.local_device_count()}
    state = make_state()
    rng = np.random.default_rng(0)
    batch = {"image": jnp.asarray(rng.normal(size=(8, 2, 8, 8, 3)), jnp.float32),
             "label": jnp.asarray(rng.integers(0, 10, size=(8, 2)))}
    p_train_step = jax.pmap(functools.partial(train_step, learning_rate=0.1), axis_name="batch")
    expected = p_train_step(state, batch)

    program = jaxviz.trace(p_train_step, state, batch)
    out["trace_groups"] = group_names(program)
    out["trace_prims"] = primitives_in(program, "pmap train_step (batch: 8)")
    out["trace_outputs"] = len(program.output_names)
    out["real_outputs"] = len(jax.tree_util.tree_leaves(expected))
    out["jit_of_pmap_groups"] = group_names(jaxviz.trace(jax.jit(p_train_step), state, batch))

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "jaxviz")
    ip.user_ns.update(p_train_step=p_train_step, state=state, batch=batch)
    r = ip.run_cell("%jaxpr --quiet -o line_program p_train_step(state, batch)")
    out["line_error"] = repr(r.error_in_exec)
    out["line_groups"] = group_names(ip.user_ns["line_program"]) if "line_program" in ip.user_ns else []
    r = ip.run_cell("%jaxpr --time --repeat 1 --quiet -o timed p_train_step(state, batch)")
    out["timed_error"] = repr(r.error_in_exec)
    timed = ip.user_ns.get("timed")
    out["timed_results_equal"] = timed is not None and leaves_equal(timed.run_report.result, expected)
    r = ip.run_cell("%%jaxpr --quiet -o cell_program\nnew_state, metrics = p_train_step(state, batch)\n")
    out["cell_error"] = repr(r.error_in_exec)
    out["cell_groups"] = group_names(ip.user_ns["cell_program"]) if "cell_program" in ip.user_ns else []
    out["cell_results_equal"] = leaves_equal((ip.user_ns.get("new_state"), ip.user_ns.get("metrics")), expected)
    out["cell_sharding_equal"] = str(ip.user_ns["metrics"]["loss"].sharding) == str(expected[1]["loss"].sharding)

    # Collectives of every kind, each an equation inside the pmap group.
    def exchange(x):
        gathered = lax.all_gather(x, "i")
        shifted = lax.ppermute(x, "i", perm=[(k, (k + 1) % 8) for k in range(8)])
        return gathered.sum(0) + shifted + lax.psum(x, "i") + lax.pmax(x, "i")

    x = jnp.arange(16.0).reshape(8, 2)
    program = jaxviz.trace(jax.pmap(exchange, axis_name="i"), x)
    out["exchange_groups"] = group_names(program)
    out["exchange_prims"] = primitives_in(program, "pmap exchange (i: 8)")

    # A Python number for static_broadcasted_argnums reaches the pmap as the user passed it;
    # an axis the user did not name is not shown by JAX's internal name.
    def scaled_sum(x, scale):
        return lax.psum(x * scale, "i")

    program = jaxviz.trace(jax.pmap(scaled_sum, axis_name="i", static_broadcasted_argnums=1), x, 3)
    out["static_groups"] = group_names(program)
    out["static_kind"] = program.input("scale").kind
    out["unnamed_groups"] = group_names(jaxviz.trace(jax.pmap(lambda v: v * 2), x))

    # Equinox's pmap: traced by its own rules too.
    model = eqx.nn.Linear(2, 2, key=jax.random.key(1))
    models = eqx.filter_vmap(lambda k: eqx.nn.Linear(2, 2, key=k))(jax.random.split(jax.random.key(1), 8))

    @eqx.filter_pmap(axis_name="d")
    def averaged(model, x):
        return lax.pmean(jax.vmap(model)(x), "d")

    del model
    program = jaxviz.trace(averaged, models, jnp.ones((8, 3, 2)))
    out["eqx_groups"] = group_names(program)

    # shard_map: traced by its own rules; its group says over which mesh axes.
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Auto,) * 2)

    def sharded_matmul(x, w):
        return lax.psum(x @ w, "model")

    smap = jax.shard_map(sharded_matmul, mesh=mesh, in_specs=(PartitionSpec("data", "model"), PartitionSpec("model")),
                         out_specs=PartitionSpec("data"))
    x, w = jnp.ones((8, 4)), jnp.ones((4, 3))
    out["shard_map_groups"] = group_names(jaxviz.trace(smap, x, w))
    out["jit_shard_map_groups"] = group_names(jaxviz.trace(jax.jit(smap), x, w))
    print("RESULT " + json.dumps(out))


if __name__ == "__main__":
    main()
