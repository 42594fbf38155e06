"""Helpers for the browser tests: a real JupyterLab server on 127.0.0.1 in a temporary
root, and Debian's Chromium driven by Playwright (no browser download)."""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import warnings
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUILT = ROOT / "jaxviz" / "labextension" / "package.json"  # the built JupyterLab extension


def browser_marks(timeout: int) -> list:
    """The marks of a browser-test module: skipped without Chromium, or without a built
    extension and npm to build it; a time limit per test."""
    chromium = chromium_path()
    return [
        pytest.mark.skipif(chromium is None, reason="Chromium is not installed (Debian package 'chromium')"),
        pytest.mark.skipif(not BUILT.exists() and shutil.which("npm") is None,
                           reason="the JupyterLab extension is not built and npm is not there to build it"),
        pytest.mark.timeout(timeout),
    ]


CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-dev-shm-usage"]


# Dialogs JupyterLab raises by itself about a kernel's session, which no test asks for:
# on a loaded machine a kernel can be slow to start or restart. A test that meets one
# accepts it, with a warning naming it, and goes on; what the kernel lost shows in the
# test's own assertions.
SESSION_DIALOGS = re.compile(r"Kernel Restarting|Select Kernel|Server Connection Error")


def accept_session_dialogs(page) -> None:
    """From now on, accept JupyterLab's session dialogs (SESSION_DIALOGS) that stand in
    the way of an action on ``page``, warning with their text."""
    def accept(dialog) -> None:
        warnings.warn(f"JupyterLab dialog accepted: {dialog.inner_text()[:300]!r}", stacklevel=1)
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()

    page.add_locator_handler(page.locator(".jp-Dialog").filter(has_text=SESSION_DIALOGS), accept)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class LabServer:
    url: str
    token: str
    root: Path
    proc: subprocess.Popen
    log: Path

    def page_url(self, path: str) -> str:
        return f"{self.url}/lab/tree/{path}?token={self.token}&reset"

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def fresh(self) -> None:
        """Back to the state a new server starts in, as far as a test can see: no
        kernels running, the settings written at start (a theme a test switched to and
        did not switch back does not carry over to the next module)."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({self.proc.returncode}):\n{self.log_tail()}")
        self.shutdown_kernels()
        settings = self.root.parent / "settings"
        shutil.rmtree(settings, ignore_errors=True)
        write_settings(settings)

    def shutdown_kernels(self) -> None:
        """Shut down every notebook's session and kernel the server runs."""
        for session in self.api("GET", "sessions"):
            self.api("DELETE", f"sessions/{session['id']}")
        for kernel in self.api("GET", "kernels"):
            self.api("DELETE", f"kernels/{kernel['id']}")

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.url}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=60) as r:
            body = r.read()
        return json.loads(body) if body else None

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


def write_settings(settings: Path) -> None:
    """The user settings a test server starts with: no news or update checks popping up
    over the page."""
    notif = settings / "@jupyterlab" / "apputils-extension"
    notif.mkdir(parents=True, exist_ok=True)
    (notif / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))


def start_lab(base: Path, timeout: float = 90, app: str = "jupyterlab") -> LabServer:
    """Start ``jupyter lab`` (this interpreter's; ``app="notebook"``: Notebook 7) with its
    own config, data, settings and workspace directories under ``base``, a random token
    and port; wait until it answers."""
    root = base / "root"
    for d in ("root", "config", "data", "runtime", "settings", "workspaces", "ipython"):
        (base / d).mkdir(parents=True, exist_ok=True)
    write_settings(base / "settings")
    token = secrets.token_hex(16)
    port = free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(base / "config"), JUPYTER_DATA_DIR=str(base / "data"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"), IPYTHONDIR=str(base / "ipython"),
               JAX_PLATFORMS="cpu", PYTHONUNBUFFERED="1")
    log = base / "lab.log"
    app_class = {"jupyterlab": "LabApp", "notebook": "JupyterNotebookApp"}[app]
    cmd = [sys.executable, "-m", app, "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
           f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--{app_class}.user_settings_dir={base / 'settings'}",
           f"--{app_class}.workspaces_dir={base / 'workspaces'}",
           f"--{app_class}.news_url=", "--ServerApp.open_browser=False", "--ServerApp.allow_root=True"]
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, proc, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited ({proc.returncode}):\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.url}/api/status?token={token}", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    server.stop()
    raise RuntimeError(f"jupyter lab did not answer within {timeout}s:\n{server.log_tail()}")


