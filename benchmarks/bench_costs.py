"""jaxviz's per-equation FLOP estimate, summed over a program, against XLA's own count
(``jax.jit(f).lower(...).compile().cost_analysis()['flops']``), for a few models.

Run: ``.venv/bin/python benchmarks/bench_costs.py``. Prints one line per model: both
counts, their ratio (estimate / XLA), the estimate's time, and the estimated bytes
(unfused, an upper bound) beside XLA's "bytes accessed" (after fusion).
The matmul-dominated models are expected within 10% (asserted in tests/test_costs.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from jaxviz.costs import fmt_bytes, fmt_flops, program_costs


def mlp(params: Any, x: jax.Array) -> jax.Array:
    for w, b in params:
        x = jax.nn.relu(x @ w + b)
    return x.sum()


def mlp_args(key: jax.Array, sizes: tuple[int, ...] = (256, 512, 512, 128), batch: int = 64) -> tuple:
    ks = jax.random.split(key, len(sizes))
    params = [(jax.random.normal(ks[i], (sizes[i], sizes[i + 1])) * 0.05, jnp.zeros(sizes[i + 1]))
              for i in range(len(sizes) - 1)]
    return params, jax.random.normal(ks[-1], (batch, sizes[0]))


def mlp_loss_grad(params: Any, x: jax.Array) -> Any:
    return jax.grad(mlp)(params, x)


def cnn(params: Any, x: jax.Array) -> jax.Array:
    w1, w2, w3 = params
    x = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    x = jax.nn.relu(lax.conv_general_dilated(x, w2, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
    x = x.mean(axis=(1, 2))
    return (x @ w3).sum()


def cnn_args(key: jax.Array) -> tuple:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    params = (jax.random.normal(k1, (3, 3, 16, 32)) * 0.1, jax.random.normal(k2, (3, 3, 32, 64)) * 0.1,
              jax.random.normal(k3, (64, 10)) * 0.1)
    return params, jax.random.normal(k4, (8, 32, 32, 16))


def attention(params: Any, x: jax.Array) -> jax.Array:
    wq, wk, wv, wo = params
    q = jnp.einsum("btd,dhk->bhtk", x, wq)
    k = jnp.einsum("btd,dhk->bhtk", x, wk)
    v = jnp.einsum("btd,dhk->bhtk", x, wv)
    s = jnp.einsum("bhtk,bhsk->bhts", q, k) / jnp.sqrt(q.shape[-1])
    p = jax.nn.softmax(s, axis=-1)
    o = jnp.einsum("bhts,bhsk->bthk", p, v)
    return jnp.einsum("bthk,hkd->btd", o, wo).sum()


def attention_args(key: jax.Array, b: int = 4, t: int = 128, d: int = 256, h: int = 8) -> tuple:
    ks = jax.random.split(key, 5)
    k = d // h
    params = tuple(jax.random.normal(ks[i], (d, h, k)) * 0.05 for i in range(3)) + (
        jax.random.normal(ks[3], (h, k, d)) * 0.05,)
    return params, jax.random.normal(ks[4], (b, t, d))


def elementwise(params: Any, x: jax.Array) -> jax.Array:
    y = jnp.tanh(x) * 2.0 + jnp.exp(-x * x)
    return (jax.nn.gelu(y) - y.mean()).sum()


def scan_rnn(params: Any, xs: jax.Array) -> jax.Array:
    w, u = params

    def step(h: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
        return jnp.tanh(h @ w + x @ u), None

    h, _ = lax.scan(step, jnp.zeros((xs.shape[1], w.shape[0])), xs)
    return h.sum()


def _layer_norm(x: jax.Array) -> jax.Array:
    mu = x.mean(-1, keepdims=True)
    return (x - mu) * lax.rsqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)


def transformer_loss(params: Any, x: jax.Array) -> jax.Array:
    """Pre-LN blocks: multi-head attention and a GELU MLP."""
    for p in params:
        h = _layer_norm(x)
        q, k, v = (jnp.einsum("btd,dhk->bhtk", h, p[n]) for n in ("wq", "wk", "wv"))
        s = jax.nn.softmax(jnp.einsum("bhtk,bhsk->bhts", q, k) / jnp.sqrt(q.shape[-1]), axis=-1)
        x = x + jnp.einsum("bhts,bhsk,hkd->btd", s, v, p["wo"])
        x = x + jax.nn.gelu(_layer_norm(x) @ p["w1"]) @ p["w2"]
    return (x ** 2).mean()


def transformer_args(key: jax.Array, layers: int = 2, b: int = 4, t: int = 64, d: int = 128, h: int = 4) -> tuple:
    ks = iter(jax.random.split(key, 6 * layers + 1))
    k = d // h
    params = [{"wq": jax.random.normal(next(ks), (d, h, k)) * 0.05,
               "wk": jax.random.normal(next(ks), (d, h, k)) * 0.05,
               "wv": jax.random.normal(next(ks), (d, h, k)) * 0.05,
               "wo": jax.random.normal(next(ks), (h, k, d)) * 0.05,
               "w1": jax.random.normal(next(ks), (d, 4 * d)) * 0.05,
               "w2": jax.random.normal(next(ks), (4 * d, d)) * 0.05} for _ in range(layers)]
    return params, jax.random.normal(next(ks), (b, t, d))


def cost_cases() -> list[tuple[str, Callable[..., Any], tuple, bool]]:
    """The programs measured: (name, function, arguments, whether matmuls dominate its
    FLOPs), shared with ``tests/test_costs.py``."""
    key = jax.random.key(0)
    big = (jax.random.normal(key, (256, 256)), jax.random.normal(key, (128, 256)))
    return [
        # name, function, args, matmul-dominated (ratio asserted within 10%)
        ("mlp", mlp, mlp_args(key), True),
        ("mlp grad", mlp_loss_grad, mlp_args(key), True),
        ("cnn (conv SAME, stride 2)", cnn, cnn_args(key), True),
        ("attention (einsum)", attention, attention_args(key), True),
        ("transformer x2, value_and_grad", jax.value_and_grad(transformer_loss), transformer_args(key), True),
        ("rnn (scan x 16)", scan_rnn, (big, jax.random.normal(key, (16, 32, 128))), True),
        ("element-wise", elementwise, (None, jax.random.normal(key, (512, 512))), False),
    ]


def compare(fn: Callable[..., Any], args: tuple) -> dict[str, float]:
    jitted = jax.jit(fn)
    traced = jitted.trace(*args)
    t0 = time.perf_counter()
    est = program_costs(traced.jaxpr)
    t_est = time.perf_counter() - t0
    cost = traced.lower().compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0] if cost else {}
    xla_flops = float(cost.get("flops", 0.0))
    return {"estimate": est.flops, "xla": xla_flops, "ratio": est.flops / xla_flops if xla_flops else float("nan"),
            "estimate_s": t_est, "est_bytes": est.bytes, "xla_bytes": float(cost.get("bytes accessed", 0.0)),
            "est_transcendentals": est.transcendentals,
            "xla_transcendentals": float(cost.get("transcendentals", 0.0))}


def main() -> None:
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}:{jax.devices()[0].device_kind}")
    print(f"{'model':32s} {'jaxviz':>12s} {'XLA':>12s} {'ratio':>7s} {'est. time':>10s} "
          f"{'bytes (unfused)':>16s} {'XLA bytes':>11s}")
    for name, fn, args, _ in cost_cases():
        r = compare(fn, args)
        print(f"{name:32s} {fmt_flops(r['estimate']):>12s} {fmt_flops(r['xla']):>12s} {r['ratio']:7.3f} "
              f"{r['estimate_s'] * 1e3:8.2f}ms {fmt_bytes(r['est_bytes']):>16s} {fmt_bytes(r['xla_bytes']):>11s}")


if __name__ == "__main__":
    main()
