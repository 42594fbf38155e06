"""FLOP and byte estimates: per equation against hand-computed values, per group on the
graph, and over whole programs against XLA's own ``cost_analysis()``."""

import importlib.util
import json
import pathlib

import jax
import jax.numpy as jnp
import pytest
from jax import lax
from zoo import ZOO, pallas_matmul

import jaxviz
from jaxviz import costs
from jaxviz.costs import eqn_cost, program_costs

BENCH = pathlib.Path(__file__).resolve().parent.parent / "benchmarks" / "bench_costs.py"


def _bench():
    spec = importlib.util.spec_from_file_location("bench_costs", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def only_eqn(fn, *args, primitive=None):
    eqns = jax.make_jaxpr(fn)(*args).eqns
    if primitive is not None:
        eqns = [e for e in eqns if e.primitive.name == primitive]
    assert len(eqns) == 1, [e.primitive.name for e in eqns]
    return eqns[0]


def xla_flops(fn, *args):
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    if isinstance(cost, (list, tuple)):
        cost = cost[0]
    return cost.get("flops", 0.0)  # absent when zero


# ---------------------------------------------------------------------- per equation
def test_matmul_is_two_flops_per_multiply_add():
    a, b = jnp.ones((7, 11)), jnp.ones((11, 5))
    c = eqn_cost(only_eqn(jnp.matmul, a, b))
    assert c.flops == 2 * 7 * 11 * 5
    assert c.transcendentals == 0
    assert c.bytes == 4 * (7 * 11 + 11 * 5 + 7 * 5)  # f32 read + written


def test_batched_dot_general_counts_batch_and_contracted_dims():
    a, b = jnp.ones((3, 4, 6, 5)), jnp.ones((3, 5, 6, 2))
    dn = (((3, 2), (1, 2)), ((0,), (0,)))  # contract (5, 6), batch 3
    e = only_eqn(lambda x, y: lax.dot_general(x, y, dn), a, b)
    assert eqn_cost(e).flops == 2 * 3 * 4 * 2 * (5 * 6)


def test_conv_valid_padding():
    x, w = jnp.ones((2, 3, 10, 12)), jnp.ones((8, 3, 3, 5))  # NCHW, OIHW
    e = only_eqn(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "VALID"), x, w)
    out_h, out_w = 10 - 3 + 1, 12 - 5 + 1
    assert eqn_cost(e).flops == 2 * 2 * 8 * out_h * out_w * 3 * 3 * 5


def test_conv_same_padding_counts_only_taps_inside_the_input():
    # 1-D: input 4, kernel 3, SAME (pad 1 each side): output 4; taps hitting padding:
    # output 0 misses kernel tap 0, output 3 misses kernel tap 2 → 4 * 3 - 2 = 10 taps.
    x, w = jnp.ones((1, 1, 4)), jnp.ones((1, 1, 3))
    e = only_eqn(lambda a, b: lax.conv_general_dilated(a, b, (1,), "SAME"), x, w)
    assert eqn_cost(e).flops == 2 * 10


def test_conv_strided_grouped_nhwc():
    x, w = jnp.ones((2, 8, 8, 6)), jnp.ones((3, 3, 2, 12))  # 3 groups of 2 input features
    fn = lambda a, b: lax.conv_general_dilated(  # noqa: E731
        a, b, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=3)
    e = only_eqn(fn, x, w)
    # SAME, stride 2, input 8, kernel 3: padding (0, 1); outputs 0..3 read inputs 2o-0+k.
    taps_1d = sum(1 for o in range(4) for k in range(3) if 0 <= 2 * o + k < 8)
    assert eqn_cost(e).flops == 2 * 2 * 12 * 2 * taps_1d ** 2
    assert eqn_cost(e).flops == xla_flops(fn, x, w)


def test_conv_matches_xla_with_dilations():
    x, w = jnp.ones((1, 4, 9, 9)), jnp.ones((5, 4, 3, 3))
    fn = lambda a, b: lax.conv_general_dilated(  # noqa: E731
        a, b, (1, 1), ((2, 1), (1, 2)), lhs_dilation=(2, 1), rhs_dilation=(1, 2))
    assert eqn_cost(only_eqn(fn, x, w)).flops == xla_flops(fn, x, w)


def test_einsum_costs_its_dot_generals():
    a, b, c = jnp.ones((4, 6, 8)), jnp.ones((4, 8, 3)), jnp.ones((3, 5))
    p = program_costs(jax.make_jaxpr(lambda x, y: jnp.einsum("bij,bjk->bik", x, y))(a, b))
    assert p.flops == 2 * 4 * 6 * 8 * 3
    chain = program_costs(jax.make_jaxpr(lambda x, y, z: jnp.einsum("bij,bjk,kl->bil", x, y, z))(a, b, c))
    # (4·6·8)·3 then (4·6·3)·5, whichever order einsum picks costs the same here
    assert chain.flops in (2 * 4 * 6 * 8 * 3 + 2 * 4 * 6 * 3 * 5, 2 * 4 * 8 * 3 * 5 + 2 * 4 * 6 * 8 * 5)
    assert chain.flops == xla_flops(lambda x, y, z: jnp.einsum("bij,bjk,kl->bil", x, y, z), a, b, c)