def write_notebook(path: Path, cells: list[str]) -> None:
    nb = {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"c{i}", "metadata": {},
                   "outputs": [], "source": src} for i, src in enumerate(cells)],
        "metadata": {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                    "name": "python3"},
                     "language_info": {"name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }
    path.write_text(json.dumps(nb, indent=1))


def save_shot(page, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(folder / f"{name}.png"))


def run_cell(page, index: int, timeout: float = 60_000, *, tries: int = 1,
             traceback_ok: bool = False):
    """Select cell ``index`` and run it with Shift+Enter, as a user does; wait for its
    execution count; return the cell. With ``tries`` > 1 it is sent again while its prompt
    stays "[ ]" (a Shift+Enter that came before the kernel's session could take it queues
    nothing). A traceback in its output fails, unless ``traceback_ok``."""
    cell = page.locator(".jp-Notebook .jp-Cell").nth(index)
    prompt = cell.locator(".jp-InputPrompt")
    for attempt in range(tries):
        select_cell(page, cell)
        page.keyboard.press("Shift+Enter")
        if tries == 1:
            break
        try:
            page.wait_for_function("el => /\\[(\\*|\\d+)\\]/.test(el.textContent)",
                                   arg=prompt.element_handle(), timeout=10_000)
            break
        except Exception:  # Playwright's TimeoutError: not taken yet
            if attempt == tries - 1:
                raise
    page.wait_for_function(
        "el => /\\[\\d+\\]/.test(el.textContent)", arg=prompt.element_handle(), timeout=timeout)
    if not traceback_ok:
        tb = cell.locator(".jp-OutputArea-output:has-text('Traceback')")
        assert tb.count() == 0, f"cell {index} failed: {tb.first.inner_text()[:2000]}"
    return cell


def select_cell(page, cell, clicks: int = 3) -> None:
    """Make ``cell`` the notebook's active cell by a click on its prompt, as a user does;
    clicked again while another is active (a click that lands as the page still moves:
    outputs above it growing on a loaded machine, which would run the wrong cell)."""
    prompt = cell.locator(".jp-InputPrompt")
    for _ in range(clicks):
        prompt.click()
        try:
            page.wait_for_function("el => el.classList.contains('jp-mod-active')",
                                   arg=cell.element_handle(), timeout=2_000)
            return
        except Exception:  # Playwright's TimeoutError: another cell took the click
            continue
    raise AssertionError(f"the cell {cell} could not be selected by a click on its prompt")


@contextmanager
def notebook_page(lab: LabServer, name: str, cells: list[str], *, viewport: Any = None,
                  before_open: Callable | None = None, show_panel: bool = True,
                  panel_timeout: float = 60_000, before_run: Callable | None = None,
                  run: Iterable[int] | None = (), run_timeout: float = 120_000,
                  artifacts: Path | None = None, failure_shot: str = "failure-setup",
                  console: list[str] | None = None) -> Iterator:
    """A Chromium page on a new notebook ``name`` of ``cells`` in ``lab``, opened as a user
    opens it: ``before_open(page)`` runs first (to route requests, say), then the notebook
    opens and its kernel is idle; with ``show_panel``, the jaxviz panel is shown and has
    heard from the kernel (the kernel is ready once it answered). Then ``before_run(page)``
    runs, and the cells ``run`` (None: all of them) run in order.

    A failure inside the ``with`` block leaves ``artifacts/<failure_shot>.png``. Page errors
    that name jaxviz fail it at the end; ``console`` (a list) also collects every console
    message as ``"type: text"`` and every page error as ``"pageerror: ..."``."""
    from playwright.sync_api import sync_playwright

    write_notebook(lab.root / name, cells)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport=viewport or {"width": 1400, "height": 1000})
        page = context.new_page()
        accept_session_dialogs(page)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        if console is not None:
            page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        try:
            if before_open is not None:
                before_open(page)
            page.goto(lab.page_url(name), timeout=90_000)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(timeout=90_000)
            if show_panel:
                command(page, "jaxviz: Show panel")  # it asks the kernel: ready once it answered
                page.locator("#jaxviz-panel[data-jaxviz-state='not-loaded']").wait_for(timeout=panel_timeout)
            if before_run is not None:
                before_run(page)
            for i in range(len(cells)) if run is None else run:
                run_cell(page, i, timeout=run_timeout)
            yield page
        except Exception:
            if artifacts is not None:
                save_shot(page, artifacts, failure_shot)
            raise
        finally:
            context.close()
            browser.close()
    assert not [e for e in errors if "jaxviz" in e.lower()], errors


