"""The graph shows what JAX really does, on any program:

- a transformation with tracing rules of its own (``jax.pmap``, ``eqx.filter_pmap``,
  ``shard_map``) is traced by those rules, never unwrapped and retraced under plain ``jit``;
- stateful frameworks' state is an output only where the transformation writes it back;
- every captured array is named after the global or closure cell it came from (with its
  path inside a pytree), or after what made it.

Programs over 8 host devices run in a subprocess (``pmap_programs.py``)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


# ---------------------------------------------------------------------- pmap, shard_map
@pytest.fixture(scope="module")
def eight_devices():
    env = dict(os.environ)
    env["JAX_PLATFORMS"] = "cpu"
    # first: XLA stops reading its flags at a token it does not know
    env["XLA_FLAGS"] = ("--xla_force_host_platform_device_count=8 " + env.get("XLA_FLAGS", "")).strip()
    proc = subprocess.run([sys.executable, str(HERE / "pmap_programs.py")], env=env, capture_output=True,
                          text=True, timeout=300)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    assert lines, proc.stdout[-3000:] + proc.stderr[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def test_pmap_train_step_is_traced_as_pmap(eight_devices):
    """A Flax ResNet step under ``jax.pmap`` with ``lax.pmean(grads, 'batch')`` and
    BatchNorm synchronised over ``batch``: axis names bound (no ``unbound axis name``), one
    group named after the mapped function with its axis, the collectives inside it."""
    out = eight_devices
    assert out["devices"] == 8
    assert "pmap train_step (batch: 8)" in out["trace_groups"]
    assert out["trace_prims"].count("psum") >= 20  # 20 gradients and 2 metrics, 4 BatchNorms
    assert out["trace_outputs"] == out["real_outputs"]
    assert "pmap train_step (batch: 8)" in out["jit_of_pmap_groups"]  # jax.jit(pmap(...)) too


def test_pmap_from_the_magics_runs_as_a_plain_call(eight_devices):
    out = eight_devices
    assert out["line_error"] == "None" and "pmap train_step (batch: 8)" in out["line_groups"]
    assert out["cell_error"] == "None" and "pmap train_step (batch: 8)" in out["cell_groups"]
    assert out["cell_results_equal"] and out["cell_sharding_equal"]


def test_pmap_collectives_are_equations_inside_its_group(eight_devices):
    prims = eight_devices["exchange_prims"]
    assert {"all_gather", "ppermute", "psum", "pmax"} <= set(prims)
    assert "pmap exchange (i: 8)" in eight_devices["exchange_groups"]


def test_equinox_filter_pmap_and_shard_map_keep_their_rules(eight_devices):
    out = eight_devices
    assert "pmap averaged (d: 8)" in out["eqx_groups"]
    assert "shard_map sharded_matmul (data: 4, model: 2)" in out["shard_map_groups"]
    assert "shard_map sharded_matmul (data: 4, model: 2)" in out["jit_shard_map_groups"]