@pytest.mark.parametrize("fn, flops, trans", [
    (lambda x: x + x, 1, 0),
    (lambda x: x * 3.0, 1, 0),
    (lambda x: jnp.maximum(x, 0.0), 1, 0),
    (lambda x: jnp.tanh(x), 0, 1),
    (lambda x: jnp.exp(x), 0, 1),
    (lambda x: lax.rsqrt(x), 0, 1),
    (lambda x: x ** 2, 1, 0),  # integer_pow: one multiply
    (lambda x: x ** 3, 2, 0),
    (lambda x: x ** 5, 3, 0),  # x², x⁴, x⁴·x
    (lambda x: jax.nn.sigmoid(x), 3, 1),  # as XLA expands logistic
])
def test_elementwise_per_element(fn, flops, trans):
    x = jnp.ones((16, 32))
    e = jax.make_jaxpr(fn)(x).eqns[-1]
    c = eqn_cost(e)
    assert (c.flops, c.transcendentals) == (flops * 16 * 32, trans * 16 * 32)
    assert c.bytes == sum(4 * 16 * 32 if v.aval.shape else 4 for v in e.invars) + 4 * 16 * 32
    assert c.flops == xla_flops(fn, x)


def test_reduction_and_data_movement():
    x = jnp.ones((8, 100))
    assert eqn_cost(only_eqn(lambda a: a.sum(axis=1), x, primitive="reduce_sum")).flops == 8 * 99
    for fn in (lambda a: a.T, lambda a: a.reshape(800), lambda a: a[:, :10]):
        e = jax.make_jaxpr(fn)(x).eqns[-1]
        c = eqn_cost(e)
        assert c.flops == 0 and c.bytes > 0


def test_scan_multiplies_by_length_cond_takes_the_worst_branch():
    w = jnp.ones((16, 16))

    def body(h, _):
        return h @ w, None

    scanned = jax.make_jaxpr(lambda h: lax.scan(body, h, None, length=9)[0])(w)
    assert program_costs(scanned).flops == 9 * 2 * 16 ** 3

    def branches(p, h):
        return lax.cond(p, lambda v: v @ v @ v, lambda v: v + 1.0, h)

    cond = program_costs(jax.make_jaxpr(branches)(True, w))
    assert cond.flops == 2 * 2 * 16 ** 3 + 1  # + converting the predicate to an index

    loop = program_costs(jax.make_jaxpr(lambda h: lax.while_loop(lambda c: c[0] < 5, lambda c: (c[0] + 1, c[1] @ c[1]), (0, h)))(w))
    assert loop.flops == 2 * 16 ** 3 + 1 + 1  # the body once (+1 add, +1 compare)
    assert any("while" in n for n in loop.notes)


# ---------------------------------------------------------------------- on the graph
def _two_layers(params, x):
    def layer(w, h):
        return jnp.tanh(h @ w)

    for w in params:
        x = layer(w, x)
    return x.sum()


def test_group_sums_add_up_and_reach_the_json():
    params = [jnp.ones((32, 64)), jnp.ones((64, 16))]
    prog = jaxviz.trace(_two_layers, params, jnp.ones((4, 32)))
    total = prog.costs()
    graph = prog.graph
    assert graph.groups[0].flops == total.flops == 2 * 4 * 32 * 64 + 2 * 4 * 64 * 16 + (4 * 16 - 1)
    assert sum(n.flops for n in graph.eqn_nodes()) == total.flops
    layers = [g for g in graph.groups if g.name == "layer"]
    assert [g.flops for g in layers] == [2 * 4 * 32 * 64, 2 * 4 * 64 * 16]
    for g in graph.groups:  # every group is the sum of its nodes and children
        expect = sum(graph.nodes[n].flops for n in g.nodes) + sum(graph.groups[c].flops for c in g.groups)
        assert g.flops == pytest.approx(expect)
    data = json.loads(json.dumps(prog.to_json()))
    assert data["graph"]["groups"][layers[0].id]["flops"] == layers[0].flops
    assert any(n.get("flops") for n in data["graph"]["nodes"])


def test_cond_group_counts_its_worst_branch():
    def f(p, h):
        return lax.cond(p, lambda v: (v @ v) @ v, lambda v: v * 2.0, h)

    prog = jaxviz.trace(f, True, jnp.ones((8, 8)))
    costs.annotate(prog.graph, prog.costs())
    assert prog.graph.groups[0].flops == prog.costs().flops == 2 * 2 * 8 ** 3 + 1  # + the predicate