def svg_items(graph) -> list[str]:
    """Ids of the nodes and collapsed groups drawn in a graph output's SVG."""
    return sorted(graph.locator("svg.jp-jaxviz-svg g.node").evaluate_all("els => els.map(e => e.id)"))


def command(page, label: str, item: str | re.Pattern | None = None) -> None:
    """Run a command from the command palette (Ctrl+Shift+C), as a user does."""
    palette = page.locator(".lm-CommandPalette input")
    for _ in range(5):
        if not palette.is_visible():
            page.keyboard.press("Control+Shift+C")
        try:
            palette.fill(label, timeout=3000)
            page.locator(".lm-CommandPalette-item", has_text=item or label).first.click(timeout=3000)
            return
        except Exception:  # the palette closed when the page moved focus: open it again
            page.keyboard.press("Escape")
    raise AssertionError(f"could not run {label!r} from the command palette")


# A small program with three calls of a user function, shared by the browser tests.
MLP_SOURCE = (
    "import jax, jax.numpy as jnp\n"
    "def layer(x, w):\n"
    "    return jnp.tanh(x @ w)\n"
    "def mlp(x, ws):\n"
    "    for w in ws:\n"
    "        x = layer(x, w)\n"
    "    return (x ** 2).mean()\n"
    "x = jnp.ones((2, 4))\n"
    "ws = [jnp.ones((4, 4)) * 0.1 for _ in range(3)]"
)


# Heights of the text a person sees in a graph: every SVG text inside the canvas's
# visible rectangle, as rendered (page px).
TEXT_HEIGHTS_JS = """
graph => {
  const canvas = graph.querySelector('.jp-jaxviz-canvas').getBoundingClientRect();
  const out = [];
  for (const t of graph.querySelectorAll('svg.jp-jaxviz-svg text')) {
    if (t.getAttribute('visibility') === 'hidden' || !t.textContent.trim()) continue;
    const r = t.getBoundingClientRect();
    const cx = r.left + r.width / 2, cy = r.top + r.height / 2;
    if (cx >= canvas.left && cx <= canvas.right && cy >= canvas.top && cy <= canvas.bottom) out.push(r.height);
  }
  return out;
}
"""


# ---------------------------------------------------------------------- colours
def rgba(css: str) -> tuple[float, float, float, float]:
    """A computed colour (rgb(), rgba(), or color(srgb ...) for color-mix results)."""
    if css in ("none", "transparent"):
        return (0, 0, 0, 0)
    m = re.fullmatch(r"rgba?\(([^)]*)\)", css)
    if m:
        parts = [float(p) for p in re.split(r"[,\s/]+", m.group(1).strip())]
        return (*parts[:3], parts[3] if len(parts) > 3 else 1.0)
    m = re.fullmatch(r"color\(srgb ([^)]*)\)", css)
    assert m, f"unexpected colour {css!r}"
    parts = [float(p) for p in re.split(r"[\s/]+", m.group(1).strip())]
    return (*[255 * c for c in parts[:3]], parts[3] if len(parts) > 3 else 1.0)


def over(fg: str, bg: str) -> tuple[float, float, float]:
    """``fg`` composited over the opaque ``bg``."""
    f, b = rgba(fg), rgba(bg)
    assert b[3] == 1, f"background {bg} is not opaque"
    return tuple(f[i] * f[3] + b[i] * (1 - f[3]) for i in range(3))


def luminance(rgb) -> float:
    """WCAG relative luminance."""
    def lin(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (lin(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a, b) -> float:
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)
