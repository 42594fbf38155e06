"""A zoo of real programs written the way each library's users write them (Flax Linen and
NNX, Equinox, Haiku, optax, stax-style combinators, decorated and nested train steps,
diffrax), shared by the framework tests and benchmarks.

Each entry builds ``(fn, args, kwargs)``: the callable exactly as the user calls it. It also
says which of the user's names should appear as groups in the graph, how to get the
library's own trace of the same program (``reference``), and how many arrays the real call
returns (``real_outputs``: for ``nnx.jit`` that includes the model and optimizer state it
propagates back). Models are tiny so that each traces well under a second on CPU.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

# Names that belong to a wrapper or to JAX's internals, never to the user's program.
INTERNAL_NAMES = ("dynamic_nodonate", "wrapper", "apply_fun", "<flat index", "TypedInt", "_where")


@dataclass
class Entry:
    name: str
    build: Callable[[], tuple[Callable[..., Any], tuple, dict]]
    groups: tuple[str, ...]  # the user's names expected as call groups
    reference: Callable[[Callable[..., Any], tuple, dict], Any]  # the library's ClosedJaxpr
    real_outputs: Callable[[Callable[..., Any], tuple, dict], int] = field(default=None)  # type: ignore[assignment]
    captured: tuple[str, ...] = ()  # globals the program reads, to be listed as captured
    root: str | None = None  # the program's expected name, where a wrapper could hide it

    def __post_init__(self) -> None:
        if self.real_outputs is None:
            self.real_outputs = count_array_leaves


def count_array_leaves(fn: Callable[..., Any], args: tuple, kwargs: dict) -> int:
    """The arrays the real call returns (what a jitted call hands back as device buffers)."""
    out = fn(*args, **kwargs)
    return sum(isinstance(x, (jax.Array, np.ndarray)) for x in jax.tree_util.tree_leaves(out))


def jax_reference(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    return jax.make_jaxpr(fn)(*args, **kwargs)


# ---------------------------------------------------------------------- Flax Linen: CNN
def linen_cnn() -> tuple[Callable[..., Any], tuple, dict]:
    import flax.linen as nn
    import optax
    from flax.training import train_state

    class CNN(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = nn.Conv(features=4, kernel_size=(3, 3))(x)
            x = nn.relu(x)
            x = nn.avg_pool(x, window_shape=(2, 2), strides=(2, 2))
            x = x.reshape((x.shape[0], -1))
            x = nn.Dense(features=16)(x)
            x = nn.relu(x)
            return nn.Dense(features=10)(x)

    @jax.jit
    def train_step(state, batch):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, batch["image"])
            loss = optax.softmax_cross_entropy_with_integer_labels(logits, batch["label"]).mean()
            return loss, logits

        (loss, logits), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
        state = state.apply_gradients(grads=grads)
        accuracy = jnp.mean(jnp.argmax(logits, -1) == batch["label"])
        return state, {"loss": loss, "accuracy": accuracy}

    model = CNN()
    images = jnp.ones((4, 8, 8, 1))
    params = model.init(jax.random.PRNGKey(0), images)["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params, tx=optax.adam(1e-3))
    batch = {"image": images, "label": jnp.array([0, 1, 2, 3])}
    return train_step, (state, batch), {}


# ---------------------------------------------------------------------- Flax Linen: GPT
def linen_gpt() -> tuple[Callable[..., Any], tuple, dict]:
    import flax.linen as nn
    import optax
    from flax.training import train_state

    class Block(nn.Module):
        n_head: int
        @nn.compact
        def __call__(self, x):
            h = nn.LayerNorm(name="ln_1")(x)
            mask = nn.make_causal_mask(jnp.ones(x.shape[:2]))
            x = x + nn.MultiHeadDotProductAttention(num_heads=self.n_head, name="attn")(h, mask=mask)
            h = nn.LayerNorm(name="ln_2")(x)
            h = nn.Dense(4 * x.shape[-1], name="c_fc")(h)
            return x + nn.Dense(x.shape[-1], name="c_proj")(nn.gelu(h))

    class GPT(nn.Module):
        vocab: int = 32
        width: int = 16
        n_layer: int = 4

        def setup(self):
            self.wte = nn.Embed(self.vocab, self.width)
            self.h = [Block(n_head=2, name=f"h_{i}") for i in range(self.n_layer)]
            self.ln_f = nn.LayerNorm()

        def __call__(self, tokens):
            x = self.wte(tokens)
            for block in self.h:
                x = block(x)
            return self.wte.attend(self.ln_f(x))

    @jax.jit
    def train_step(state, tokens):
        def loss_fn(params):
            logits = state.apply_fn({"params": params}, tokens[:, :-1])
            return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

        loss, grads = jax.value_and_grad(loss_fn)(state.params)
        return state.apply_gradients(grads=grads), loss

    model = GPT()
    tokens = jnp.arange(18).reshape(2, 9) % 32
    params = model.init(jax.random.PRNGKey(0), tokens[:, :-1])["params"]
    state = train_state.TrainState.create(apply_fn=model.apply, params=params,
                                          tx=optax.adamw(1e-3))
    return train_step, (state, tokens), {}


# ---------------------------------------------------------------------- Flax NNX
def nnx_mlp() -> tuple[Callable[..., Any], tuple, dict]:
    import optax
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, din, dhidden, dout, *, rngs):
            self.linear1 = nnx.Linear(din, dhidden, rngs=rngs)
            self.bn = nnx.BatchNorm(dhidden, rngs=rngs)
            self.linear2 = nnx.Linear(dhidden, dout, rngs=rngs)

        def __call__(self, x):
            return self.linear2(nnx.relu(self.bn(self.linear1(x))))

    @nnx.jit
    def train_step(model, optimizer, x, y):
        def loss_fn(model):
            return ((model(x) - y) ** 2).mean()

        loss, grads = nnx.value_and_grad(loss_fn)(model)
        optimizer.update(model, grads)
        return loss

    model = MLP(3, 8, 2, rngs=nnx.Rngs(0))
    optimizer = nnx.Optimizer(model, optax.adam(1e-3), wrt=nnx.Param)
    return train_step, (model, optimizer, jnp.ones((4, 3)), jnp.zeros((4, 2))), {}


def nnx_reference(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """What ``nnx.jit`` traces: the graph nodes split into state, merged inside, and their
    state returned with the result (``nnx.split`` + ``jax.make_jaxpr``)."""
    from flax import nnx

    nodes = [i for i, a in enumerate(args) if nnx.graph.is_graph_node(a)]
    graphdef, state = nnx.split(tuple(args[i] for i in nodes))
    rest = [a for i, a in enumerate(args) if i not in nodes]

    def pure(state, *rest):
        merged = iter(nnx.merge(graphdef, state))
        full = list(rest)
        for i in nodes:
            full.insert(i, next(merged))
        out = fn.__wrapped__(*full, **kwargs)
        return out, nnx.state(tuple(full[i] for i in nodes))

    return jax.make_jaxpr(pure)(state, *rest)


def nnx_outputs(fn: Callable[..., Any], args: tuple, kwargs: dict) -> int:
    """The result's arrays plus the state ``nnx.jit`` writes back into the arguments."""
    from flax import nnx

    copies = nnx.clone(args)  # leave the zoo's own objects untouched
    out = fn(*copies, **kwargs)
    nodes = tuple(a for a in copies if nnx.graph.is_graph_node(a))
    return len(jax.tree_util.tree_leaves(out)) + len(jax.tree_util.tree_leaves(nnx.state(nodes)))