def test_collapsed_groups_show_cost_and_heat():
    params = [jnp.ones((256, 512)), jnp.ones((512, 128))]  # tens of MFLOPs: worth shading
    prog = jaxviz.trace(_two_layers, params, jnp.ones((64, 256)))
    dot = prog.to_dot(expand=0)
    assert "FLOP" in dot and "%" in dot
    big = max((g for g in prog.graph.groups if g.name == "layer"), key=lambda g: g.flops)
    assert costs.heat_color(costs.heat_level(big.flops / prog.graph.groups[0].flops)) in dot
    html = prog._repr_mimebundle_()["text/html"]
    assert "FLOP" in html
    from rich.console import Console

    console = Console(record=True, width=140)
    console.print(prog)
    assert "FLOP" in console.export_text()


def test_heat_scale_and_formatting():
    levels = [costs.heat_level(f) for f in (0, 1e-4, 1e-3, 1e-2, 0.1, 0.5, 1.0)]
    assert levels == sorted(levels) and levels[0] == 0 and levels[-1] == 1
    assert costs.heat_color(0) == costs.HEAT_STOPS[0] and costs.heat_color(1) == costs.HEAT_STOPS[-1]
    assert costs.fmt_flops(4.2e9) == "4.2 GFLOP"
    assert costs.fmt_bytes(3 * 2 ** 20) == "3 MiB"
    assert costs.cost_label(0, 0) == ""


# ---------------------------------------------------------------------- against XLA
def test_whole_programs_against_xla_cost_analysis(capsys):
    bench = _bench()
    lines = []
    for name, fn, args, matmul_dominated in bench.cost_cases():
        r = bench.compare(fn, args)
        lines.append(f"{name:28s} jaxviz {r['estimate']:.4g}  XLA {r['xla']:.4g}  ratio {r['ratio']:.3f}")
        if "scan" in name:
            # XLA's cost analysis counts a while loop's body once; jaxviz multiplies it by
            # the trip count (16).
            assert r["ratio"] == pytest.approx(16, rel=0.1), (name, r)
        elif matmul_dominated:
            assert r["ratio"] == pytest.approx(1.0, rel=0.10), name
        else:
            assert 0.5 < r["ratio"] < 2.0, name
    with capsys.disabled():
        print("\nFLOPs, jaxviz estimate vs XLA cost_analysis():\n" + "\n".join(lines))


@pytest.mark.parametrize("name", sorted(ZOO))
def test_costs_line_up_with_the_graph(name):
    """The contract ``annotate`` relies on: the graph's equation nodes come in the order
    ``program_costs`` walks the jaxpr (depth first, sub-jaxprs in ``sub_jaxprs`` order)."""
    fn, args, kwargs = ZOO[name]
    prog = jaxviz.trace(fn, *args, **kwargs)
    found = program_costs(prog.jaxpr)
    assert [n.primitive for n in prog.graph.eqn_nodes()] == found.primitives
    assert costs.annotate(prog.graph, found)
    assert [n.flops for n in prog.graph.eqn_nodes()] == [c.flops for c in found.per_eqn]


def test_an_equation_costs_the_same_as_alone_where_its_kind_repeats():
    """``program_costs`` counts each kind of equation once (its primitive on the avals JAX
    shares among values of a type), except where the cost reads params: ``x ** 2`` and
    ``x ** 3``, or two pooling windows, on one array each cost what they cost alone."""
    def f(x):
        def pooled(w):
            return lax.reduce_window(x, 0.0, lax.add, (w, w), (1, 1), "SAME")
        return x ** 2 + x ** 3 + pooled(2) + pooled(3) + jnp.sin(x) + jnp.sin(x * 2)

    closed = jax.make_jaxpr(f)(jnp.ones((8, 8)))
    found = program_costs(closed)
    assert found.per_eqn == [eqn_cost(e) for e in closed.eqns]
    powers = [c.flops for c, p in zip(found.per_eqn, found.primitives) if p == "integer_pow"]
    windows = [c.flops for c, p in zip(found.per_eqn, found.primitives) if p == "reduce_window_sum"]
    assert powers == [64, 128] and windows == [64 * 3, 64 * 8]


def test_costs_out_of_order_are_refused():
    prog = jaxviz.trace(ZOO["scan"][0], *ZOO["scan"][1], **ZOO["scan"][2])
    found = program_costs(prog.jaxpr)
    shuffled = costs.ProgramCosts(found.per_eqn[::-1], found.primitives[::-1], found.total, found.notes)
    assert found.primitives != shuffled.primitives
    assert not costs.annotate(prog.graph, shuffled)
    assert all(n.flops == 0 for n in prog.graph.eqn_nodes())


@pytest.mark.parametrize("grid", [(1, 1), (2, 2), (4, 2)])
def test_a_pallas_kernel_counts_once_per_point_of_its_grid(grid):
    """Each instance of the kernel multiplies one block: the whole product is the
    blocks' sum, whatever the grid (2·M·N·K FLOPs)."""
    x, y = jnp.ones((16, 32)), jnp.ones((32, 8))
    closed = jax.make_jaxpr(lambda x, y: pallas_matmul(x, y, grid))(x, y)
    assert costs.program_costs(closed).flops == 2 * 16 * 8 * 32
