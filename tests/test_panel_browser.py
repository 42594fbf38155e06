"""The panel's model in a real JupyterLab against a real kernel (Debian's Chromium,
Playwright): a message on the comm that does not match ``jaxviz/schema/messages.json``
is dropped with a console warning, the valid events of a batch still count, and the
panel stays connected; new compiles are added to the top of the Recompiles list, which
keeps the entries already shown."""

from __future__ import annotations

from browser_lab import browser_marks, notebook_page, run_cell

pytestmark = browser_marks(timeout=240)

CELLS = [
    "%load_ext jaxviz",
    # 1: sent on the panel's own comm, as a broken or newer kernel might: a snapshot
    # missing its lists, then a batch with one event the panel cannot read beside one it can.
    "import comm\n"
    "for c in list(comm.get_comm_manager().comms.values()):\n"
    "    if c.target_name == 'jaxviz':\n"
    "        c.send({'type': 'snapshot', 'functions': 'not a list'})\n"
    "        c.send({'type': 'events', 'events': [\n"
    "            {'kind': 'compile', 'payload': {'count': 1}},\n"
    "            {'kind': 'stale', 'payload': {'name': 'after_the_bad_one', 'message': 'kept'}}]})",
    # 2 and 3: a function compiled, then recompiled
    "import jax, jax.numpy as jnp\n@jax.jit\ndef step(x):\n    return x * 2\nstep(jnp.ones(2))",
    "step(jnp.ones(3))",
]


def test_bad_messages_are_dropped_and_lists_grow_in_place(lab):
    console: list[str] = []
    # The kernel answered the panel (it has no jaxviz yet) before the first cell runs.
    with notebook_page(lab, "panel.ipynb", CELLS, console=console) as page:
        run_cell(page, 0)
        panel = page.locator("#jaxviz-panel[data-jaxviz-state='connected']")
        panel.wait_for(timeout=30_000)

        run_cell(page, 1)
        panel.locator(".jp-jaxviz-stale:has-text('after_the_bad_one')").wait_for(timeout=30_000)
        warnings = [m for m in console if m.startswith("warning: jaxviz: dropped")]
        assert any("dropped a message from the kernel that does not match the schema" in m
                   and "'compiles'" in m for m in warnings), console
        assert any("dropped an event that does not match the schema" in m for m in warnings), console
        assert not [m for m in console if m.startswith(("pageerror", "error: jaxviz"))], console
        assert page.locator("#jaxviz-panel").get_attribute("data-jaxviz-state") == "connected"

        run_cell(page, 2)
        entries = page.locator("#jaxviz-panel .jp-jaxviz-compile")
        entries.first.wait_for(timeout=30_000)
        first = entries.first.element_handle()
        run_cell(page, 3)
        page.locator("#jaxviz-panel .jp-jaxviz-compile:has-text('recompile #1')").wait_for(timeout=30_000)
        assert entries.count() == 2
        # The first compile's entry is the same element, now second: added to, not redrawn.
        assert entries.nth(1).evaluate("(el, old) => el === old", first)