# ---------------------------------------------------------------------- Equinox
def equinox_mlp() -> tuple[Callable[..., Any], tuple, dict]:
    import equinox as eqx
    import optax

    class MLP(eqx.Module):
        layers: list
        activation: Callable = eqx.field(static=False)
        depth: int

        def __init__(self, key, width=8, depth=2):
            keys = jax.random.split(key, depth + 1)
            self.layers = [eqx.nn.Linear(3, width, key=keys[0])]
            self.layers += [eqx.nn.Linear(width, width, key=k) for k in keys[1:-1]]
            self.layers.append(eqx.nn.Linear(width, 1, key=keys[-1]))
            self.activation = jax.nn.relu
            self.depth = depth

        def __call__(self, x):
            for layer in self.layers[:-1]:
                x = self.activation(layer(x))
            return self.layers[-1](x)

    def loss(model, x, y):
        pred = jax.vmap(model)(x)
        return jnp.mean((pred - y) ** 2)

    optim = optax.adam(1e-3)

    @eqx.filter_jit
    def train_step(model, opt_state, x, y):
        value, grads = eqx.filter_value_and_grad(loss)(model, x, y)
        updates, opt_state = optim.update(grads, opt_state, eqx.filter(model, eqx.is_array))
        model = eqx.apply_updates(model, updates)
        return model, opt_state, value

    model = MLP(jax.random.PRNGKey(0))
    opt_state = optim.init(eqx.filter(model, eqx.is_array))
    return train_step, (model, opt_state, jnp.ones((4, 3)), jnp.zeros((4, 1))), {}


