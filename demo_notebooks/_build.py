"""Writes the demo notebooks (without outputs) from the cell lists below.

    .venv/bin/python demo_notebooks/_build.py        # rewrite every notebook
    .venv/bin/python demo_notebooks/_build.py 03     # only those whose name starts with 03

The notebooks are the source of truth for users; this script is the source of truth for
maintainers: edit a cell here, run it, commit both. ``tests/test_demo_notebooks.py``
executes the notebooks in a fresh kernel and checks their outputs, so a cell's printed
lines (``accuracy 0.95``, ``recompiles 1``) are part of the contract.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
RAISES = "raises-exception"


def md(text: str):
    return new_markdown_cell(text.strip("\n"))


def code(src: str, *tags: str):
    cell = new_code_cell(src.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def notebook(cells: list) -> nbformat.NotebookNode:
    for i, c in enumerate(cells):  # stable ids: rebuilding changes only what was edited
        c.id = f"{'code' if c.cell_type == 'code' else 'md'}-{i:02d}"
    nb = new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                 "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


SETUP_NOTE = """\
Everything here runs on the CPU in well under a minute; when JAX sees a GPU (or TPU) it
uses it instead, with no change to the code: every graph's summary line names the device
the cell ran on."""

LEGEND_TABLE = """\
| colour | kind | what it means |
|---|---|---|
| **blue** | traced input | an array the cell (or function) reads. While tracing, JAX replaces it by a *tracer* that knows only its shape and dtype (`f32[]`, `f32[3,4]`); the compiled program is reused for any new value of the same shape and dtype. |
| **orange** | static input | a Python value marked static (`--static NAME`, `static_argnames=`): its *value* is baked into the program and is part of the compilation cache key, so a new value means a new compile. |
| **grey** | constant | a value folded in at trace time: Python numbers the cell reads, arrays created inside the function (`jnp.array([1, 2])`). |
| **red** | captured | a global or closure variable the function reads. Its value at trace time is baked into the compiled program: changing the global afterwards does **not** change what the jitted function computes (notebook 02). |
| **green** | output | what the cell assigns, or what the function returns. |
| **purple, dashed edge** | weak type | a value that came from a Python scalar (`2`, `3.0`): it is *weakly typed* (`~f32[]`), it takes the dtype of whatever it is combined with instead of promoting it. |
| white box / 3-D box | equation / group | one primitive operation (`mul`, `dot_general`, ...); a group is a sub-program (a loop body, a `cond` branch, a call of your function, a Flax module) drawn as one 3-D box with its equation count until expanded. |
| pale → dark red 3-D box | a group's cost | a collapsed group is filled by its share of the program's FLOPs (its FLOPs and bytes are written on it): the darkest box is where the work is (notebook 05). |"""

# --------------------------------------------------------------------------- 01
NB01 = [
    md("""
# 01 · A tour of jaxviz: see what JAX traced

JAX does not run your Python code on your arrays when it compiles it: it **traces** it.
`jax.jit` (and `grad`, `vmap`, ...) call your function once with placeholder values
(*tracers*) that carry only a shape and a dtype, record every operation into a small
program (a **jaxpr**), and hand that to the XLA compiler. Everything that is surprising
about JAX, the recompiles, the stale globals, the errors about "concrete values",
follows from that one step, so jaxviz shows it to you: every traced program is drawn as a
dataflow graph, each input coloured by what JAX did with it.

This notebook is the tour: the magics, and the examples of the JAX course notes
(`make_jaxpr`, `jit`, `grad`, `vmap`, `cond`/`while_loop`/`fori_loop`/`scan`, pytrees)
seen through them.

In JupyterLab with the jaxviz extension (`bash scripts/demo.sh` opens these notebooks
there), each graph is interactive: click a group to open or close it, search, export;
and the **jaxviz** sidebar panel (command palette: *jaxviz: Show panel*) lists the
session's traced functions, recompiles, stale captured globals and devices. Elsewhere
(the HTML copies of `demo.sh --headless`, GitHub, nbviewer) the same outputs show as an
SVG drawing with a collapsible listing.

""" + SETUP_NOTE),
    code("""
%load_ext jaxviz
import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

print("JAX", jax.__version__, "· devices:", jax.devices())
"""),
    md("""
## 1. The first graph: `2*x*x + 3*x + 3`

`%%jaxpr` traces the whole cell as one function: names the cell **reads** that hold
arrays become its traced inputs, names it **assigns** (and its last expression) become
its outputs. The cell then runs through `jax.jit` and its names are bound as usual, so
`y` exists after the cell, as it would without the magic.
"""),
    code("""
x = jnp.float32(3.0)
"""),
    code("""
%%jaxpr
y = 2*x*x + 3*x + 3
y
"""),
    md("""
### How to read it

""" + LEGEND_TABLE + """

Here `x` is blue: a traced `f32[]`. The five white boxes are the five equations JAX
recorded, two `mul`s by the literals `2.0` and `3.0`, `mul`, and two `add`s: the same
program `jax.make_jaxpr` prints in the course notes. `y` is the green output. The line
above the drawing is the summary: equations, inputs by kind, the device the cell ran on,
and how long tracing, lowering, compiling and running took.

The cell's names are bound as for any other cell:
"""),
    code("""
print(type(y).__name__, y)
"""),
    md("""
`--text` prints the summary and the jaxpr as JAX writes it. Compare with
`jax.make_jaxpr(f)(3)` from the course notes: the same five equations, on `i32` there
because it was called with the Python int `3`:
"""),
    code("""
%%jaxpr --text
y2 = 2*x*x + 3*x + 3
"""),
    code("""
def f(x):
    return 2*x*x + 3*x + 3

jax.make_jaxpr(f)(3)
"""),
    md("""
## 2. `jit`: a function, one call

`%jaxpr fn(args)` (one `%`: the line magic) shows the graph of one call of a function
without running it. It works for plain functions, `jax.jit`-ed ones (their
`static_argnums` apply) and transformed ones (`jax.grad(f)`, `jax.vmap(f)`).

A Python `for` loop over a static range is **unrolled** while tracing: `x ** n` computed by
repeated squaring shows one `mul` per iteration, and `n` (a Python int, static) is
orange:
"""),
    code("""
from functools import partial

@partial(jax.jit, static_argnames="n")
def power(x, n):
    result = x
    for _ in range(n - 1):
        result = result * x
    return result

print("power(3, 4) =", power(jnp.float32(3.0), n=4))
"""),
    code("""
%jaxpr power(jnp.float32(3.0), n=4)
"""),
    md("""
## 3. `grad`: the forward and the backward pass

`jax.grad(f)` traces `f` twice over: once forward (a `jvp`, the derivative carried along)
and once backward (its `transpose`). jaxviz keeps the two passes apart as groups, so you
can see what the gradient costs. From the course notes: `f(x, y) = 2*x*x + 3*y + 3`,
derivative by `x` and by both arguments.
"""),
    code("""
def f2(x, y):
    return 2*x*x + 3*y + 3

print("df/dx        =", jax.grad(f2)(10.0, 5.0))
print("(df/dx, df/dy) =", jax.grad(f2, argnums=(0, 1))(10.0, 5.0))
"""),
    code("""
%jaxpr --expand all jax.grad(f2, argnums=(0, 1))(10.0, 5.0)
"""),
    md("""
