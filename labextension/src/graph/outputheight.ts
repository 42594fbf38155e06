/**
 * A re-run cell keeps its height while its new graph is made: JupyterLab clears a cell's
 * outputs when it runs again (the page below jumps up), then the new graph appears
 * small and grows when laid out (and the page jumps down). The graph being cleared
 * holds the cell's output wrapper at its height; the next graph of that cell releases
 * it once laid out, or the hold ends by itself when the cell finished without one.
 */

const POLL_MS = 300;
const MAX_HOLD_MS = 120_000;
const timers = new WeakMap<HTMLElement, number>();

/** "In[9]" for a program named after its cell's prompt ("In[3]") when the prompt now
 * reads "[9]:"; other names, and prompts without a number ("[*]:", "[ ]:"), as given. */
export function promptName(name: string, prompt: string): string {
  if (!/^In\[\d+\]$/.test(name)) {
    return name;
  }
  const m = /\[(\d+)\]/.exec(prompt);
  return m ? `In[${m[1]}]` : name;
}

function wrapperOf(cell: HTMLElement): HTMLElement | null {
  return cell.querySelector('.jp-Cell-outputWrapper');
}

function isRunning(cell: HTMLElement): boolean {
  return /\[\*\]/.test(cell.querySelector('.jp-InputPrompt')?.textContent ?? '');
}

/** A jaxviz graph in the cell that is not laid out yet. */
function graphPending(cell: HTMLElement): boolean {
  return !!cell.querySelector('.jp-jaxviz-output:not([data-jaxviz-items])');
}

/** Keep the cell's output area at least `height` px tall for now. */
export function holdHeight(cell: HTMLElement, height: number): void {
  const wrapper = wrapperOf(cell);
  if (!wrapper || height <= 0) {
    return;
  }
  const held = Math.max(height, wrapper.getBoundingClientRect().height);
  wrapper.style.minHeight = `${Math.round(held)}px`;
  cell.dataset.jaxvizHeld = String(Math.round(held));
  window.clearInterval(timers.get(cell));
  const start = performance.now();
  const timer = window.setInterval(() => {
    const over = performance.now() - start > MAX_HOLD_MS;
    if (over || !cell.isConnected || (!isRunning(cell) && !graphPending(cell))) {
      releaseHeight(cell);
    }
  }, POLL_MS);
  timers.set(cell, timer);
}

/** The cell's output area takes its own height again. */
export function releaseHeight(cell: HTMLElement): void {
  window.clearInterval(timers.get(cell));
  timers.delete(cell);
  if (cell.dataset.jaxvizHeld === undefined) {
    return;
  }
  delete cell.dataset.jaxvizHeld;
  const wrapper = wrapperOf(cell);
  if (wrapper) {
    wrapper.style.minHeight = '';
  }
}