def equinox_mixer() -> tuple[Callable[..., Any], tuple, dict]:
    import equinox as eqx

    class MixerBlock(eqx.Module):
        token_mix: eqx.nn.MLP
        channel_mix: eqx.nn.MLP
        norm1: eqx.nn.LayerNorm
        norm2: eqx.nn.LayerNorm

        def __init__(self, tokens, channels, hidden, *, key):
            k1, k2 = jax.random.split(key)
            self.token_mix = eqx.nn.MLP(tokens, tokens, hidden, depth=1, activation=jax.nn.gelu, key=k1)
            self.channel_mix = eqx.nn.MLP(channels, channels, hidden, depth=1, activation=jax.nn.gelu, key=k2)
            self.norm1 = eqx.nn.LayerNorm((tokens, channels))
            self.norm2 = eqx.nn.LayerNorm((tokens, channels))

        def __call__(self, x):
            x = x + jax.vmap(self.token_mix, in_axes=1, out_axes=1)(self.norm1(x))
            return x + jax.vmap(self.channel_mix)(self.norm2(x))

    class Mixer(eqx.Module):
        embed: eqx.nn.Linear
        blocks: list
        head: eqx.nn.Linear
        num_blocks: int = eqx.field(static=True)

        def __init__(self, tokens=4, channels=6, num_blocks=2, *, key):
            keys = jax.random.split(key, num_blocks + 2)
            self.embed = eqx.nn.Linear(3, channels, key=keys[0])
            self.blocks = [MixerBlock(tokens, channels, 8, key=k) for k in keys[1:-1]]
            self.head = eqx.nn.Linear(channels, 2, key=keys[-1])
            self.num_blocks = num_blocks

        def __call__(self, x):
            x = jax.vmap(self.embed)(x)
            for block in self.blocks:
                x = block(x)
            return self.head(x.mean(0))

    @eqx.filter_jit
    def grads_of(model, x, y):
        def loss(model, x, y):
            return jnp.mean((jax.vmap(model)(x) - y) ** 2)

        return eqx.filter_value_and_grad(loss)(model, x, y)

    model = Mixer(key=jax.random.PRNGKey(0))
    return grads_of, (model, jnp.ones((2, 4, 3)), jnp.zeros((2, 2))), {}


