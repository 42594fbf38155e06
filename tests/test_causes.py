"""Recompile causes, one component of JAX's cache key at a time: the function object
through its wrapper layers, static values by JAX's rules (hash, then ==), pytree
structure, avals (shape, weak type, the type's sharding), the trace context (eager
transformations), placement, and an equal key (the cache was emptied). Each test is a
small program in the style of its library, after the user report cited above it; each
checks the cause's kind and the user's path, and that a before → after never reads the
same on both sides."""

import functools
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import background
import jax
import jax.numpy as jnp
import pytest

import jaxviz
from jaxviz.recompiles import values
from jaxviz.recompiles.causes import Cause

ROOT = Path(__file__).parents[1]


def only(log, name):
    return [e for e in log.events if e.function.name == name]


def last_cause(log, name):
    events = only(log, name)
    assert len(events) >= 2, [e.message() for e in log.events]
    return events[-1].causes[0], events[-1]


def here() -> int:
    """The caller's line number."""
    return sys._getframe(1).f_lineno


def assert_reads_apart(cause):
    """A before → after whose two sides differ in what they say."""
    text = str(cause)
    if "→" in text:
        before, after = text.split("→", 1)
        assert before.rsplit(":", 1)[-1].strip() != after.split(",")[0].strip(), text
    assert "0x" not in text, text


# ====================================================================== function identity
# https://github.com/jax-ml/jax/issues/2515: ``jit(grad(_Likelihood))`` called in each round
def test_jit_of_grad_in_a_loop_blames_what_grad_returned():
    def likelihood(sigma, mu, data):
        return jnp.sum(jnp.log(sigma) + ((data - mu) / sigma) ** 2 / 2)

    data = jnp.linspace(90.0, 110.0, 8)
    with jaxviz.watch() as log:
        for sigma, mu in ((5.0, 100.0), (5.1, 100.1)):
            grad_fn = jax.jit(jax.grad(likelihood))
            line = here() - 1
            grad_fn(sigma, mu, data)
    c, event = last_cause(log, "grad(likelihood)")
    assert (c.kind, c.path, c.detail) == ("new_function_object", "grad_fn", "transform")
    assert "a new `jax.grad(likelihood)`" in str(c)
    assert "`likelihood` itself is the same function" in str(c)
    assert f"test_causes.py:{line}, inside a loop" in str(c)
    assert "outside the loop" in event.suggestion


# https://github.com/google-deepmind/optax/issues/197: ``jax.jit(tx.update)`` per rate
def test_jit_of_a_new_optimizers_update_names_tx_update():
    optax = pytest.importorskip("optax")
    params = {"w": jnp.ones(3)}
    with jaxviz.watch() as log:
        for learning_rate in (0.1, 0.05):
            tx = optax.sgd(learning_rate)
            jax.jit(tx.update)(params, tx.init(params))
    c, _ = last_cause(log, "update_fn")
    assert (c.kind, c.path) == ("new_function_object", "tx.update")


# ====================================================================== static values
# https://github.com/jax-ml/jax/issues/13017 (a static callable object hashed but not equal)
def test_static_callable_with_hash_and_no_eq_is_a_new_object_compared_by_identity():
    class Relu:
        def __call__(self, x):
            return jax.nn.relu(x)

        def __hash__(self):
            return 0

    @functools.partial(jax.jit, static_argnames="activation")
    def apply(x, activation):
        return activation(x)

    with jaxviz.watch() as log:
        for _ in range(2):
            apply(jnp.ones(3), activation=Relu())
            line = here() - 1
    c, event = last_cause(log, "apply")
    assert (c.kind, c.path, c.compared, c.value_type) == ("static_value", "activation", "identity", "Relu")
    assert str(c) == ("static argument `activation`: a new `Relu` object, compared by identity "
                      f"(it defines `__hash__` but no `__eq__`), built at tests/test_causes.py:{line}, "
                      "inside a loop")
    assert "__eq__" in event.suggestion and "outside the loop" in event.suggestion


