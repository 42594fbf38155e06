"""How often the recompile cause is named right: jaxviz against JAX's own explainer.

The histories (``benchmarks/histories/``, one module per library or theme) are small
programs that replay recompiles users reported in public issue threads, each citing its
thread. A history's last compile of its function has one true cause: a kind and the
argument path as the user wrote it, and words the explanation must say where the report
asks for them (the before and after values, "identity" for an object compared by identity).

Both are scored strictly, on that last compile:

- jaxviz is right when the first cause of its event for that compile has the kind and the
  path, says the required words in order, and its before → after do not read the same
  (addresses masked: two objects that print alike are no explanation). A compile jaxviz
  saw no event for is wrong.
- JAX's explainer (``jax_explain_cache_misses``, its log captured between the previous
  cache miss of the function and this one, keeping the explanations that name the function
  where there are any) is right when what it logged names the path (as a
  whole word) and says a word of the kind, in any case ("shape" for a shape, "static" for a
  static value, ...).

Cache misses are found through JAX's own monitoring (a trace, or a backend compile with
no trace before it, by the program's name), so a compile jaxviz misses still counts. The device histories run on
``DEVICE_COUNT`` CPU devices: this script sets ``XLA_FLAGS`` before JAX starts. Prints each
history's verdicts and both scores. Usage:
``.venv/bin/python benchmarks/bench_causes.py [-v] [-k WORD]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from dataclasses import dataclass, field

# Host CPU devices, set before JAX starts: the mesh histories use devices (0, 1) and (2, 3).
DEVICE_COUNT = 8
os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_"
                           f"device_count={DEVICE_COUNT}").strip()

# appended, so that a PYTHONPATH naming another checkout's jaxviz comes first
sys.path.append(os.path.join(os.path.dirname(__file__), ".."))

import jax  # noqa: E402

import jaxviz  # noqa: E402
from benchmarks.histories import HISTORIES, SKIPPED, History  # noqa: E402

TRACE = "/jax/core/compile/jaxpr_trace_duration"
BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"

# Words that say the kind of change, for JAX's explanation.
KIND_WORDS = {
    "shape": ("shape", "[", "type"), "dtype": ("dtype", "type"), "weak_type": ("weak",),
    "static_value": ("static",), "pytree_structure": ("tree", "structure", "static"),
    "new_function_object": ("function", "new"), "commitment": ("commit",),
    "donation": ("donat",), "device": ("device", "sharding"), "sharding": ("sharding",),
    "context": ("context", "config"), "cache_cleared": ("clear",),
    "arg_count": ("pytree", "argument"),
}
ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
WRAPPED = re.compile(r"^[\w.]+\((.+)\)$")  # grad(loss), pmap(step): a transformation's name


def base_name(name: str) -> str:
    """``loss`` for ``grad(loss)`` or ``pmap(jit(loss))``: the function the user wrote."""
    while match := WRAPPED.match(name):
        name = match.group(1)
    return name


def compiled_name(h: History) -> str:
    return h.compiled_as or h.function


class MissCounter:
    """Counts the cache misses of one function through JAX's monitoring events: a trace
    (a tracing-cache miss), or a backend compile that no trace preceded (a miss of the
    compiled-executable cache only). Marks the explainer log's length at each one."""

    def __init__(self, name: str, records: list[str]) -> None:
        self.names = (name, f"jit({name})", f"pmap({name})")
        self.records = records
        self.marks: list[int] = []
        self.traced = False  # a trace of this function since its last backend compile

    def __call__(self, event: str, duration_secs: float, **kwargs: str | int) -> None:
        del duration_secs  # only which events happen counts
        if kwargs.get("fun_name") not in self.names:
            return
        if event == TRACE:
            self.marks.append(len(self.records))
            self.traced = True
        elif event == BACKEND_COMPILE:
            if not self.traced:
                self.marks.append(len(self.records))
            self.traced = False


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record.getMessage())


@dataclass
class Run:
    """What one history's run left: jaxviz's events and JAX's log of the scored compile."""

    misses: int
    events: list = field(default_factory=list)
    jax_texts: list[str] = field(default_factory=list)
    error: str | None = None


def run_history(h: History, capture: _Capture) -> Run:
    """Runs ``h`` under a jaxviz watch, with JAX explaining its cache misses."""
    capture.records.clear()
    counter = MissCounter(compiled_name(h), capture.records)
    jax.monitoring.register_event_duration_secs_listener(counter)
    jax.config.update("jax_explain_cache_misses", True)
    log = jaxviz.watch()
    error = None
    try:
        with log:
            h.run()
    except Exception as exc:  # a history that fails is reported, the others still run
        error = f"{type(exc).__name__}: {exc}"
    finally:
        jax.config.update("jax_explain_cache_misses", False)
        jax.monitoring.unregister_event_duration_listener(counter)
    events = [e for e in log.events if base_name(e.function.name) == h.function]
    marks = counter.marks
    texts = capture.records[marks[-2]:marks[-1]] if len(marks) > 1 else capture.records[:]
    return Run(len(marks), events, _about(texts, h.function), error)