def equinox_reference(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    import equinox as eqx

    return eqx.filter_make_jaxpr(fn.__wrapped__)(*args, **kwargs)[0]


# ---------------------------------------------------------------------- Haiku
def haiku_transformer() -> tuple[Callable[..., Any], tuple, dict]:
    import haiku as hk
    import optax

    class Block(hk.Module):
        def __init__(self, num_heads, name=None):
            super().__init__(name=name)
            self.num_heads = num_heads

        def __call__(self, x):
            width = x.shape[-1]
            h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
            attn = hk.MultiHeadAttention(num_heads=self.num_heads, key_size=width // self.num_heads,
                                         w_init=hk.initializers.VarianceScaling(1.0))
            x = x + attn(h, h, h)
            h = hk.LayerNorm(axis=-1, create_scale=True, create_offset=True)(x)
            return x + hk.nets.MLP([2 * width, width])(h)

    def forward(tokens):
        x = hk.Embed(vocab_size=16, embed_dim=8)(tokens)
        for i in range(2):
            x = Block(num_heads=2, name=f"block_{i}")(x)
        return hk.Linear(16, name="head")(x)

    model = hk.transform(forward)
    optimizer = optax.adam(1e-3)

    def loss_fn(params, tokens):
        logits = model.apply(params, None, tokens[:, :-1])
        return optax.softmax_cross_entropy_with_integer_labels(logits, tokens[:, 1:]).mean()

    @jax.jit
    def update(params, opt_state, tokens):
        loss, grads = jax.value_and_grad(loss_fn)(params, tokens)
        updates, opt_state = optimizer.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state, loss

    tokens = jnp.arange(10).reshape(2, 5) % 16
    params = model.init(jax.random.PRNGKey(0), tokens[:, :-1])
    return update, (params, optimizer.init(params), tokens), {}


# ---------------------------------------------------------------------- optax
def optax_chain() -> tuple[Callable[..., Any], tuple, dict]:
    import optax

    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    optimizer = optax.multi_transform(
        {"decay": optax.chain(optax.clip_by_global_norm(1.0), optax.adamw(1e-3, weight_decay=1e-4)),
         "plain": optax.sgd(1e-2)},
        {"w": "decay", "b": "plain"},
    )

    def predict(params, x):
        return x @ params["w"] + params["b"]

    def loss(params, x, y):
        return jnp.mean((predict(params, x) - y) ** 2)

    @jax.jit
    def step(params, opt_state, x, y):
        grads = jax.grad(loss)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state

    return step, (params, optimizer.init(params), jnp.ones((4, 3)), jnp.zeros((4, 2))), {}


# ---------------------------------------------------------------------- stax-style GCN
def stax_gcn() -> tuple[Callable[..., Any], tuple, dict]:
    from jax.example_libraries import stax

    def GraphConvolution(out_dim):
        """A stax layer: (init_fun, apply_fun); apply_fun takes (x, adj)."""
        def init_fun(rng, input_shape):
            w = jax.random.normal(rng, (input_shape[-1], out_dim)) * 0.1
            return input_shape[:-1] + (out_dim,), (w,)

        def apply_fun(params, inputs, **kwargs):
            x, adj = inputs
            (w,) = params
            return adj @ (x @ w), adj

        return init_fun, apply_fun

    def Relu2():
        def init_fun(rng, input_shape):
            return input_shape, ()

        def apply_fun(params, inputs, **kwargs):
            x, adj = inputs
            return jax.nn.relu(x), adj

        return init_fun, apply_fun

    def TakeNodes():
        def init_fun(rng, input_shape):
            return input_shape, ()

        def apply_fun(params, inputs, **kwargs):
            return inputs[0]

        return init_fun, apply_fun

    init_fun, predict = stax.serial(GraphConvolution(8), Relu2(), GraphConvolution(4),
                                      TakeNodes(), stax.LogSoftmax)

    def loss(params, x, adj, labels):
        logits = predict(params, (x, adj))
        return -jnp.mean(jnp.take_along_axis(logits, labels[:, None], axis=1))

    @jax.jit
    def update(params, x, adj, labels):
        grads = jax.grad(loss)(params, x, adj, labels)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)

    nodes = 5
    _, params = init_fun(jax.random.PRNGKey(0), (nodes, 3))
    adj = jnp.eye(nodes) + jnp.eye(nodes, k=1)
    return update, (params, jnp.ones((nodes, 3)), adj, jnp.arange(nodes) % 4), {}