# https://github.com/google/flax/discussions/3137 (a TrainState-like struct rebuilt per epoch)
def test_optax_optimizer_rebuilt_in_a_flax_struct_static_field():
    optax = pytest.importorskip("optax")
    flax_struct = pytest.importorskip("flax.struct")

    @flax_struct.dataclass
    class DiscriminatorState:
        params: jax.Array
        tx: Any = flax_struct.field(pytree_node=False)  # an optax.GradientTransformation

    @jax.jit
    def train_step(dis_opt, grads):
        return dis_opt.params - grads

    with jaxviz.watch() as log:
        for _epoch in range(2):
            dis_opt = DiscriminatorState(jnp.ones(3), optax.adam(1e-3))
            line = here() - 1
            train_step(dis_opt, jnp.ones(3))
    c, _ = last_cause(log, "train_step")
    assert (c.kind, c.path, c.detail, c.compared) == (
        "pytree_structure", "dis_opt.tx", "static_field", "made_again")
    assert "a new `GradientTransformationExtraArgs` made again" in str(c)
    assert "`init`, `update` are new objects with the same code" in str(c)
    assert f"built at tests/test_causes.py:{line}, inside a loop" in str(c)
    assert_reads_apart(c)


# https://github.com/google/flax/issues/4070 (an nnx.Module rebuilt each run, holding an object)
def test_nnx_module_rebuilt_holding_an_activation_without_eq():
    nnx = pytest.importorskip("flax.nnx")

    class Swish:
        def __call__(self, x):
            return x * jax.nn.sigmoid(x)

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(3, 3, rngs=rngs)
            self.activation = Swish()

        def __call__(self, x):
            return self.activation(self.linear(x))

    @nnx.jit
    def forward(model, x):
        return model(x)

    with jaxviz.watch() as log:
        for run in range(2):
            model = MLP(nnx.Rngs(run))
            forward(model, jnp.ones(3))
    c, _ = last_cause(log, "forward")
    assert (c.kind, c.path, c.compared, c.value_type) == (
        "pytree_structure", "model.activation", "identity", "Swish")
    assert "a new `Swish` object, compared by identity (it defines no `__eq__`)" in str(c)
    assert_reads_apart(c)


# https://github.com/patrick-kidger/equinox/issues/686 (a Module holding a jitted function)
def test_equinox_module_holding_a_jitted_function_rebuilt():
    eqx = pytest.importorskip("equinox")

    class Model(eqx.Module):
        weight: jax.Array
        forward: Callable

    @eqx.filter_jit
    def step(model, x):
        return model.forward(model.weight * x)

    with jaxviz.watch() as log:
        for _ in range(2):
            model = Model(jnp.ones(3), jax.jit(lambda x: jnp.tanh(x)))
            step(model, jnp.ones(3))
    c, _ = last_cause(log, "step")
    assert (c.kind, c.path, c.compared) == ("static_value", "model.forward", "made_again")
    assert "a new jax.jit function of `<lambda>` made again" in str(c)
    assert_reads_apart(c)


# https://github.com/patrick-kidger/equinox/issues/940 (a new optimizer given to the step)
def test_equinox_new_optimizer_is_one_cause():
    eqx = pytest.importorskip("equinox")
    optax = pytest.importorskip("optax")

    @eqx.filter_jit
    def make_step(params, optim):
        return optim.init(params)

    with jaxviz.watch() as log:
        for _ in range(2):
            make_step(jnp.ones(3), optax.adam(1e-3))
    events = only(log, "make_step")
    assert [(c.kind, c.path, c.compared) for c in events[-1].causes] == [
        ("static_value", "optim", "made_again")]


