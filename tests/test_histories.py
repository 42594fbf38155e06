"""The recompile histories of ``benchmarks/histories/`` run as written: each program runs
without error and misses JAX's cache for its function at least twice (the compile its
history is about comes after a first one). How well jaxviz and JAX's explainer name the
causes is measured in ``benchmarks/bench_causes.py``, not asserted here.

The histories run in one subprocess (the script sets the host device count before JAX
starts, as the mesh histories need four devices)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import background
import pytest

ROOT = Path(__file__).parents[1]
THREAD = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull|discussions)/\d+$")


def run_histories() -> subprocess.CompletedProcess:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONPATH": str(ROOT), "XLA_FLAGS": background.TEST_XLA_FLAGS}
    return background.run([sys.executable, "benchmarks/bench_causes.py", "--check"], cwd=ROOT,
                          env=env, timeout=240)


HISTORIES = background.job(__file__, run_histories)  # beside the tests before this module's


@pytest.fixture(scope="module")
def report() -> dict:
    out = HISTORIES.result()
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_every_history_runs_and_misses_the_cache_twice(report):
    failed = {name: r for name, r in report["histories"].items()
              if r["error"] or r["misses"] < 2}
    assert not failed, failed


def test_the_corpus_holds_forty_histories_each_citing_its_thread(report):
    assert not report["skipped"], report["skipped"]  # every library of the corpus installed
    histories = report["histories"]
    assert len(histories) >= 40, len(histories)
    assert all(THREAD.match(r["url"]) for r in histories.values()), \
        [r["url"] for r in histories.values() if not THREAD.match(r["url"])]
    assert max(r["devices"] for r in histories.values()) <= report["devices"]