# ---------------------------------------------------------------------- decorated step
def logged(fn):
    """A user decorator, as people write them."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    return wrapper


def decorated_step() -> tuple[Callable[..., Any], tuple, dict]:
    def predict(params, x):
        return jnp.tanh(x @ params["w"]) @ params["v"]

    @jax.jit
    @logged
    def train_step(params, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((predict(p, x) - y) ** 2))(params)
        params = jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads)
        return params, jnp.where(loss > 1.0, 1.0, loss)

    params = {"w": jnp.ones((3, 4)), "v": jnp.ones((4, 1))}
    return train_step, (params, jnp.ones((2, 3)), jnp.zeros((2, 1))), {}


# ---------------------------------------------------------------------- nested loss_fn
LABEL_WEIGHTS = jnp.array([1.0, 2.0])  # a global read only by the nested loss_fn


def nested_loss_step() -> tuple[Callable[..., Any], tuple, dict]:
    def train_step(params, x, y):
        def loss_fn(params):
            pred = x @ params["w"] + params["b"]
            return jnp.mean(LABEL_WEIGHTS * (pred - y) ** 2)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        return jax.tree_util.tree_map(lambda p, g: p - 0.1 * g, params, grads), loss

    params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
    return train_step, (params, jnp.ones((4, 3)), jnp.zeros((4, 2))), {}


# ---------------------------------------------------------------------- diffrax
def diffrax_ode() -> tuple[Callable[..., Any], tuple, dict]:
    import diffrax
    import equinox as eqx

    def vector_field(t, y, args):
        decay, = args
        return -decay * y + jnp.sin(t)

    @eqx.filter_jit
    def solve(y0, decay):
        term = diffrax.ODETerm(vector_field)
        sol = diffrax.diffeqsolve(term, diffrax.Tsit5(), t0=0.0, t1=1.0, dt0=0.25, y0=y0,
                                  args=(decay,), stepsize_controller=diffrax.ConstantStepSize(),
                                  saveat=diffrax.SaveAt(t1=True))
        return sol.ys

    return solve, (jnp.ones(3), jnp.array(0.5)), {}


def _installed(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


ZOO: list[Entry] = [
    Entry("linen_cnn", linen_cnn, ("CNN", "Conv_0", "Dense_0", "Dense_1", "loss_fn"), jax_reference),
    Entry("linen_gpt", linen_gpt, ("GPT", "h_0", "h_1", "h_2", "h_3", "attn", "loss_fn"), jax_reference),
    Entry("nnx_mlp", nnx_mlp, ("MLP", "linear1", "bn", "linear2", "loss_fn"), nnx_reference, nnx_outputs),
    Entry("equinox_mlp", equinox_mlp, ("MLP", "eqx.nn.Linear", "loss"), equinox_reference, root="train_step"),
    Entry("equinox_mixer", equinox_mixer, ("Mixer", "MixerBlock", "eqx.nn.MLP", "loss"), equinox_reference),
    Entry("haiku_transformer", haiku_transformer, ("block_0", "block_1", "head", "loss_fn"), jax_reference),
    Entry("optax_chain", optax_chain, ("loss", "predict"), jax_reference),
    Entry("stax_gcn", stax_gcn, ("GraphConvolution", "Relu2", "loss"), jax_reference),
    Entry("decorated_step", decorated_step, ("predict", "where"), jax_reference, root="train_step"),
    Entry("nested_loss_step", nested_loss_step, ("loss_fn",), jax_reference,
          captured=("LABEL_WEIGHTS",)),
    Entry("diffrax_ode", diffrax_ode, ("vector_field",), equinox_reference),
]
ZOO = [e for e in ZOO if e.name != "diffrax_ode" or _installed("diffrax")]
BY_NAME = {e.name: e for e in ZOO}