def test_a_mesh_over_other_devices_names_the_devices():
    """https://github.com/jax-ml/jax/discussions/19872: a mesh built over other devices
    (same shape and axis names) is another key; four CPU devices: its own process."""
    out = _run_devices(4, """
        import functools
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

        @functools.partial(jax.jit, static_argnames="mesh")
        def shard_rows(x, mesh):
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P("rows")))

        devices = jax.devices()
        with jaxviz.watch() as log:
            shard_rows(jnp.ones(4), mesh=Mesh(np.array(devices[:2]), ("rows",)))
            shard_rows(jnp.ones(4), mesh=Mesh(np.array(devices[2:]), ("rows",)))
        print(str(log.events[-1].causes[0]))
    """)
    assert out == "static argument `mesh`: devices (0, 1) → (2, 3) (same axis_names, axis_types)"


@pytest.mark.parametrize(("before", "after", "compared"), [
    (object(), object(), "identity"),
    (*[(lambda: lambda x: x)() for _ in range(2)], "made_again"),
    ((1, object()), (1, object()), "identity"),
    ({"depth": 2}, {"depth": 3}, "part"),
    (2.5, 2, None),
])
def test_two_unequal_static_values_never_read_the_same(before, after, compared):
    change = values.compare(before, after)
    assert change.compared == compared
    assert change.compared in ("identity", "made_again") or str(change.before) != str(change.after)
    assert "0x" not in f"{change.before}{change.after}"


# ====================================================================== pytree structure
# https://github.com/jax-ml/jax/issues/16436 (an optional argument, None then given)
def test_optional_argument_none_then_a_value():
    @jax.jit
    def loss(x, alpha=None):
        return jnp.sum(x) if alpha is None else alpha * jnp.sum(x)

    with jaxviz.watch() as log:
        loss(jnp.ones(3), None)
        loss(jnp.ones(3), 0.5)
    c, event = last_cause(log, "loss")
    assert (c.kind, c.path, c.before, c.after) == ("pytree_structure", "alpha", "None", "~f32[]")
    assert str(c) == "`alpha`: None → ~f32[]"
    assert "None at one call" in event.suggestion


# https://github.com/patrick-kidger/equinox/issues/311 (a Python float where an array was)
def test_equinox_array_then_python_float_is_held_static():
    eqx = pytest.importorskip("equinox")

    @eqx.filter_jit
    def scale(x, factor):
        return x * factor

    with jaxviz.watch() as log:
        scale(jnp.ones(3), jnp.float32(2.0))
        scale(jnp.ones(3), 2.0)
    c, event = last_cause(log, "scale")
    assert (c.kind, c.path, c.detail, c.before, c.after) == (
        "static_value", "factor", "became_static", "f32[]", "2.0")
    assert "jnp.asarray(factor" in event.suggestion


# ====================================================================== avals
# https://github.com/patrick-kidger/diffrax/issues/523 (a weak type through a filter_jit method)
def test_weak_type_through_an_equinox_method_names_the_users_argument():
    eqx = pytest.importorskip("equinox")

    class Policy(eqx.Module):
        linear: Any  # an eqx.nn.Linear

        @eqx.filter_jit
        def predict(self, x, temperature):
            return jax.nn.softmax(self.linear(x) / temperature)

    policy = Policy(eqx.nn.Linear(4, 3, key=jax.random.PRNGKey(0)))
    with jaxviz.watch() as log:
        temperature = jnp.asarray(1.0)
        policy.predict(jnp.ones(4), temperature)
        policy.predict(jnp.ones(4), temperature * jnp.float32(0.9))
    c, _ = last_cause(log, "predict")
    assert (c.kind, c.path) == ("weak_type", "temperature")


# https://github.com/jax-ml/jax/issues/4143 (a jitted function under vmap, another batch)
def test_jit_under_vmap_batch_size_changed():
    m = jnp.ones((6, 5))

    @jax.jit
    def apply_m(v):
        return jnp.dot(m, v)

    with jaxviz.watch() as log:
        jax.vmap(apply_m)(jnp.ones((10, 5)))
        jax.vmap(apply_m)(jnp.ones((20, 5)))
    c, event = last_cause(log, "apply_m")
    assert (c.kind, c.path, c.before, c.after, c.axis) == ("shape", "v", (10, 5), (20, 5), 0)
    assert ("transform", "vmap") in event.signature.context


