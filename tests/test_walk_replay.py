"""A sub-jaxpr JAX hands to many calls (a jitted or checkpointed block, traced once) is
walked once by the graph builder and made again for the other calls
(``GraphBuilder._walk_sub``): the graph is the one walking every call would make."""

import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxviz
from jaxviz import tracing

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models  # noqa: E402
import programs  # noqa: E402

TABLE = np.arange(4.0)  # a constant a jitted function closes over: named after its first use


@jax.jit
def scaled(x, w):
    return jnp.tanh(x @ w) * TABLE[:3]


@jax.jit
def layer(x, w):
    return scaled(x, w) + jnp.where(x > 0, x, 0.0)


def layers(x, ws):
    for w in ws:
        x = layer(x, w)
    return layer(x, x).sum()  # the same value twice: no walk it can be made from


def traced_both_ways(monkeypatch, fn, *args):
    """``fn`` traced with walks made again, then walked every time; how many were made again."""
    made_again = []
    replay = tracing.GraphBuilder._replay

    def counted(self, *a):
        made_again.append(1)
        return replay(self, *a)

    monkeypatch.setattr(tracing.GraphBuilder, "_replay", counted)
    fast = jaxviz.trace(fn, *args)
    monkeypatch.setattr(tracing, "REPLAY_WALKS", False)
    slow = jaxviz.trace(fn, *args)
    monkeypatch.setattr(tracing, "REPLAY_WALKS", True)
    return fast, slow, len(made_again)


def same_program(fast, slow):
    assert json.dumps(fast.graph.to_json()) == json.dumps(slow.graph.to_json())
    assert sorted(fast.call_groups.values()) == sorted(slow.call_groups.values())
    assert fast.expand == slow.expand
    assert fast.graph.eqn_count == slow.graph.eqn_count


@pytest.mark.parametrize("wrap", [jax.jit, jax.checkpoint])
def test_wrapped_blocks_are_walked_once_and_drawn_as_before(monkeypatch, wrap):
    step = models.train_step_with(wrap)
    fast, slow, made_again = traced_both_ways(monkeypatch, step, models.init_params(5), models.tokens())
    same_program(fast, slow)
    if wrap is jax.jit:  # one walk per pass, the other four blocks made from it
        assert made_again >= 2 * 4


def test_nested_calls_constants_and_repeated_arguments(monkeypatch):
    ws = [jnp.ones((3, 3)) * k for k in range(4)]
    fast, slow, made_again = traced_both_ways(monkeypatch, layers, jnp.ones((3, 3)), ws)
    same_program(fast, slow)
    assert made_again >= 3
    consts = [n.label for n in fast.graph.nodes if n.kind == "const"]
    assert consts and all(label == consts[0] for label in consts)  # each copy's named as the first
    assert consts[0].startswith("line ") and "* TABL" in consts[0]  # where it is used


@pytest.mark.parametrize("name", ["nnx_remat", "haiku_transformer", "equinox_scan_layers", "optax_chain_clip"])
def test_real_programs_are_drawn_as_before(monkeypatch, name):
    case = programs.load(name)
    fast, slow, _ = traced_both_ways(monkeypatch, case.fn, *case.args)
    same_program(fast, slow)
