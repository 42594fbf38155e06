"""How often the recompile cause is named right: jaxviz against JAX's own explainer.

Each history is a small program written the way users of each library write it (from
the recompiles users report: ragged batches, a partial or a model made in the loop,
``eqx.filter_jit`` and ``nnx.jit`` models whose static field changed, ``device_put``,
donation, a config object hashed by identity, an optax optimizer made again...). Its
last compile of the named function has one true cause: a kind and the argument as the
user wrote it (field path included).

- jaxviz is right when its first cause of that compile has the kind and the path.
- JAX's explainer (``jax_explain_cache_misses``, its log captured during that call) is
  right when what it logged names the path and says the kind of change (a word of the
  kind: "shape" for a shape, "static" for a static value, ...).

Two CPU devices (``--xla_force_host_platform_device_count=2``) for the device histories:
this script sets ``XLA_FLAGS`` before JAX starts. Prints each history's verdicts and both
scores. Usage: ``.venv/bin/python benchmarks/bench_causes.py [-v]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=2").strip()

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import jaxviz  # noqa: E402

# Words that say the kind of change, for JAX's explanation.
KIND_WORDS = {
    "shape": ("shape", "[", "type"), "dtype": ("dtype", "type"), "weak_type": ("weak",),
    "static_value": ("static",), "pytree_structure": ("tree", "structure", "static"),
    "new_function_object": ("function", "new"), "commitment": ("commit",),
    "donation": ("donat",), "device": ("device", "sharding"),
}


@dataclass
class History:
    name: str
    function: str  # the compiled function's name, as jaxviz reports it
    kind: str
    path: str
    run: Callable[[], None]  # runs the program; its last compile of ``function`` is scored
    requires: str | None = None  # the library it needs


HISTORIES: list[History] = []


def history(name: str, function: str, kind: str, path: str, requires: str | None = None
            ) -> Callable[[Callable[[], None]], Callable[[], None]]:
    def add(run: Callable[[], None]) -> Callable[[], None]:
        HISTORIES.append(History(name, function, kind, path, run, requires))
        return run
    return add


# ---------------------------------------------------------------------- plain jax.jit
@history("ragged last batch", "train_step", "shape", "batch[0]")
def _ragged() -> None:
    @jax.jit
    def train_step(w, batch):
        x, y = batch
        return w - 0.01 * x.T @ (x @ w - y) / x.shape[0]

    data_x, data_y = np.ones((10, 3), np.float32), np.ones(10, np.float32)
    w = jnp.zeros(3)
    for i in range(0, 10, 4):
        w = train_step(w, (data_x[i:i + 4], data_y[i:i + 4]))


@history("int then float", "scale", "dtype", "x")
def _dtype() -> None:
    @jax.jit
    def scale(x):
        return x * 2

    scale(jnp.arange(3))
    scale(jnp.ones(3))


@history("python float learning rate", "sgd", "weak_type", "lr")
def _weak() -> None:
    @jax.jit
    def sgd(w, lr):
        return w * lr

    sgd(jnp.ones(3), jnp.float32(0.1))
    sgd(jnp.ones(3), 0.1)


@history("static mode flag", "forward", "static_value", "training")
def _static() -> None:
    @functools.partial(jax.jit, static_argnames="training")
    def forward(x, training):
        return x * 0.5 if training else x

    forward(jnp.ones(3), training=True)
    forward(jnp.ones(3), training=False)


@history("config hashed by identity", "forward", "static_value", "cfg")
def _hash_identity() -> None:
    class Config:
        def __init__(self, depth):
            self.depth = depth

        def __eq__(self, other):
            return isinstance(other, Config) and other.depth == self.depth

        __hash__ = object.__hash__

    @functools.partial(jax.jit, static_argnames="cfg")
    def forward(x, cfg):
        return x * cfg.depth

    for _ in range(2):
        forward(jnp.ones(3), cfg=Config(2))


@history("metrics dict gains a key", "update", "pytree_structure", "metrics['acc']")
def _pytree() -> None:
    @jax.jit
    def update(metrics):
        return {k: v + 1 for k, v in metrics.items()}

    update({"loss": jnp.zeros(())})
    update({"loss": jnp.zeros(()), "acc": jnp.zeros(())})


@history("partial built in the loop", "apply", "new_function_object", "step")
def _partial() -> None:
    def apply(scale, x):
        return x * scale

    for _ in range(2):
        step = jax.jit(functools.partial(apply, 2.0))
        step(jnp.ones(3))


@history("jit of a new model's method", "forward", "new_function_object", "forward")
def _bound_method() -> None:
    class Model:
        def __init__(self):
            self.scale = 2.0

        def forward(self, x):
            return x * self.scale

    for _ in range(2):
        jax.jit(Model().forward)(jnp.ones(3))


@history("jitted closure made by a helper", "sgd", "new_function_object", "sgd")
def _closure() -> None:
    def make_step(lr):
        @jax.jit
        def sgd(w):
            return w - lr
        return sgd

    for _ in range(2):
        make_step(0.1)(jnp.ones(3))


@history("tree_util.Partial over a new closure", "apply_loss", "new_function_object", "loss_fn")
def _tree_partial() -> None:
    @jax.jit
    def apply_loss(loss_fn, x):
        return loss_fn(x)

    def make_loss(scale):
        def loss(x):
            return jnp.sum(x * scale)
        return loss

    for _ in range(2):
        apply_loss(jax.tree_util.Partial(make_loss(2.0)), jnp.ones(3))


# ---------------------------------------------------------------------- compile-only misses
@history("numpy input, then device_put", "predict", "commitment", "x")
def _commitment() -> None:
    @jax.jit
    def predict(x):
        return x.sum()

    predict(np.ones(3, np.float32))
    predict(jax.device_put(np.ones(3, np.float32), jax.devices()[0]))


@history("moved to another device", "predict", "device", "x")
def _device() -> None:
    @jax.jit
    def predict(x):
        return x.sum()

    d0, d1 = jax.devices()[:2]
    predict(jax.device_put(jnp.ones(3), d0))
    predict(jax.device_put(jnp.ones(3), d1))


@history("jitted with and without donation", "update", "donation", "params")
def _donation() -> None:
    def update(params, grads):
        return params - 0.1 * grads

    jax.jit(update)(jnp.ones(3), jnp.ones(3))
    jax.jit(update, donate_argnums=0)(jnp.ones(3), jnp.ones(3))


# ---------------------------------------------------------------------- libraries
@history("eqx.filter_jit: batch size", "loss", "shape", "xs", "equinox")
def _eqx_shape() -> None:
    import equinox as eqx

    @eqx.filter_jit
    def loss(model, xs, ys):
        return jnp.mean((jax.vmap(model)(xs) - ys) ** 2)

    model = eqx.nn.Linear(20, 1, key=jax.random.PRNGKey(0))
    loss(model, jnp.ones((32, 20)), jnp.ones((32, 1)))
    loss(model, jnp.ones((4, 20)), jnp.ones((4, 1)))


@history("eqx.filter_jit: a static field changed", "loss", "pytree_structure", "model.step_count", "equinox")
def _eqx_static() -> None:
    import equinox as eqx

    class Model(eqx.Module):
        linear: eqx.nn.Linear
        step_count: int = eqx.field(static=True)

    @eqx.filter_jit
    def loss(model, xs):
        return jnp.mean(jax.vmap(model.linear)(xs))

    model = Model(eqx.nn.Linear(20, 1, key=jax.random.PRNGKey(0)), 0)
    loss(model, jnp.ones((4, 20)))
    loss(dataclasses.replace(model, step_count=1), jnp.ones((4, 20)))


@history("nnx.jit: a module attribute changed", "loss", "pytree_structure", "model.step_count", "flax")
def _nnx_static() -> None:
    from flax import nnx

    class MLP(nnx.Module):
        def __init__(self, rngs):
            self.linear = nnx.Linear(20, 1, rngs=rngs)
            self.step_count = 0

        def __call__(self, x):
            return self.linear(x)

    @nnx.jit
    def loss(model, xs):
        return jnp.mean(model(xs))

    model = MLP(nnx.Rngs(0))
    loss(model, jnp.ones((4, 20)))
    model.step_count += 1
    loss(model, jnp.ones((4, 20)))


@history("nnx.jit: batch size", "loss", "shape", "xs", "flax")
def _nnx_shape() -> None:
    from flax import nnx

    @nnx.jit
    def loss(model, xs):
        return jnp.mean(model(xs))

    model = nnx.Linear(20, 1, rngs=nnx.Rngs(0))
    loss(model, jnp.ones((32, 20)))
    loss(model, jnp.ones((4, 20)))


@history("haiku apply: batch size", "forward.apply", "shape", "x", "haiku")
def _haiku() -> None:
    import haiku as hk

    def forward(x):
        return hk.nets.MLP([8, 1])(x)

    net = hk.transform(forward)
    params = net.init(jax.random.PRNGKey(0), jnp.ones((4, 3)))
    apply = jax.jit(net.apply)
    apply(params, None, jnp.ones((4, 3)))
    apply(params, None, jnp.ones((2, 3)))


@history("optax optimizer made again", "train_step", "static_value", "tx", "optax")
def _optax() -> None:
    import optax

    def train_step(params, opt_state, x, tx):
        grads = jax.grad(lambda p: jnp.sum((x @ p) ** 2))(params)
        updates, opt_state = tx.update(grads, opt_state)
        return optax.apply_updates(params, updates), opt_state

    step = jax.jit(train_step, static_argnames="tx")
    params = jnp.ones(3)
    for _ in range(2):
        tx = optax.adam(1e-3)
        params, _ = step(params, tx.init(params), jnp.ones((2, 3)), tx=tx)


# ---------------------------------------------------------------------- scoring
class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


def _jax_right(texts: list[str], h: History) -> bool:
    text = "\n".join(texts)
    words = KIND_WORDS.get(h.kind, ())
    return h.path in text and any(w in text for w in words)


def score(verbose: bool) -> tuple[int, int, int]:
    capture = _Capture()
    logger = logging.getLogger("jax")
    logger.addHandler(capture)
    ours = theirs = ran = 0
    try:
        for h in HISTORIES:
            try:
                if h.requires:
                    __import__(h.requires)
            except ImportError:
                print(f"  skipped ({h.requires} not installed): {h.name}")
                continue
            capture.records.clear()
            marks: dict[int, int] = {}  # compile event → JAX's log length when it was seen

            def mark(event: jaxviz.recompiles.CompileEvent | None, h: History = h,
                     marks: dict[int, int] = marks) -> None:
                if event is not None and event.function.name == h.function:
                    marks.setdefault(id(event), len(capture.records))

            jax.config.update("jax_explain_cache_misses", True)
            log = jaxviz.watch()
            log.subscribe(mark)
            try:
                with log:
                    h.run()
            finally:
                jax.config.update("jax_explain_cache_misses", False)
            events = [e for e in log.events if e.function.name == h.function]
            if not events:
                print(f"  {h.name}: no compile of {h.function} seen")
                continue
            ran += 1
            last = events[-1]
            ours_ok = bool(last.causes) and (last.causes[0].kind, last.causes[0].path) == (h.kind, h.path)
            # JAX's log of the scored call: what it wrote after the previous compile was seen
            seen = sorted(marks.values())
            jax_texts = capture.records[seen[-2]:] if len(seen) > 1 else capture.records
            theirs_ok = _jax_right(jax_texts, h)
            ours += ours_ok
            theirs += theirs_ok
            mark = {True: "right", False: "WRONG"}
            print(f"  {h.name:40} jaxviz {mark[ours_ok]:5}  JAX {mark[theirs_ok]:5}")
            if verbose:
                print(f"      jaxviz: {last.reason()}")
                print("      JAX:    " + (" | ".join(" ".join(t.split()) for t in jax_texts)[:300]
                                          or "(nothing logged)"))
    finally:
        logger.removeHandler(capture)
    return ours, theirs, ran


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show both explanations")
    args = parser.parse_args()
    print(f"jax {jax.__version__}, {len(jax.devices())} {jax.devices()[0].platform} devices; "
          f"{len(HISTORIES)} histories")
    ours, theirs, ran = score(args.verbose)
    print(f"jaxviz names the cause (kind and argument path) in {ours}/{ran} "
          f"({100 * ours / max(ran, 1):.0f}%); JAX's explainer in {theirs}/{ran} "
          f"({100 * theirs / max(ran, 1):.0f}%)")


if __name__ == "__main__":
    main()