# https://github.com/jax-ml/jax/issues/19654 (grad called eagerly over a jitted loss)
def test_jit_under_grad_backward_pass_shares_the_forward_cause():
    @jax.jit
    def loss(w):
        return jnp.sum(w ** 2)

    loss_grad = jax.grad(loss)
    with jaxviz.watch() as log:
        loss_grad(jnp.ones(3))
        loss_grad(jnp.ones(5))  # a model grown by two parameters
    last = [e for e in log.events if e.jax_name == "loss"][-1]
    assert last.signature is None, "the backward pass compiles with no call to read"
    (c,) = last.causes
    assert (c.kind, c.path, c.before, c.after) == ("shape", "w", (3,), (5,))
    first_backward = [e for e in log.events if e.jax_name == "loss" and e.signature is None][0]
    assert not first_backward.causes  # the first call's backward pass is no recompile


def test_same_function_called_plainly_then_under_vmap():
    @jax.jit
    def double(x):
        return 2 * x

    with jaxviz.watch() as log:
        double(jnp.ones((4, 3)))
        jax.vmap(double)(jnp.ones((4, 3)))
    c, _ = last_cause(log, "double")
    assert (c.kind, c.path, c.before, c.after) == ("context", "transform", None, "vmap")
    assert "called under vmap (was called directly)" in str(c)


# https://github.com/huggingface/diffusers/pull/1096 (pmap's static broadcast argument)
def test_pmap_static_broadcast_argument_changed():
    n = jax.local_device_count()

    @functools.partial(jax.pmap, static_broadcasted_argnums=1)
    def denoise(latents, guidance_scale):
        return latents * guidance_scale

    with jaxviz.watch() as log:
        denoise(jnp.ones((n, 4)), 7.5)
        denoise(jnp.ones((n, 4)), 8.0)
    c, _ = last_cause(log, "pmap(denoise)")
    assert (c.kind, c.path, c.before, c.after) == ("static_value", "guidance_scale", 7.5, 8.0)


# https://github.com/pyro-ppl/numpyro/issues/441 (MCMC.run on more data)
def test_numpyro_mcmc_on_more_data_blames_the_models_data():
    numpyro = pytest.importorskip("numpyro")
    dist = numpyro.distributions
    from numpyro.infer import MCMC, NUTS

    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(w * x, 1.0), obs=y)

    def data(n):
        return jnp.linspace(0.0, 1.0, n), jnp.linspace(0.0, 2.0, n)

    mcmc = MCMC(NUTS(regression), num_warmup=5, num_samples=5, progress_bar=False)
    with jaxviz.watch() as log:
        mcmc.run(jax.random.PRNGKey(0), *data(50))
        mcmc.run(jax.random.PRNGKey(1), *data(60))
    event = only(log, "_fori_collect_loop")[-1]
    # the user's data, in the model's names; numpyro's internal key says the same change
    assert [(c.kind, c.path, c.before, c.after) for c in event.causes] == [
        ("shape", "x", (50,), (60,)), ("shape", "y", (50,), (60,))]


# https://github.com/pyro-ppl/numpyro/issues/869 (``jit(svi.update)`` on a smaller last batch)
def test_numpyro_jitted_svi_update_names_the_models_data():
    numpyro = pytest.importorskip("numpyro")
    dist = numpyro.distributions
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal

    def regression(x, y=None):
        w = numpyro.sample("w", dist.Normal(0.0, 1.0))
        numpyro.sample("y", dist.Normal(w * x, 1.0), obs=y)

    x, y = jnp.linspace(0.0, 1.0, 40), jnp.linspace(0.0, 2.0, 40)
    svi = SVI(regression, AutoNormal(regression), numpyro.optim.Adam(1e-2), Trace_ELBO())
    svi_state = svi.init(jax.random.PRNGKey(0), x[:32], y[:32])
    update = jax.jit(svi.update)
    with jaxviz.watch() as log:
        for start in range(0, 40, 32):
            svi_state, _ = update(svi_state, x[start:start + 32], y[start:start + 32])
    c, _ = last_cause(log, "update")
    assert (c.kind, c.path, c.before, c.after) == ("shape", "x", (32,), (8,))