The inputs are dashed purple: `10.0` and `5.0` are Python floats, so they are traced as
*weakly typed* `~f32[]`. The `forward` group computes `f` (JAX's `jvp`: the values and
their tangents); the `backward` group runs them in reverse (JAX's `transpose`) to get both
partial derivatives.

A slightly bigger example from the autodiff notes: logistic regression. `loss` reads the
global arrays `inputs` and `targets`: they are drawn **red**, captured, because JAX bakes
them into the program at trace time (notebook 02 shows why that matters).
"""),
    code("""
def sigmoid(x):
    return 0.5 * (jnp.tanh(x / 2) + 1)

def predict(W, b, inputs):
    return sigmoid(jnp.dot(inputs, W) + b)

inputs = jnp.array([[0.52, 1.12, 0.77],
                    [0.88, -1.08, 0.15],
                    [0.52, 0.06, -1.30],
                    [0.74, -2.49, 1.39]])
targets = jnp.array([True, True, False, True])

def loss(W, b):
    preds = predict(W, b, inputs)
    label_probs = preds * targets + (1 - preds) * (1 - targets)
    return -jnp.sum(jnp.log(label_probs))

key, W_key, b_key = jax.random.split(jax.random.PRNGKey(0), 3)
W = jax.random.normal(W_key, (3,))
b = jax.random.normal(b_key, ())
W_grad, b_grad = jax.grad(loss, (0, 1))(W, b)
print("W_grad", W_grad, " b_grad", b_grad)
"""),
    code("""
%jaxpr --expand 2 jax.grad(loss, (0, 1))(W, b)
"""),
    md("""
Your own functions are groups too: `predict` and `sigmoid` are calls inside `loss`, in
both passes.

## 4. `vmap`: the batched convolution

From the vectorization notes: a 1-D convolution written with a Python loop over the
output positions. The loop is unrolled while tracing, three slices and three dot
products:
"""),
    code("""
x = jnp.arange(5.0)
w = jnp.array([2., 3., 4.])

def convolve(x, w):
    output = []
    for i in range(1, len(x)-1):
        output.append(jnp.dot(x[i-1:i+2], w))
    return jnp.array(output)

print(convolve(x, w))
"""),
    code("""
%jaxpr convolve(x, w)
"""),
    md("""
`jax.vmap(convolve)` maps it over a batch without rewriting it: the traced program is the
same three dot products, now with a batch dimension (`f32[2,5]` in, `f32[2,3]` out),
inside a `vmap` group.
"""),
    code("""
xs = jnp.stack([x, x])
ws = jnp.stack([w, w])
auto_batch_convolve = jax.vmap(convolve)
print(auto_batch_convolve(xs, ws))
"""),
    code("""
%jaxpr auto_batch_convolve(xs, ws)
"""),
    md("""
`in_axes=[0, None]` batches only `x`: one set of weights `w` for every row. Compare the
input shapes in the two graphs: `w` is now `f32[3]`, not `f32[2,3]`.
"""),
    code("""
batch_convolve_v3 = jax.vmap(convolve, in_axes=[0, None])
print(batch_convolve_v3(xs, w))
"""),
    code("""
%jaxpr batch_convolve_v3(xs, w)
"""),
    md("""
Every mapped argument must have the same size along its mapped axis; the course notes'
example maps a `2×3` and a `4×3` array together:
"""),
    code("""
a = jnp.array([[1, 2, 3], [0, 1, 2]])  # 2 × 3
b = jnp.array([[1, 2, 3], [0, 0, 0], [1, 2, 3], [0, 1, 2]])  # 4 × 3
jax.vmap(lambda a1, a2: a1 * a2)(a, b)
""", RAISES),
    md("""
## 5. Under `jax.numpy`: `lax`, and immutable arrays

`jax.numpy` is a layer over `jax.lax`, itself a thin layer over XLA's operations.
*Thinking in JAX* shows it with `jnp.convolve`: its graph holds the private `jit`s of
its implementation (`jit: _conv`, `jit: _flip`, the kernel reversed) and, at the bottom,
one `conv_general_dilated`, the general batched convolution of neural networks.
"""),
    code("""
kernel = jnp.array([1.0, 2.0, 1.0])
signal = jnp.ones(10)
%jaxpr --expand all jnp.convolve(kernel, signal)
"""),
    md("""
JAX arrays are immutable: `arr[0] = 10` is an error, `arr.at[0].set(10)` returns an
updated copy, a `scatter` in the program. And an index past the end is not an error: it
is clamped to the last element (`arr[11]` is `9`), another difference from NumPy to know
about.
"""),
    code("""
arr = jnp.arange(10)
"""),
    code("""
%%jaxpr
updated = arr.at[0].set(10)
past_the_end = arr[11]
"""),
    code("""
print(updated, past_the_end)
"""),
    md("""
## 6. Control flow: `cond`, `while_loop`, `fori_loop`, `scan`

Python `if` and `while` cannot branch on a traced value (the value is not known while
tracing: notebook 02), so JAX has structured control flow primitives that take the
*functions* for each branch or body. Each is one equation holding sub-programs, and
jaxviz draws each sub-program as a group: `branch 0` / `branch 1` of a `cond`,
`cond_jaxpr` / `body_jaxpr` of a `while`, the body of a `scan`. When the body is one of
your functions it is named after it.

`--expand N` chooses how deep the drawing opens (`0`: only the top level, `all`:
everything; the default, `auto`, opens as deep as fits on a screen).
"""),
    code("""
def clip_or_negate(x):
    def keep(v):
        return jnp.minimum(v, 10.0)
    def negate(v):
        return -v
    return lax.cond(x.sum() > 0, keep, negate, x)

def double_until(x, limit):
    def not_done(v):
        return v.sum() < limit
    def double(v):
        return v * 2
    return lax.while_loop(not_done, double, x)

def weighted_sum(x, n):
    def add_term(i, acc):
        return acc + i * x
    return lax.fori_loop(0, n, add_term, jnp.zeros_like(x))

def cumulative_sum(xs):
    def step(carry, x):
        carry = carry + x
        return carry, carry
    total, running = lax.scan(step, 0.0, xs)
    return total, running

v = jnp.array([1.0, 2.0, 3.0])
print("cond      ", clip_or_negate(v))
print("while_loop", double_until(v, 100.0))
print("fori_loop ", weighted_sum(v, 4))
print("scan      ", cumulative_sum(v))
"""),
    code("""
%jaxpr --expand all clip_or_negate(v)
"""),
    code("""
%jaxpr --expand all double_until(v, 100.0)
"""),
    md("""
`fori_loop` with bounds JAX can see is a `while` loop whose carry holds the counter `i`
(or a `scan` when the trip count is static and you differentiate through it): the
`add_term` call is inside the body.
"""),
    code("""
%jaxpr --expand all weighted_sum(v, 4)
"""),
    code("""
%jaxpr --expand 1 cumulative_sum(v)
"""),
    md("""
With `--expand 1` the `scan` is open but the `step` call inside it is one box:
`--expand all` opens it. In JupyterLab with the jaxviz extension, click a group to open
or close it.

## 7. Pytrees and the `Program` object

Inputs can be any pytree (nested dicts, lists, tuples of arrays, as neural network
parameters are): each leaf is one input, named by its path. `-o VAR` keeps the traced
`jaxviz.Program` for inspection from Python.
"""),
    code("""
params = {"w": jnp.ones((3, 2)), "b": jnp.zeros(2)}
batch = jnp.arange(12.0).reshape(4, 3)
"""),
    code("""
%%jaxpr -o prog
hidden = jnp.tanh(batch @ params["w"] + params["b"])
out = hidden.sum()
"""),
    code("""
print(prog.summary())
for i in prog.inputs:
    print(" ", i.describe())
print("outputs:", prog.output_names)
print("equations:", [n.label for n in prog.graph.eqn_nodes()])
"""),
    md("""
`prog.graph` is the model every renderer reads (`prog.to_dot()` for Graphviz,
`prog.graph.to_json()` for the browser: the `application/vnd.jaxviz+json` output the
JupyterLab extension draws), and `prog.text()` the jaxpr.

Next: **02 · jit pitfalls**, the classic traps, each shown and explained.
"""),
]

# --------------------------------------------------------------------------- 02
NB02 = [
    md("""
# 02 · jit pitfalls, seen and explained

`jax.jit` compiles what your function did **while it was traced**, once per input shape,
dtype and static value, then reuses the compiled program. Every classic trap follows
from that:

1. a global read inside a jitted function, changed afterwards: the result is stale;
2. `print` inside a jitted function runs only while tracing;
3. a Python `if` on a traced value: an error (fixed with `static_argnames`, or `lax.cond`);
4. `x.reshape(jnp.array(x.shape).prod())` fails, `np.prod` works: static vs traced operations;
5. boolean-mask indexing `x[x < 0]` inside `jit`: a shape that depends on the data;
6. changing a `static_argnums` value: one compile per value.

Each is shown, then explained with what jaxviz reports. `%load_ext jaxviz` switches on
two helpers for every cell, not only the `%%jaxpr` ones: the **recompilation tracker**,
which also checks after each cell whether a global baked into a compiled function has
changed since, and the **tracer error explainer**, which shows, above JAX's traceback,
which value was traced, why, and how to fix it. Cells that fail on purpose are tagged
`raises-exception`, so the notebook runs top to bottom.

""" + SETUP_NOTE),
    code("""
%load_ext jaxviz
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

print("JAX", jax.__version__, "· devices:", jax.devices())
"""),
    md("""
## 1. A global read inside a jitted function

The course notes' example: `add_g` reads the global `g`.
"""),
    code("""
g = 0.0

def add_g(x):
    return x + g

jit_add_g = jax.jit(add_g)
print("first call:", jit_add_g(3.0))
"""),
    md("""
What did `jit` compile? `g` is drawn **red**: *captured*. JAX read its value, `0.0`, while
tracing and folded it into the program; it is not an input.
"""),
    code("""
%jaxpr add_g(3.0)
"""),
    md("""
So changing the global afterwards does not change what the compiled function computes:
the call below reuses the program compiled with `g = 0.0`, and returns `4.0` where plain
Python returns `14.0`. jaxviz notices: after the cell, the tracker compares the values
baked into compiled functions with the globals' current values, and warns (on stderr,
under the cell's output) that `add_g` still uses `g = 0.0`.
"""),
    code("""
g = 10.0  # update the global
print("jit_add_g(4.0) =", jit_add_g(4.0), "  plain Python add_g(4.0) =", add_g(4.0))
print(f"stale: {float(jit_add_g(4.0)) != add_g(4.0)}")
"""),
    md("""
Worse, the result depends on the cache: a call with a new shape traces again, reads the
new `g`, and gets `14`. The same function now answers with two different values of `g`:
"""),
    code("""
print("jit_add_g(jnp.array([4.0])) =", jit_add_g(jnp.array([4.0])))
"""),
    md("""
**Fix**: pass what changes as an argument. Then `g` is traced (blue), a new value reuses
the compiled program *and* is used:
"""),
    code("""
@jax.jit
def add(x, g):
    return x + g

print(add(4.0, 0.0), add(4.0, 10.0))
"""),
    code("""
%jaxpr add(4.0, g)
"""),
    md("""
## 2. `print` inside `jit` runs only while tracing

From *Thinking in JAX*: `f` prints its arguments. The first call traces it, so the prints
run, and show **tracers** (`JitTracer(float32[3,4])`), not numbers. The second call, with
the same shapes, reuses the compiled program: no Python runs, nothing is printed.
"""),
    code("""
@jax.jit
def f(x, y):
    print("Running f():")
    print(f"  x = {x}")
    print(f"  y = {y}")
    result = jnp.dot(x + 1, y + 1)
    print(f"  result = {result}")
    return result

rng = np.random.default_rng(0)
x = rng.standard_normal((3, 4), dtype=np.float32)
y = rng.standard_normal(4, dtype=np.float32)
print("first call  ->", f(x, y))
"""),
    code("""
x2 = rng.standard_normal((3, 4), dtype=np.float32)
y2 = rng.standard_normal(4, dtype=np.float32)
print("second call ->", f(x2, y2))
"""),
    md("""
jaxviz traces the function itself, so it sees that output and reports it on the graph
(*printed while tracing: runs once per compile, not on every call*); it is also kept on
the `Program` as `trace_output`:
"""),
    code("""
%jaxpr -o f_program f(x, y)
"""),
    code("""
print("trace-time output captured by jaxviz:")
print(f_program.trace_output)
"""),
    md("""
Any side effect behaves the same way. The course notes' `make_jaxpr` example appends
its argument to a global list: what ends up in the list is the tracer, not the value,
and it is useless after the trace (using it raises an `UnexpectedTracerError`).
"""),
    code("""
global_list = []

def f_side_effect(x):
    global_list.append(x)  # side effect
    print(x)  # side effect
    return 2*x*x + 3*x + 3

print(jax.make_jaxpr(f_side_effect)(3))
print("global_list:", global_list)
"""),
    md("""
**Fix**: `jax.debug.print` is an operation *in* the program (a `debug_callback`
equation), so it runs on every call, with the values:
"""),
    code("""
@jax.jit
def f_debug(x, y):
    result = jnp.dot(x + 1, y + 1)
    jax.debug.print("result = {r}", r=result)
    return result

f_debug(x, y)
f_debug(x2, y2);
"""),
    md("""
## 3. Python `if` on a traced value

`neg` is traced like any argument: while tracing it has no value, only a type
(`bool[]`), so Python cannot decide which branch to take.
"""),
    code("""
@jax.jit
def negate_if(x, neg):
    return -x if neg else x

negate_if(1, True)
""", RAISES),
    md("""
Above JAX's traceback, jaxviz's explanation: the failing expression (`neg`), why it is
traced (an argument of a function jitted without `static_argnums`), the path from the
inputs to it, and the fixes, best first. `%jaxpr` on the call says the same on one
screen:
"""),
    code("""
%jaxpr negate_if(1, True)
""", RAISES),
    md("""
From Python, `jaxviz.explain(exc)` returns the explanation as an object (its `fixes`,
its provenance graph, HTML and text renderings):
"""),
    code("""
import jaxviz

try:
    negate_if(1, True)
except jax.errors.TracerBoolConversionError as exc:
    explanation = jaxviz.explain(exc)
print(explanation.headline())
for fix in explanation.fixes:
    print(f" - [{fix.key}] {fix.title}")
"""),
    md("""
**Fix 1: make it static.** With `static_argnames="neg"` the value of `neg` is part of the
cache key: Python sees `True`/`False` while tracing, the `if` works, and the graph
draws `neg` **orange** with its value. Only the taken branch is in the program; each
value of `neg` gets its own compiled version.
"""),
    code("""
@partial(jax.jit, static_argnames="neg")
def negate_if_static(x, neg):
    return -x if neg else x

print(negate_if_static(1, True), negate_if_static(1, False))
"""),
    code("""
%jaxpr negate_if_static(1, neg=True)
"""),
    md("""
**Fix 2: `lax.cond`.** Keep `neg` traced and let the compiled program branch: both
branches are in the graph (`branch 0`, `branch 1`), and one compiled version serves
both values.
"""),
    code("""
@jax.jit
def negate_if_cond(x, neg):
    return lax.cond(neg, lambda v: -v, lambda v: v, x)

print(negate_if_cond(1, True), negate_if_cond(1, False))
"""),
    code("""
%jaxpr --expand all negate_if_cond(1, True)
"""),
    md("""
## 4. Static vs traced *operations*: `jnp.prod` vs `np.prod` of a shape

`x.shape` is static (a tuple of Python ints, known while tracing), but
`jnp.array(x.shape).prod()` turns it into a traced array, and `reshape` needs a
concrete size:
"""),
    code("""
@jax.jit
def flatten_jnp(x):
    return x.reshape(jnp.array(x.shape).prod())

flatten_jnp(jnp.ones((2, 3)))
""", RAISES),
    md("""
The graph of just the size computation shows why: the shape is a grey constant, and
`reduce_prod` is an *equation*, so its result is a tracer, computed at run time.
"""),
    code("""
def size_jnp(x):
    return jnp.array(x.shape).prod()

%jaxpr size_jnp(jnp.ones((2, 3)))
"""),
    md("""
With NumPy the product is computed by Python while tracing: no equation at all, the
reshape gets the concrete `6` (`new_sizes=(6,)` in its parameters). Use `numpy` for what
should be static, `jax.numpy` for what should be traced.
"""),
    code("""
@jax.jit
def flatten_np(x):
    return x.reshape((np.prod(x.shape),))

print(flatten_np(jnp.ones((2, 3))))
"""),
    code("""
%jaxpr --text flatten_np(jnp.ones((2, 3)))
"""),
    md("""
## 5. Boolean-mask indexing inside `jit`

`x[x < 0]` has as many elements as `x` has negatives: a shape that depends on the
values. Outside `jit` that is fine; inside, the output shape must be known while tracing.
"""),
    code("""
def get_negatives(x):
    return x[x < 0]

x = jnp.array(np.random.default_rng(1).standard_normal(10, dtype=np.float32))
print("eager:", get_negatives(x))
"""),
    code("""
jax.jit(get_negatives)(x)
""", RAISES),
    md("""
The same in a `%%jaxpr` cell (the cell is traced too), with jaxviz's hint:
"""),
    code("""
%%jaxpr
negatives = x[x < 0]
""", RAISES),
    md("""
**Fix**: keep the shape fixed. `jnp.where` zeroes the other entries (enough for a sum);
`jnp.nonzero(..., size=N)` pads the indices to a size you choose.
"""),
    code("""
%%jaxpr
masked = jnp.where(x < 0, x, 0.0)
neg_sum = masked.sum()
idx, = jnp.nonzero(x < 0, size=x.shape[0], fill_value=x.shape[0])
padded = jnp.append(x, 0.0)[idx]
"""),
    code("""
print("sum of negatives:", neg_sum, " padded:", padded)
"""),
    md("""
## 6. Static arguments and recompiles

A static argument's value is part of the cache key: every new value compiles a new
version. Fine for a flag with two values; costly for something that takes many (a
step count, a learning rate, a batch size).
"""),
    code("""
@partial(jax.jit, static_argnums=1)
def power(x, n):
    for _ in range(n - 1):
        x = x * x
    return x

for n in [1, 2, 3, 4, 2, 3]:
    power(jnp.float32(1.5), n)
print("compiled versions of power:", power._cache_size())
"""),
    md("""
Four distinct values of `n` (`1, 2, 3, 4`), four compiles; the repeated `2` and `3` were
cache hits. (`_cache_size()` is JAX's own counter, a private API.) The tracker's log of
`power` says the same, with the cause of each compile and its cost:
"""),
    code("""
%jaxviz recompiles power
"""),
    md("""
The graph shows why each value needs its own program: the loop over `range(n - 1)` is
unrolled while tracing, so `n` decides how many equations there are.
"""),
    code("""
%jaxpr power(jnp.float32(1.5), 4)
"""),
    md("""
Next: **03 · training an MLP**, where a recompile hides in the last batch of an epoch.
"""),
]

# --------------------------------------------------------------------------- 03
NB03 = [
    md("""
# 03 · Training an MLP on real data, with the recompilation tracker on

The MLP of the course notes (there `784 → 512 → 512 → 10` on MNIST), scaled to the
handwritten digits that ship with scikit-learn: 1,797 images of 8×8 pixels, so
`64 → 128 → 128 → 10`. Parameters are a pytree (a list of `(w, b)` pairs), the forward
pass is written for one example and batched with `vmap`, and the SGD step is one
`jax.jit`-ed function using `jax.tree_util.tree_map`.

`%jaxviz watch` turns on the **recompilation tracker**: every compile of a jitted
function is recorded with its cause, in terms of *your* arguments, and a fix. The
training loop below has a classic bug that costs one extra compile per run: the last
batch of the epoch is smaller. We catch it, then fix it.

""" + SETUP_NOTE),
    code("""
%load_ext jaxviz
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax import grad, jit, vmap
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import jaxviz

print("JAX", jax.__version__, "· devices:", jax.devices())
"""),
    md("""
## The data: scikit-learn's digits (no download)
"""),
    code("""
digits = load_digits()
X = (digits.data / 16.0).astype(np.float32)  # pixel intensities 0..16 → 0..1
Y = digits.target.astype(np.int32)
X_train, X_test, y_train, y_test = train_test_split(X, Y, test_size=0.2, random_state=0, stratify=Y)
BATCH = 64
print(f"train {X_train.shape}, test {X_test.shape}; "
      f"{len(X_train) // BATCH} full batches of {BATCH} + a last one of {len(X_train) % BATCH}")
"""),
    md("""
## The model: parameters as a pytree, the forward pass for one example
"""),
    code("""
LAYER_SIZES = [64, 128, 128, 10]

def random_layer_params(m, n, key):
    w_key, b_key = jax.random.split(key)
    return jax.random.normal(w_key, (n, m)) * jnp.sqrt(2.0 / m), jnp.zeros((n,))

def init_network_params(sizes, key):
    keys = jax.random.split(key, len(sizes))
    return [random_layer_params(m, n, k) for m, n, k in zip(sizes[:-1], sizes[1:], keys)]

def relu(x):
    return jnp.maximum(0, x)

def model_forward(params, x):  # one example: x is f32[64]
    for w, b in params[:-1]:
        x = relu(jnp.dot(w, x) + b)
    final_w, final_b = params[-1]
    return jnp.dot(final_w, x) + final_b

batched_forward = vmap(model_forward, in_axes=(None, 0))  # params shared, x batched

def loss(params, images, labels):
    logp = jax.nn.log_softmax(batched_forward(params, images))
    return -jnp.mean(jnp.sum(logp * jax.nn.one_hot(labels, 10), axis=1))

@jit
def sgd_update(params, x, y, lr):
    grads = grad(loss)(params, x, y)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

@jit
def predict(params, x):
    return jnp.argmax(batched_forward(params, x), axis=1)

def accuracy(params, x, y):
    return float(jnp.mean(predict(params, x) == y))

params = init_network_params(LAYER_SIZES, jax.random.PRNGKey(0))
print([(w.shape, b.shape) for w, b in params])
"""),
    md("""
What does one training step trace to? The `vmap` of the forward pass, the forward and
backward passes of `grad`, and, inside them, every call of `model_forward` and `relu`
(`relu 1/2`, `relu 2/2`: the same function called for each hidden layer). The six
parameter arrays are traced inputs (blue), named by their pytree path (`params[0][0]` is
the first layer's `w`); the learning rate, a Python float, is traced too, weakly typed,
so changing it never recompiles.
"""),
    code("""
%jaxpr --expand 3 sgd_update(params, X_train[:BATCH], y_train[:BATCH], 0.1)
"""),
    md("""
## Training, with the tracker's live monitor

`%jaxviz watch` shows a live monitor: it updates while the next cells run, one line per
compile with its cause. (It is an ipywidget: live in Jupyter, blank in a static copy
such as the HTML export, where the log printed below is the record. In JupyterLab the
jaxviz sidebar panel's *Recompiles* section shows the same events.)
"""),
    code("""
%jaxviz watch
"""),
    code("""
def batches(x, y, batch_size, rng):
    perm = rng.permutation(len(x))
    for i in range(0, len(x), batch_size):  # the last batch is whatever is left: 29 rows
        idx = perm[i:i + batch_size]
        yield x[idx], y[idx]

EPOCHS = 12
t0 = time.perf_counter()
with jaxviz.watch() as log:  # the tracker's Python API: log.events, log.summary()
    params = init_network_params(LAYER_SIZES, jax.random.PRNGKey(0))
    rng, lr = np.random.default_rng(0), 0.1
    for epoch in range(EPOCHS):
        for xb, yb in batches(X_train, y_train, BATCH, rng):
            params = sgd_update(params, xb, yb, lr)
        lr *= 0.85
        if epoch % 4 == 3:
            print(f"epoch {epoch + 1:2d}  test accuracy {accuracy(params, X_test, y_test):.3f}")
print(f"trained in {time.perf_counter() - t0:.1f} s")
"""),
    md("""
The monitor above shows `sgd_update` compiled **twice** (and `predict` once). The
tracker's record of the second compile says why: `x` and `y` shrank on axis 0 from 64 to 29, the ragged last
batch. Every new shape is a new program, so the first epoch paid for a second compile
(on a big model: minutes), and any code that makes the batch size vary (a last batch, a
bucketed sequence length) pays it again for every new size.
"""),
    code("""
events = [e for e in log.events if e.name == "sgd_update"]
recompiles = [e for e in events if e.count > 1]
print(f"sgd_update compiles {len(events)}, recompiles {len(recompiles)}")
for e in recompiles:
    print("cause:", e.reason())
    print("suggestion:", e.suggestion)
"""),
    md("""
`%jaxviz recompiles FN` shows the log of one function (every compile, its cost and
cause):
"""),
    code("""
%jaxviz recompiles sgd_update
"""),
    md("""
## The fix: every batch the same shape

Two standard fixes: **drop** the remainder (`drop_last=True` in a PyTorch `DataLoader`;
here `len(x) // 64 * 64` examples per epoch, a different subset each epoch thanks to the
shuffle), or **pad** the last batch to 64 rows and give the padding rows weight zero in
the loss, so that every example is still used. We pad: the step takes a `mask`, and the
loss averages over the real rows only.
"""),
    code("""
def padded_batches(x, y, batch_size, rng):
    perm = rng.permutation(len(x))
    for i in range(0, len(x), batch_size):
        idx = perm[i:i + batch_size]
        pad = batch_size - len(idx)
        mask = np.concatenate([np.ones(len(idx), np.float32), np.zeros(pad, np.float32)])
        yield (np.pad(x[idx], ((0, pad), (0, 0))), np.pad(y[idx], (0, pad)), mask)

def masked_loss(params, images, labels, mask):
    logp = jax.nn.log_softmax(batched_forward(params, images))
    per_example = -jnp.sum(logp * jax.nn.one_hot(labels, 10), axis=1)
    return jnp.sum(per_example * mask) / jnp.sum(mask)

@jit
def sgd_update_masked(params, x, y, mask, lr):
    grads = grad(masked_loss)(params, x, y, mask)
    return jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)

t0 = time.perf_counter()
with jaxviz.watch() as log:
    params = init_network_params(LAYER_SIZES, jax.random.PRNGKey(0))
    rng, lr = np.random.default_rng(0), 0.1
    for epoch in range(EPOCHS):
        for xb, yb, mb in padded_batches(X_train, y_train, BATCH, rng):
            params = sgd_update_masked(params, xb, yb, mb, lr)
        lr *= 0.85
print(f"trained in {time.perf_counter() - t0:.1f} s")

events = [e for e in log.events if e.name == "sgd_update_masked"]
print(f"sgd_update_masked compiles {len(events)}, recompiles {sum(e.count > 1 for e in events)}")
"""),
    md("""
One compile, zero recompiles, and the model is as good:
"""),
    code("""
acc = accuracy(params, X_test, y_test)
print(f"accuracy {acc:.3f}")
assert acc > 0.9, acc
"""),
    md("""
A few test digits with the model's prediction:
"""),
    code("""
preds = np.asarray(predict(params, X_test[:12]))
for row in range(2):
    lines = [""] * 8
    for k in range(row * 6, row * 6 + 6):
        img = X_test[k].reshape(8, 8)
        for r in range(8):
            lines[r] += "".join(" .:-=+*#%@"[min(int(v * 9.99), 9)] for v in img[r]) + "   "
    print("\\n".join(lines))
    print("".join(f"pred {p} / true {t}".ljust(11) for p, t in zip(preds[row * 6:row * 6 + 6], y_test[row * 6:row * 6 + 6])))
    print()
"""),
    md("""
`%jaxviz watch off` stops the monitor. Next: **04 · Flax and Optax**, the same task
with a Flax module (Dropout, BatchNorm) and a `TrainState`.
"""),
]

# --------------------------------------------------------------------------- 04
NB04 = [
    md("""
# 04 · Flax and Optax: a model with Dropout and BatchNorm, browsed by layer

The "JAX + Flax + Optax" version of notebook 03, following the course notes: a
`flax.linen` MLP with `Dropout` and `BatchNorm`, an Optax optimizer, and a `TrainState`
that carries the parameters, the optimizer state and BatchNorm's running statistics.

Two things to see with jaxviz:

* the traced `train_step` is grouped **by module**: each `Dense`, `Dropout` and
  `BatchNorm` is a group named after its attribute (`layer1`, `dropout1`, `norm1`), in
  the forward and in the backward pass;
* a change to the `TrainState` between two steps that **recompiles** `train_step`,
  caught and explained by the recompilation tracker.

""" + SETUP_NOTE),
    code("""
%load_ext jaxviz
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import linen as nn
from flax.training import train_state
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import jaxviz

print("JAX", jax.__version__, "· devices:", jax.devices())
"""),
    code("""
digits = load_digits()
X = (digits.data / 16.0).astype(np.float32)
Y = digits.target.astype(np.int32)
X_train, X_test, y_train, y_test = train_test_split(X, Y, test_size=0.2, random_state=0, stratify=Y)
BATCH = 64
"""),
    md("""
## The model

As in the course notes: layers created in `setup`, `train` switches Dropout (random,
needs an `rng` named `"dropout"`) and BatchNorm (batch statistics while training,
running averages in evaluation; the averages live in the `batch_stats` collection, which
`apply` must be allowed to update with `mutable=["batch_stats"]`).
"""),
    code("""
class MLP(nn.Module):
    def setup(self):
        self.layer1 = nn.Dense(features=128)
        self.dropout1 = nn.Dropout(rate=0.2)
        self.norm1 = nn.BatchNorm()
        self.layer2 = nn.Dense(features=128)
        self.dropout2 = nn.Dropout(rate=0.2)
        self.norm2 = nn.BatchNorm()
        self.layer3 = nn.Dense(features=10)

    def __call__(self, x, train: bool = True):
        x = nn.relu(self.layer1(x))
        x = self.dropout1(x, deterministic=not train)
        x = self.norm1(x, use_running_average=not train)
        x = nn.relu(self.layer2(x))
        x = self.dropout2(x, deterministic=not train)
        x = self.norm2(x, use_running_average=not train)
        return self.layer3(x)

model = MLP()
key = jax.random.PRNGKey(0)
key, init_key, drop_key = jax.random.split(key, 3)
variables = model.init({"params": init_key, "dropout": drop_key}, jnp.ones((BATCH, 64)), train=True)
print("collections:", list(variables), "· batch_stats of:", list(variables["batch_stats"]))
print("parameters:", sum(p.size for p in jax.tree_util.tree_leaves(variables["params"])))
"""),
    md("""
Evaluation mode is the simplest graph: `%jaxpr` on a call of `model.apply` shows one group per
module, in call order, each with its equations (`dot_general` and `add` for a `Dense`,
the normalisation arithmetic for a `BatchNorm`; `Dropout` is the identity when not
training, so it has no equations and no group). The parameters are traced inputs, named
by their path in the variables (`variables['params']['layer1']['kernel']`); `train` is a
Python bool that decides which code runs, so it must be static (`--static train`, as
`static_argnames` would be for `jax.jit`; traced, it fails like notebook 02's `if`).
"""),
    code("""
def evaluate(variables, x, train):
    return model.apply(variables, x, train=train)

%jaxpr --static train --expand 3 evaluate(variables, X_test[:BATCH], train=False)
"""),
    md("""
## The `TrainState` and the training step

`TrainState` bundles `apply_fn`, `params`, the optimizer `tx` and its `opt_state`; we add
`batch_stats`. The optimizer is Adam, wrapped in `optax.inject_hyperparams` so that its
learning rate is a value *in* the optimizer state that we can change later (you will see
why below). (The course notes also jit with `donate_argnums=(0,)` to reuse the state's
buffers; on the CPU donation is not implemented, so we leave it out.)
"""),
    code("""
class CustomTrainState(train_state.TrainState):
    batch_stats: Any

state = CustomTrainState.create(
    apply_fn=model.apply,
    params=variables["params"],
    tx=optax.inject_hyperparams(optax.adam)(learning_rate=1e-3),
    batch_stats=variables["batch_stats"],
)

@jax.jit
def train_step(state, x, y, dropout_key):
    def loss_fn(params):
        logits, updates = state.apply_fn(
            {"params": params, "batch_stats": state.batch_stats}, x, train=True,
            rngs={"dropout": dropout_key}, mutable=["batch_stats"])
        loss = optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()
        return loss, updates
    (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
    state = state.apply_gradients(grads=grads, batch_stats=updates["batch_stats"])
    return state, loss

@jax.jit
def predict(state, x):
    logits = state.apply_fn({"params": state.params, "batch_stats": state.batch_stats}, x, train=False)
    return jnp.argmax(logits, -1)
"""),
    md("""
### The training step, by layer

`train_step` traces to a few hundred equations. At the top are the three phases of a
train step: the `forward` pass, the `backward` pass (the model's layers again, in reverse
order) and the `update` (Adam's update, by optimizer transformation and then by
layer). The default view (`--expand auto`) opens the most telling boxes that fit on a
screen: the phases and the model's layers first, each box with its equation count. The state's pytree leaves are traced inputs: BatchNorm's statistics,
the step count, and boxes gathering the parameters and the optimizer state.
"""),
    code("""
xb, yb = X_train[:BATCH], y_train[:BATCH]
%jaxpr -o step_program train_step(state, xb, yb, drop_key)
"""),
    md("""
To browse by layer, open the model inside the forward pass: a `Program`'s `expand` also
takes group ids (their ancestors open too). Each module is now one box, in call order:
`layer1 → relu → dropout1 → norm1 → layer2 → ...`. (In JupyterLab with the jaxviz
extension, click a box to open it; here, a list of ids does the same.) Inside a box:
`Dropout` draws random bits from the traced `dropout_key` and masks with them,
`BatchNorm` computes the batch mean and variance and the running averages.
"""),
    code("""
g = step_program.graph

def path_of(group):
    names = []
    while group.parent is not None:
        names.append(group.name)
        group = g.groups[group.parent]
    return names[::-1]

forward_model = next(grp for grp in g.groups
                     if grp.name == "MLP" and path_of(grp)[0] == "forward")
print(" > ".join(path_of(forward_model)))
step_program.expand = [forward_model.id]
step_program
"""),
    md("""
The same structure as text: the groups named after modules, with their equation
counts, in the forward pass and, in reverse order, in the backward pass.
"""),
    code("""
def show(gid, depth=0, max_depth=5):
    grp = g.groups[gid]
    if depth:
        print("  " * (depth - 1) + f"{grp.repeat or grp.name} ({grp.kind}, {grp.n_eqns} eqns)")
    if depth < max_depth:
        for child in grp.groups:
            if g.groups[child].kind in ("phase", "transform", "call", "scope"):
                show(child, depth + 1, max_depth)

print(step_program.summary())
show(0)
module_groups = sorted({grp.name for grp in g.groups if grp.kind == "scope"})
print("module groups:", ", ".join(module_groups))
"""),
    md("""
## Training

Fixed-shape batches (the remainder dropped, as notebook 03 taught), a fresh dropout key
every step, split from the running key as the notes recommend.
"""),
    code("""
EPOCHS = 10
rng = np.random.default_rng(0)
t0 = time.perf_counter()
with jaxviz.watch() as log:
    for epoch in range(EPOCHS):
        perm = rng.permutation(len(X_train))
        for i in range(len(X_train) // BATCH):
            idx = perm[i * BATCH:(i + 1) * BATCH]
            key, dropout_key = jax.random.split(key)
            state, loss = train_step(state, X_train[idx], y_train[idx], dropout_key)
        if epoch % 3 == 2 or epoch == EPOCHS - 1:
            acc = float(jnp.mean(predict(state, X_test) == y_test))
            print(f"epoch {epoch + 1:2d}  loss {float(loss):.3f}  test accuracy {acc:.3f}")
print(f"trained in {time.perf_counter() - t0:.1f} s; train_step compiled "
      f"{sum(e.name == 'train_step' for e in log.events)} time(s)")
print(f"accuracy {acc:.3f}")
"""),
    md("""
## A `TrainState` change that recompiles

Training is done; now fine-tune with a smaller learning rate. The tempting way is to
give the state a new optimizer:
"""),
    code("""
state_new_tx = state.replace(tx=optax.inject_hyperparams(optax.adam)(learning_rate=1e-4))
key, dropout_key = jax.random.split(key)
with jaxviz.watch() as log:
    _ = train_step(state_new_tx, xb, yb, dropout_key)

events = [e for e in log.events if e.name == "train_step"]
print(f"new tx: train_step recompiles {len(events)}")
for e in events:
    print("cause:", e.reason())
    print("causes:", [c.kind for c in e.causes])
"""),
    md("""
One full recompile (on a real model, minutes). Why: `TrainState`'s `apply_fn` and `tx`
are declared with `pytree_node=False`. They are not leaves but part of the pytree's
**structure** (its treedef), which is part of `jit`'s cache key and compared by
equality, and a newly built optimizer is never equal to the old one (its functions are
new closures). New structure, new program.

Because we built the optimizer with `inject_hyperparams`, the learning rate is a *leaf*
of `opt_state` instead: change the value, keep the structure. But there is still a trap,
and the tracker catches it: set it to a Python float and the leaf changes from a
`float32` array to a weakly typed Python scalar, which is another type, so another
compile:
"""),
    code("""
def with_learning_rate(state, lr):
    hyperparams = dict(state.opt_state.hyperparams, learning_rate=lr)
    return state.replace(opt_state=state.opt_state._replace(hyperparams=hyperparams))

key, dropout_key = jax.random.split(key)
with jaxviz.watch() as log:
    _ = train_step(with_learning_rate(state, 1e-4), xb, yb, dropout_key)

events = [e for e in log.events if e.name == "train_step"]
print(f"python float: train_step recompiles {len(events)}")
for e in events:
    print("cause:", e.reason())
    print("causes:", [c.kind for c in e.causes])
"""),
    md("""
The tracker names the leaf (`state.opt_state.hyperparams['learning_rate']`) and the
change (a typed array became a weakly typed Python scalar). The fix is to keep the type:
a `float32` array, as the optimizer created it. Same structure, same types: the
compiled program is reused.
"""),
    code("""
state = with_learning_rate(state, jnp.asarray(1e-4, dtype=jnp.float32))
with jaxviz.watch() as log:
    for step in range(5):
        key, dropout_key = jax.random.split(key)
        state, loss = train_step(state, X_train[step * BATCH:(step + 1) * BATCH],
                                 y_train[step * BATCH:(step + 1) * BATCH], dropout_key)
print(f"float32 array: train_step recompiles {sum(e.name == 'train_step' for e in log.events)}")
print("learning rate now", state.opt_state.hyperparams["learning_rate"])
"""),
    md("""
`%load_ext jaxviz` also keeps a log for the whole session; `%jaxviz recompiles FN` shows
one function's: the first compile of `train_step`, then the two avoidable ones, with
their causes and costs.
"""),
    code("""
%jaxviz recompiles train_step
"""),
    md("""
Next: **05 · accelerators**: which devices JAX sees, and what compiling and running
cost on each.
"""),
]

# --------------------------------------------------------------------------- 05
NB05 = [
    md("""
# 05 · Accelerators: devices, compile vs run time, cost and memory

Which devices does JAX see, where did a cell run, what did compiling cost compared with
running, and how much work and memory does the compiled program need? jaxviz answers
with `%jaxviz devices`, `%%jaxpr --device D --time` and `jaxviz.profile(fn, *args)`.

On a machine with a GPU, JAX uses it by default and this notebook reports it; on a
CPU-only machine we ask for **two virtual CPU devices**, so that "run on each device" has
more than one to show (`jax_num_cpu_devices`, what JAX's own multi-device tests use; it
must be set before JAX starts its backends, hence the first cell).
"""),
    code("""
import jax

# Two virtual CPU devices (only the CPU backend; a GPU, if any, stays the default device).
jax.config.update("jax_num_cpu_devices", 2)
"""),
    code("""
%load_ext jaxviz
import time

import jax.numpy as jnp
import numpy as np

import jaxviz
from jaxviz.devices import list_devices

print("JAX", jax.__version__, "· default backend:", jax.default_backend())
"""),
    md("""
## 1. The devices JAX sees

`%jaxviz devices` lists every device of every platform JAX can use, the default first,
with its memory: the backend's own statistics on GPUs and TPUs (in use, peak, limit), the
bytes of live JAX arrays on the CPU (which reports none).
"""),
    code("""
%jaxviz devices
"""),
    code("""
all_devices = list_devices()
print(f"devices {len(all_devices)}:", ", ".join(f"{d.platform}:{d.id}" for d in all_devices))
"""),
    md("""
## 2. A cell, timed

`%%jaxpr --time` runs the cell as usual, then a few more times for the steady state, and
adds a **Run** section under the graph:

* **device**: where the executable ran (JAX's default device here: the GPU when there is
  one);
* **time**: trace (Python → jaxpr), lower (jaxpr → StableHLO), compile (XLA), the first
  run, and the steady state (median of `--repeat` runs, 5 by default);
* **XLA cost**: what XLA's `cost_analysis()` counts in the compiled program: FLOPs,
  transcendentals (`tanh`, `exp`, ...), bytes accessed;
* **estimate**: jaxviz's own count from the jaxpr, equation by equation (so it can be
  shown per group on the graph), and how it compares with XLA's;
* **memory**: XLA's `memory_analysis()`: arguments, outputs, temporaries;
* **achieved**: FLOP/s and bytes/s over the steady state.

The collapsed groups of the graph carry their share of the FLOPs and bytes, on a heat
scale from pale (cheap) to dark red (the most expensive group).
"""),
    code("""
key = jax.random.PRNGKey(0)
x = jax.random.normal(key, (256, 256))
w = jax.random.normal(jax.random.fold_in(key, 1), (256, 256)) / 16
"""),
    code("""
%%jaxpr --time -o layer_program
h = jnp.tanh(x @ w)
out = (h @ w.T).sum()
"""),
    code("""
report = layer_program.run_report
print(report.summary())
print({stage: f"{seconds * 1e3:.2f} ms" for stage, seconds in report.timings.items()})
"""),
    md("""
## 3. The same cell on another device

`--device` names where to run (`cpu:1`, `gpu:0`, a `jax.Device` variable): the cell's
array inputs are placed there and the program is compiled for it. Its outputs stay on
that device.
"""),
    code("""
%%jaxpr --device cpu:1 --time --quiet -o on_cpu1
h1 = jnp.tanh(x @ w)
out1 = (h1 @ w.T).sum()
"""),
    code("""
# rtol: on a GPU, float32 matmuls round their inputs to TF32 by default (see
# jax_default_matmul_precision), so the two devices agree to about 1e-4, not 1e-6.
print("out1 lives on", out1.devices(), "· same value:", bool(jnp.allclose(out, out1, rtol=1e-3)))
on_cpu1.run_report
"""),
    md("""
## 4. Every device, from Python: `jaxviz.profile`

`jaxviz.profile(fn, *args, device=D)` does the same for a function call: trace, lower,
compile and run on `D`, then time the steady state. The first call on each device
compiles for that device; its result stays there.
"""),
    code("""
@jax.jit
def layer(x, w):
    return (jnp.tanh(x @ w) @ w.T).sum()

for d in all_devices:
    r = jaxviz.profile(layer, x, w, device=d)
    print(f"ran on {r.device}: result {float(r.result):.3f} on {r.result.devices()}  "
          f"compile {r.timings['compile'] * 1e3:.1f} ms, then {r.timings['steady'] * 1e3:.2f} ms per call")
"""),
    md("""
## 5. Compile time vs run time

The first call of a jitted function pays for tracing, lowering and compiling; every
later call with the same shapes only runs. JAX's ahead-of-time API splits those steps,
so each can be timed alone: `jax.jit(f).trace(...)`, `.lower()`, `.compile()`, then the
compiled executable. (JAX dispatches asynchronously: without `block_until_ready()` a
call returns before the device has finished, and a timing would measure only the
dispatch.) This is what `jaxviz.profile` does for you; here by hand, for a small MLP:
"""),
    code("""
def dense(w, b, x):
    return jnp.tanh(x @ w + b)

def mlp(params, x):
    for w, b in params:
        x = dense(w, b, x)
    return x

sizes = [512, 1024, 1024, 512]
keys = jax.random.split(key, len(sizes))
params = [(jax.random.normal(k, (m, n)) / np.sqrt(m), jnp.zeros(n))
          for k, m, n in zip(keys, sizes[:-1], sizes[1:])]
batch = jax.random.normal(key, (256, sizes[0]))

t0 = time.perf_counter(); traced = jax.jit(mlp).trace(params, batch)
t1 = time.perf_counter(); lowered = traced.lower()
t2 = time.perf_counter(); compiled = lowered.compile()
t3 = time.perf_counter(); compiled(params, batch).block_until_ready()
t4 = time.perf_counter()
runs = []
for _ in range(10):
    t = time.perf_counter()
    compiled(params, batch).block_until_ready()
    runs.append(time.perf_counter() - t)
timings = {"trace": t1 - t0, "lower": t2 - t1, "compile": t3 - t2,
           "first run": t4 - t3, "run (median of 10)": float(np.median(runs))}
for stage, seconds in timings.items():
    print(f"{stage:20} {seconds * 1e3:8.2f} ms")
print(f"compile / run ratio {timings['compile'] / timings['run (median of 10)']:.0f}x")
"""),
    md("""
and with `jaxviz.profile`, the same split plus the costs, in one call:
"""),
    code("""
mlp_report = jaxviz.profile(mlp, params, batch, repeats=10)
mlp_report
"""),
    md("""
## 6. Cost and memory analysis, checked by hand

XLA's count should match arithmetic you can do on paper: a `(256 × 512) @ (512 × 1024)`
matmul is `2 · 256 · 512 · 1024` FLOPs (a multiply and an add per term), a bias add one
FLOP per element, and `tanh` is a transcendental, not a FLOP. The arguments are the
parameters plus the batch. On a GPU, XLA counts the matmuls it hands to cuBLAS at one FLOP
per multiply-add ([jax#22249](https://github.com/jax-ml/jax/issues/22249)), about half the
count by hand; the Run report above notices it and computes FLOP/s from jaxviz's count.
"""),
    code("""
cost = compiled.cost_analysis()
cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list in older JAX versions
by_hand = sum(2 * 256 * m * n + 256 * n for m, n in zip(sizes[:-1], sizes[1:]))  # matmul + bias add
print(f"flops           {cost.get('flops', float('nan')):,.0f}   (by hand: {by_hand:,})")
print(f"jaxviz estimate {mlp_report.estimate.flops:,.0f}")
print(f"transcendentals {cost.get('transcendentals', float('nan')):,.0f}   (one tanh per activation: {256 * sum(sizes[1:]):,})")
print(f"bytes accessed  {cost.get('bytes accessed', float('nan')):,.0f}")

memory = compiled.memory_analysis()
if memory is not None:
    for field in ("argument_size_in_bytes", "output_size_in_bytes", "temp_size_in_bytes"):
        print(f"{field:30} {getattr(memory, field) / 2**20:8.2f} MiB")
    param_bytes = sum(p.nbytes for p in jax.tree_util.tree_leaves(params)) + batch.nbytes
    print(f"{'(parameters + batch by hand)':30} {param_bytes / 2**20:8.2f} MiB")
"""),
    md("""
Where do the FLOPs go? Each call of `dense` is a group of the graph (`dense 1/3`,
`dense 2/3`, `dense 3/3`), labelled with its FLOPs and bytes and coloured by its share:
the 1024 × 1024 layer, with twice the multiply-adds of the others, is the darkest.
"""),
    code("""
%jaxpr --expand 0 mlp(params, batch)
"""),
    code("""
achieved = mlp_report.flops_per_second
print(f"achieved {achieved / 1e9:.1f} GFLOP/s on {mlp_report.device} ({mlp_report.device_kind})")
"""),
]

# --------------------------------------------------------------------------- 06
NB06 = [
    md("""
# 06 · Sharding: which axis each array is split on, and what XLA sends between devices

A program that runs on several devices is one program, **partitioned**: each array is
split over a *mesh* of devices along named axes (`data`, `model`), each device computes
its part, and wherever a result needs data that another device holds, the compiled
program **communicates**: an all-reduce sums partial results, an all-gather puts the
pieces of an array back together. Those collectives are usually why a sharded step is
slower than it should be, and they are invisible in your code: the SPMD partitioner
inserts them.

jaxviz shows them on your own graph:

* every input and output shows its sharding (`P('data', None)`, `replicated`), and with
  **explicit** mesh axes every edge keeps JAX's sharded type (`f32[128@data,784]`: the
  first dimension split over the `data` axis);
* the summary names the mesh (axes, sizes, devices) and the collectives of the compiled
  program, counted and sized from XLA's own HLO, on the groups of your code they came from;
* `shard_map` is a box named after the function it maps, with its specs, and the
  collectives you write inside it (`psum`, `all_gather`, `ppermute`, …) are drawn as
  communication nodes with their axis and the bytes they move.

This notebook runs on **eight virtual CPU devices**: XLA reads
`--xla_force_host_platform_device_count` once, when JAX starts its CPU backend, so the
first cell sets it before JAX is imported.
"""),
    code("""
import os

# Eight CPU devices (set before JAX starts; a GPU, if any, is left alone: the mesh below is
# made of CPU devices).
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8 " + os.environ.get("XLA_FLAGS", "")
"""),
    code("""
%load_ext jaxviz
import re

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, PartitionSpec as P

import jaxviz

cpus = jax.devices("cpu")
print("devices", len(cpus))
"""),
    md("""
## 1. A mesh with explicit axes

Eight devices as a 4 × 2 mesh: four along `data` (each holds a quarter of the batch), two
along `model` (each holds half of the hidden units). With **explicit** axes
(`AxisType.Explicit`) the sharding is part of each array's type, which JAX checks and
propagates as it traces: `jax.typeof(x)` says `f32[128@data,784]`.
"""),
    code("""
mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(AxisType.Explicit,) * 2, devices=cpus)
jax.set_mesh(mesh)  # PartitionSpecs now name this mesh's axes

def dense(w, b, x, out=None):
    return jnp.dot(x, w, out_sharding=out) + b

def loss_fn(params, x, y):
    (w1, b1), (w2, b2) = params
    h = jax.nn.relu(dense(w1, b1, x))  # [batch@data, hidden@model]
    logits = dense(w2, b2, h, out=P("data", None))  # the hidden split is summed away
    return jnp.mean((logits - y) ** 2)

@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    params = jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    return params, loss

k1, k2, k3 = jax.random.split(jax.random.key(0), 3)
params = [(jax.device_put(jax.random.normal(k1, (784, 512)) / 28, P(None, "model")),
           jax.device_put(jnp.zeros(512), P("model"))),
          (jax.device_put(jax.random.normal(k2, (512, 10)) / 22, P("model", None)),
           jax.device_put(jnp.zeros(10), P()))]
x = jax.device_put(jax.random.normal(k3, (128, 784)), P("data", None))
y = jax.device_put(jnp.zeros((128, 10)), P("data", None))
print("x:", jax.typeof(x), "· w1:", jax.typeof(params[0][0]))
"""),
    md("""
## 2. The train step, with its shardings

Each input carries its `PartitionSpec` under its type; each edge the sharded type JAX
traced (`f32[128@data,512@model]` is the hidden layer: split by batch *and* by hidden
unit). The summary names the mesh and what the compiled step communicates.
"""),
    code("""
%%jaxpr -o step_program
params, loss = train_step(params, x, y)
"""),
    md("""
## 3. What XLA inserted

Your code has no collective in it, yet the compiled step has some: the gradient of a
weight that every device holds whole (`b2`), computed from a quarter of the batch on each
device, must be summed over the `data` axis, and the second layer's product of two
`model`-split operands over `model`. The **Run** section counts them per kind with the
bytes each moves (per device and step, read from the compiled HLO), and gives the memory
each device needs (arguments, outputs, temporaries from XLA's memory analysis). The
groups of the graph that the collectives came from carry a `⇄` line and a teal outline,
beside their FLOP heat.
"""),
    code("""
report = step_program.run_report
print(report.text())
"""),
    md("""
The same count, straight from the compiled program's HLO text (what `jaxviz.profile`
reads too):
"""),
    code("""
compiled = train_step.lower(params, x, y).compile()
kinds = re.findall(r"= .*? (all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute)(?:-start)?\(",
                   compiled.as_text())
print("HLO collectives:", {k: kinds.count(k) for k in sorted(set(kinds))})
print("jaxviz counted: ", dict(sorted(report.collectives.counts.items())))
"""),
    md("""
## 4. `shard_map`: collectives you write yourself

Inside `jax.shard_map` each device runs your function on its own block, and moving data
is up to you. The box is named after the function with its specs, and each collective is
a communication node (teal) with its axis and the bytes each device sends into it.
"""),
    code("""
def ffn(x, w1, w2):
    h = jax.nn.relu(x @ w1)                        # my rows of the batch × my hidden units
    partial = h @ w2                               # my hidden units' share of the output
    out = jax.lax.psum(partial, "model")           # summed over the model axis
    norm = jax.lax.pmean(jnp.mean(out ** 2), "data")  # a batch statistic over the data axis
    return out / jnp.sqrt(norm)

sharded_ffn = jax.shard_map(ffn, in_specs=(P("data", None), P(None, "model"), P("model", None)),
                            out_specs=P("data", None))
"""),
    code("""
%jaxpr --expand all -o ffn_program sharded_ffn(x, params[0][0], params[1][0])
"""),
    md("""
## 5. A resharding recompile

The compiled step is specialised to its inputs' shardings. Passing the batch replicated
(every device holds all of it) instead of split over `data` compiles the step again, and
jaxviz's recompile notice says which input moved and how. The new program communicates
differently: the first layer's gradient is no longer summed over `data` (each device saw
the whole batch), so the step moves a few KiB instead of hundreds, at the price of every
device doing the whole batch's work.
"""),
    code("""
params, loss = train_step(params, x, y)
x_replicated = jax.reshard(x, P())
params, loss = train_step(params, x_replicated, y)
"""),
    code("""
%jaxviz recompiles train_step
"""),
    code("""
for name, batch in (("x split over data", x), ("x replicated", x_replicated)):
    r = jaxviz.profile(train_step, params, batch, y, repeats=2)
    print(f"{name:18} {r.collectives.text()}")
"""),
]


NOTEBOOKS = {
    "01_tour.ipynb": NB01,
    "02_jit_pitfalls.ipynb": NB02,
    "03_training_mlp.ipynb": NB03,
    "04_flax_optax.ipynb": NB04,
    "05_accelerators.ipynb": NB05,
    "06_sharding.ipynb": NB06,
}


def main(argv: list[str]) -> None:
    for name, cells in NOTEBOOKS.items():
        if argv and not any(name.startswith(a) for a in argv):
            continue
        path = HERE / name
        nbformat.write(notebook(cells), path)
        print("wrote", path.relative_to(HERE.parent))


if __name__ == "__main__":
    main(sys.argv[1:])
