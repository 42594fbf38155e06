"""A corpus of real programs, one module per program, each written in the style of its
library's own examples (the example each imitates is cited at the top of its module).

Every module has ``program() -> Case``: the callable exactly as its user calls it, its
arguments, and what is true of it, stated from the program itself (never read off
jaxviz's output): how many arrays the call returns, which repeated layers the first view
should show folded, which library calls and loops should be named, which globals it
captures. Sizes are small, so each program traces in seconds on a CPU.

``benchmarks/bench_programs.py`` scores jaxviz on them; ``tests/test_corpus.py`` checks
that each one imports and traces, and that what it states of its outputs is what the call
returns.
"""

from __future__ import annotations

import ast
import functools
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax


@dataclass
class Case:
    fn: Callable[..., Any]  # what the user calls
    args: tuple
    kwargs: dict = field(default_factory=dict)
    # Arrays the real call hands back (for ``nnx.jit``: the result's and the state it
    # writes back into its graph-node arguments).
    outputs: int = 0
    # Repeated layers the first view shows folded: (function or layer name, count), read
    # as ``Block ×12``.
    folds: tuple[tuple[str, int], ...] = ()
    # Library calls that should be groups named after the library function.
    calls: tuple[str, ...] = ()
    # Loops (scan, while, fori_loop) that should be named after the function they run.
    loops: tuple[str, ...] = ()
    # Globals the program reads (arrays or pytrees of arrays), listed as captured.
    captured: tuple[str, ...] = ()
    # Graph nodes (NNX modules, optimizers) whose state ``nnx.jit`` writes back: part of
    # ``outputs`` beside the result's arrays.
    written_back: tuple[Any, ...] = ()
    # The library's own trace of the same program (default ``jax.make_jaxpr(fn)``).
    reference: Callable[[], Any] | None = None

    def reference_jaxpr(self) -> Any:
        if self.reference is not None:
            return self.reference()
        return jax.make_jaxpr(self.fn)(*self.args, **self.kwargs)


PROGRAMS = (
    "linen_cnn", "linen_batchnorm_dropout", "linen_scan_lstm",
    "nnx_mnist", "nnx_scan_layers", "nnx_remat", "nnx_minigpt", "nnx_plain_jit",
    "equinox_vit", "equinox_diffusion", "equinox_rnn",
    "haiku_transformer", "optax_adam", "optax_chain_clip", "optax_schedule_free",
    "numpyro_nuts", "blackjax_nuts_adaptation", "blackjax_hmc_loop", "mctx_gumbel_muzero",
    "ppo_gymnax", "diffrax_ode", "diffrax_neural_ode", "optimistix_root", "optimistix_lstsq",
    "pallas_matmul", "pallas_mha", "shard_map_fsdp", "pmap_resnet", "associative_scan",
    "nanogpt", "mlp_digits", "fori_loop", "while_loop", "cond_switch", "per_example_grads",
    "equinox_ensemble", "nnx_ensemble", "optax_multisteps",
    "linen_scan_blocks", "numpyro_svi", "maml", "equinox_cnn", "lax_map_remat",
    "haiku_resnet_state", "odeint_lotka", "optax_inject_hparams", "equinox_scan_layers",
    "haiku_lstm", "scipy_bfgs", "optax_lbfgs", "nnx_vae", "stax_mnist",
)


def load(name: str) -> Case:
    """The program ``name`` (a module of this package), built afresh."""
    return importlib.import_module(f"{__name__}.{name}").program()


def devices_needed(name: str) -> int:
    """Host devices a program needs (its module's ``DEVICES = 8``), read from its source
    without importing it (nor the libraries it imports: a process that runs some of the
    programs imports theirs only): those programs run where
    XLA_FLAGS=--xla_force_host_platform_device_count=8."""
    source = Path(__file__).with_name(f"{name}.py").read_text()
    for statement in ast.parse(source).body:
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == "DEVICES" for t in statement.targets):
            return ast.literal_eval(statement.value)
    return 1


STATED = ("outputs", "folds", "calls", "loops", "captured")


@functools.cache
def stated(name: str) -> dict[str, Any]:
    """What the program states of itself (outputs, folds, calls, loops, captured), read
    where it can be built: here, or in a subprocess with the host devices it needs (and
    this process's XLA flags); once per program (read-only)."""
    if devices_needed(name) <= jax.device_count():
        case = load(name)
        return {key: getattr(case, key) for key in STATED}
    # the count first: XLA stops reading its flags at a token it does not know
    flags = f"--xla_force_host_platform_device_count={devices_needed(name)} {os.environ.get('XLA_FLAGS', '')}"
    env = dict(os.environ, XLA_FLAGS=flags.strip(), JAX_PLATFORMS="cpu")
    code = (f"import sys, json; sys.path.insert(0, {os.path.dirname(os.path.dirname(__file__))!r}); "
            f"import programs; print(json.dumps(programs.stated({name!r})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300,
                          check=True)
    return json.loads(done.stdout.splitlines()[-1])
