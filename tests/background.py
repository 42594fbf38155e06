"""Work in other processes that tests wait for (a notebook run by a fresh kernel, a script
under ``XLA_FLAGS``…), started beside the tests before they need it.

A test module declares each such piece of work at import, ``JOB = background.job(__file__,
fn)``, and its fixture takes ``JOB.result()`` (``JOB.selected``: the module's tests that
run, for a job that serves only those). Once pytest has collected the session, ``conftest.py``
moves the modules that declared jobs to the end (``last_the_modules_with_jobs``) and queues
the jobs of the modules that run, in the order they run; one job at a time runs
in a thread beside the tests (the subprocesses it starts use a core the tests leave idle
while they trace in this one). A job that has not started when its result is wanted runs
at once in the thread that wants it; its error is raised there. A thread that waits for a
job running in another runs the queued jobs not yet started meanwhile: at the session's
end, where the tests left wait on jobs, both cores stay busy. ``fn`` starts processes
only through ``run`` or ``popen`` below, so that the session's end kills any still running.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

# XLA's CPU backend as the tests need it, set for the session by conftest.py (and so for
# the kernels and JupyterLab it starts): they check what jaxviz draws and reports, never
# the speed of the code XLA generates. LLVM's optimizer and Eigen's thread pool (whose
# threads spin, waiting for work, on cores the browser tests need) cost a sixth of the
# suite's CPU. XLA's MLIR fusion emitters (JAX 0.10's default; older XLAs accept the flag
# and ignore it) took 2.7 times as long to compile each small computation as the older
# emitters: the programs' eager set-up compiles one per operation (nanoGPT's: 100).
TEST_XLA_FLAGS = ("--xla_cpu_multi_thread_eigen=false --xla_backend_optimization_level=0 "
                  "--xla_llvm_disable_expensive_passes=true --xla_cpu_use_fusion_emitters=false")


def with_host_devices(count: int) -> str:
    """``XLA_FLAGS`` for a process with ``count`` host devices: the count first (XLA stops
    reading its flags at a token it does not know), then this process's own (the tests'
    ``TEST_XLA_FLAGS``, which conftest.py sets)."""
    return f"--xla_force_host_platform_device_count={count} {os.environ.get('XLA_FLAGS', '')}".strip()


class Job:
    def __init__(self, fn: Callable[[], Any], module: str):
        self.fn, self.module = fn, module
        self.selected: list[Any] = []  # the module's tests that run (pytest items)
        self.started = False
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None
        self.claim = threading.Lock()

    def start(self) -> bool:
        """Run the job here unless another thread has; False if it had."""
        with self.claim:
            if self.started:
                return False
            self.started = True
        try:
            self.value = self.fn()
        except BaseException as exc:  # raised again where the result is wanted
            self.error = exc
        finally:
            self.done.set()
        return True

    def result(self) -> Any:
        if not self.start():  # running in another thread: run queued jobs here meanwhile
            while not self.done.is_set() and (spare := next((j for j in QUEUED if not j.started), None)):
                spare.start()
        self.done.wait()
        if self.error is not None:
            raise self.error
        return self.value


JOBS: list[Job] = []
QUEUED: list[Job] = []  # the jobs of the modules that run, in the order their tests want them
PROCESSES: set[subprocess.Popen] = set()
STOPPING = threading.Event()


def job(module: str, fn: Callable[[], Any]) -> Job:
    """Declare ``fn`` as a job of the test file ``module`` (its ``__file__``), at import."""
    declared = Job(fn, module)
    JOBS.append(declared)
    return declared


def last_the_modules_with_jobs(items: list[Any]) -> list[Any]:
    """``items`` (pytest's, in its order) with the modules that declared a job moved to the
    end, each kept whole and in order: their jobs then run beside all the other tests, and
    are done (or nearly) when their tests want them."""
    with_jobs = {Path(j.module).resolve() for j in JOBS}
    return sorted(items, key=lambda item: Path(item.path).resolve() in with_jobs)  # a stable sort


def start(items: list[Any]) -> None:
    """Run the jobs of the modules of ``items`` (the tests that run), in the order of their
    first test, in one thread beside the tests."""
    first: dict[Path, int] = {}
    for i, item in enumerate(items):
        first.setdefault(Path(item.path).resolve(), i)
    QUEUED[:] = sorted((j for j in JOBS if Path(j.module).resolve() in first),
                       key=lambda j: first[Path(j.module).resolve()])
    for j in QUEUED:
        j.selected = [item for item in items if Path(item.path).resolve() == Path(j.module).resolve()]

    def worker() -> None:
        for j in QUEUED:
            if STOPPING.is_set():
                return
            j.start()

    if QUEUED:
        threading.Thread(target=worker, name="background-jobs", daemon=True).start()


def stop() -> None:
    """Start no more jobs; kill the processes of those running."""
    STOPPING.set()
    for proc in list(PROCESSES):
        if proc.poll() is None:
            proc.kill()


def popen(args: list[str], **kwargs: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, **kwargs)``, from a job's thread, with the environment as
    it is now unless ``env`` is given. Without ``env`` the child (vforked: it shares this
    process's memory until it runs the program) reads the C library's live environment,
    which a test's ``monkeypatch.setenv`` in the main thread may reallocate meanwhile: the
    likeliest cause of a spawn that failed once in CI with ``OSError: [Errno 14] Bad
    address``. Given ``env``, the child reads a copy this call holds."""
    if STOPPING.is_set():
        raise RuntimeError("the test session is over")
    kwargs.setdefault("env", dict(os.environ))
    proc = subprocess.Popen(args, **kwargs)
    PROCESSES.add(proc)
    return proc


def run(args: list[str], timeout: float, input: str | None = None,
        **kwargs: Any) -> subprocess.CompletedProcess:
    """``subprocess.run(args, input=input, capture_output=True, text=True)`` through
    ``popen``."""
    proc = popen(args, stdin=subprocess.PIPE if input is not None else None, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE, text=True, **kwargs)
    try:
        out, err = proc.communicate(input, timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    finally:
        PROCESSES.discard(proc)
    return subprocess.CompletedProcess(args, proc.returncode, out, err)