def test_the_sharding_in_an_arrays_type_is_compared():
    """https://github.com/jax-ml/jax/issues/31250: the output of a sharding constraint fed
    back in has a sharded type. Two CPU devices: its own process."""
    out = _run_devices(2, """
        from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
        mesh = Mesh(np.array(jax.devices()[:2]), ("device",))

        @jax.jit
        def add_one(x):
            return jax.lax.with_sharding_constraint(x, NamedSharding(mesh, P())) + 1

        with jaxviz.watch() as log:
            add_one(add_one(jnp.zeros(4, jnp.int32)))
        c = log.events[-1].causes[0]
        print((c.kind, c.path, c.before))
    """)
    assert out == "('sharding', 'x', 'no mesh (one device)')"


# ====================================================================== equal keys
def test_jax_clear_caches_is_named_with_the_users_line():
    @jax.jit
    def evaluate(x):
        return jnp.mean(x @ x.T)

    with jaxviz.watch() as log:
        evaluate(jnp.ones((3, 3)))
        jax.clear_caches()
        line = here() - 1
        evaluate(jnp.ones((3, 3)))
    c, event = last_cause(log, "evaluate")
    assert (c.kind, c.path, c.owner) == ("cache_cleared", "jax.clear_caches()",
                                         f"tests/test_causes.py:{line}")
    assert "not inside a loop" in event.suggestion


def test_a_functions_own_clear_cache():
    @jax.jit
    def sample(key):
        return jax.random.normal(key, (3,))

    key = jax.random.key(0)
    with jaxviz.watch() as log:
        sample(key)
        sample.clear_cache()  # pyright: ignore[reportAttributeAccessIssue]  (not in jax's stubs)
        sample(key)
    c, _ = last_cause(log, "sample")
    assert (c.kind, c.path) == ("cache_cleared", "sample.clear_cache()")


def test_when_nothing_tells_it_lists_what_it_compared():
    text = str(Cause("unknown", "f"))
    assert "compared the function object, each argument's shape, dtype, weak type" in text


# ====================================================================== names
# https://github.com/google/flax/discussions/2941 (``jax.jit(model.apply, static_argnames="train")``)
def test_a_keyword_gathered_by_kwargs_is_named_as_written():
    nn = pytest.importorskip("flax.linen")

    class Classifier(nn.Module):
        @nn.compact
        def __call__(self, x, train: bool):
            x = nn.Dense(4)(x)
            return nn.Dropout(0.5, deterministic=not train)(x)

    model = Classifier()
    variables = model.init(jax.random.PRNGKey(0), jnp.ones(3), train=False)
    apply = jax.jit(model.apply, static_argnames="train")
    with jaxviz.watch() as log:
        apply(variables, jnp.ones(3), train=True, rngs={"dropout": jax.random.PRNGKey(1)})
        apply(variables, jnp.ones(3), train=False, rngs={"dropout": jax.random.PRNGKey(1)})
    c, _ = last_cause(log, "apply")
    assert (c.kind, c.path, c.before, c.after) == ("static_value", "train", True, False)


# ---------------------------------------------------------------------- helpers
def _run_devices(count: int, body: str) -> str:
    code = "import jax, jax.numpy as jnp, numpy as np, jaxviz\n" + textwrap.dedent(body)
    env = {"JAX_PLATFORMS": "cpu", "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "XLA_FLAGS": background.with_host_devices(count)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=str(ROOT), timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip().splitlines()[-1]
