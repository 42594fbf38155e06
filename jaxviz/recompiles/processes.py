"""Several processes (JAX's distributed runtime): the program each process compiles,
compared at compile time.

Under ``jax.distributed``, every process must compile the same program: one that compiles
another (a different batch shape, another static value) waits for the others in its first
collective, forever, and nothing says why. Each compile of a user function publishes its
signature (argument by argument, as the compile log names them) in the coordination
service's key-value store that JAX already runs (``jaxviz/compiles/<function>/<n>/<process>``),
then reads the other processes' signature of the same compile with a bounded wait; a
process that does not compile it within ``WAIT_S`` (it had compiled that program before:
a cache hit there) is compared by its latest compile of the function, and not waited for
again for that function. Every process that sees a difference says which process differs from process 0,
and how. Nothing is started: without ``jax.distributed`` this costs one attribute read.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass

from .. import _jax_internals as internals
from .events import CompileEvent
from .signature import Signature, short_repr

WAIT_S = 5.0  # the longest a compile waits for the other processes' signature of it
PREFIX = "jaxviz/compiles"
_UNANSWERED: set[tuple[str, int]] = set()  # (function key, process) that did not answer in time
_LOCK = threading.Lock()


@dataclass(frozen=True)
class ProcessMismatch:
    """Process ``process`` compiled ``function`` with ``argument`` as ``here``, process
    ``reference`` (0) as ``there``."""

    function: str
    count: int
    process: int
    reference: int
    argument: str
    here: str | None
    there: str | None

    def text(self) -> str:
        here = f"`{self.argument}: {self.here}`" if self.here is not None else f"no `{self.argument}`"
        there = f"`{self.there}`" if self.there is not None else "no such argument"
        return (f"`{self.function}` compiled with {here} on process {self.process} but {there} on "
                f"process {self.reference}: processes that compile different programs hang in "
                "their collectives")


def current_process() -> tuple[int, int] | None:
    """(this process, how many) under ``jax.distributed`` with several processes, else None."""
    process = internals.distributed_process()
    if process is None or process.num_processes < 2:
        return None
    return process.process_id, process.num_processes


def signature_words(sig: Signature) -> dict[str, str]:
    """Each array leaf and static argument as the compile log names it: ``batch`` →
    ``f32[32,8]``, ``params['w']`` → ``f32[8,4]``, ``mode`` → ``'train' (static)``."""
    words = {}
    for arg in sig.args:
        if arg.static:
            words[arg.name] = f"{short_repr(arg.value)} (static)"
            continue
        for path, leaf in arg.leaves:
            words[arg.name + path] = leaf.text
        for path, value in arg.statics:
            words[arg.name + path] = f"{short_repr(value)} (static)"
    return words


def compare_compile(event: CompileEvent) -> list[ProcessMismatch]:
    """Publish this process's signature of ``event`` and compare it with the others'
    (a bounded wait); the processes that differ from process 0, with how."""
    process = internals.distributed_process()
    if process is None or process.num_processes < 2 or event.signature is None:
        return []
    function = _function_key(event)
    mine = signature_words(event.signature)
    try:
        process.client.key_value_set(_key(function, event.count, process.process_id),
                                     json.dumps(mine), allow_overwrite=True)
    except Exception:  # the coordination service is gone (shutting down): nothing to compare
        return []
    signatures = {process.process_id: mine}
    signatures.update(_others(process, function, event.count))
    reference = signatures.get(0)
    if reference is None:
        return []
    found = []
    for p, words in sorted(signatures.items()):
        difference = _first_difference(words, reference) if p != 0 else None
        if difference is not None:
            argument, here, there = difference
            found.append(ProcessMismatch(event.name, event.count, p, 0, argument, here, there))
    return found


def _others(process: internals.DistributedProcess, function: str, count: int) -> dict[int, dict[str, str]]:
    """The other processes' signatures of this compile, each waited for until one deadline;
    for a process that did not compile it in time (it ran a program compiled before: a
    cache hit there), its latest compile of the function, read without waiting."""
    deadline = time.monotonic() + WAIT_S
    found = {}
    for p in range(process.num_processes):
        if p == process.process_id:
            continue
        with _LOCK:
            wait = (function, p) not in _UNANSWERED
        left_ms = int((deadline - time.monotonic()) * 1000)
        try:
            if not wait or left_ms <= 0:
                raise TimeoutError
            found[p] = json.loads(process.client.blocking_key_value_get(_key(function, count, p), left_ms))
            continue
        except Exception:  # not compiled there in time (or not at all): not waited for again
            with _LOCK:
                _UNANSWERED.add((function, p))
        latest = _latest(process, function, count, p)
        if latest is not None:
            found[p] = latest
    return found


def _latest(process: internals.DistributedProcess, function: str, count: int, p: int) -> dict[str, str] | None:
    for earlier in range(count - 1, max(0, count - 64), -1):
        try:
            return json.loads(process.client.key_value_try_get(_key(function, earlier, p)))
        except Exception:  # no such key
            continue
    return None


def _key(function: str, count: int, process: int) -> str:
    return f"{PREFIX}/{function}/{count}/{process}"


def _first_difference(words: dict[str, str], reference: dict[str, str]) -> tuple[str, str | None, str | None] | None:
    for name in [*reference, *(n for n in words if n not in reference)]:
        if words.get(name) != reference.get(name):
            return name, words.get(name), reference.get(name)
    return None


def _function_key(event: CompileEvent) -> str:
    """The same on every process running the same code: the name and where it is defined."""
    defined = str(event.function.defined) if event.function.defined else ""
    return re.sub(r"[^\w.:@-]+", "_", f"{event.function.qualname}@{defined}")