def _about(texts: list[str], function: str) -> list[str]:
    """JAX's explanations of ``function``'s own miss, not those of functions it calls
    (each names its function: "for f defined at", "never seen function: f id=")."""
    own = [t for t in texts if f"for {function} defined" in t or f"function: {function} id=" in t]
    return own or texts


def _reads_the_same(before: object, after: object) -> bool:
    if before is None or after is None:
        return False
    return ADDRESS.sub("0x…", str(before)) == ADDRESS.sub("0x…", str(after))


def _says_in_order(text: str, words: tuple[str, ...]) -> bool:
    at = 0
    for word in words:
        found = text.find(word, at)
        if found < 0:
            return False
        at = found + len(word)
    return True


def jaxviz_right(run: Run, h: History) -> bool:
    if not run.events:
        return False
    causes = run.events[-1].causes
    if not causes:
        return False
    cause, text = causes[0], str(causes[0])
    shown_as_change = "→" in text  # a value equal to the compiled one is shown without arrow
    return ((cause.kind, cause.path) == (h.kind, h.path)
            and not (shown_as_change and _reads_the_same(cause.before, cause.after))
            and _says_in_order(text, h.says))


def jax_right(run: Run, h: History) -> bool:
    text = "\n".join(run.jax_texts)
    named = re.search(r"(?<![\w.])" + re.escape(h.path) + r"(?!\w)", text)
    return bool(named) and any(w in text.lower() for w in KIND_WORDS.get(h.kind, ()))


def jaxviz_text(run: Run) -> str:
    if not run.events:
        return "(no event)"
    return run.events[-1].reason()


def score(verbose: bool, only: str | None) -> tuple[int, int, int]:
    capture = _Capture()
    logger = logging.getLogger("jax")
    logger.addHandler(capture)
    ours = theirs = ran = 0
    verdict = {True: "right", False: "WRONG"}
    try:
        for h in HISTORIES:
            if only and only.lower() not in h.name.lower():
                continue
            run = run_history(h, capture)
            if run.error or run.misses < 2:
                print(f"  {h.name}: did not run as written ({run.error or ''} "
                      f"{run.misses} cache misses of {compiled_name(h)})")
                continue
            ran += 1
            ours_ok, theirs_ok = jaxviz_right(run, h), jax_right(run, h)
            ours += ours_ok
            theirs += theirs_ok
            print(f"  {h.name[:52]:52} jaxviz {verdict[ours_ok]:5}  JAX {verdict[theirs_ok]:5}")
            if verbose:
                print(f"      true:   {h.kind} `{h.path}`" + (f" saying {h.says}" if h.says else ""))
                print(f"      jaxviz: {jaxviz_text(run)}")
                print("      JAX:    " + (" | ".join(" ".join(t.split()) for t in run.jax_texts)[:300]
                                          or "(nothing logged)"))
    finally:
        logger.removeHandler(capture)
    return ours, theirs, ran


def check() -> dict[str, dict[str, object]]:
    """Each history run alone (no watch, no explainer): its cache misses of its function
    and its error, if any. What ``tests/test_histories.py`` checks."""
    out: dict[str, dict[str, object]] = {}
    for h in HISTORIES:
        counter = MissCounter(compiled_name(h), [])
        jax.monitoring.register_event_duration_secs_listener(counter)
        error = None
        try:
            h.run()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        finally:
            jax.monitoring.unregister_event_duration_listener(counter)
        out[h.name] = {"misses": len(counter.marks), "error": error, "url": h.url,
                       "devices": h.devices}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show both explanations")
    parser.add_argument("-k", help="only the histories whose name contains this")
    parser.add_argument("--check", action="store_true",
                        help="only run each history; print its cache misses as JSON")
    args = parser.parse_args()
    if args.check:
        print(json.dumps({"devices": len(jax.devices()), "skipped": SKIPPED,
                          "histories": check()}))
        return
    print(f"jax {jax.__version__}, {len(jax.devices())} {jax.devices()[0].platform} devices; "
          f"{len(HISTORIES)} histories")
    for module, why in SKIPPED.items():
        print(f"  skipped {module}: {why}")
    ours, theirs, ran = score(args.verbose, args.k)
    print(f"jaxviz names the cause (kind and argument path) in {ours}/{ran} "
          f"({100 * ours / max(ran, 1):.0f}%); JAX's explainer in {theirs}/{ran} "
          f"({100 * theirs / max(ran, 1):.0f}%)")


if __name__ == "__main__":
    main()
