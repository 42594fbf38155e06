/** Drag to pan: the pointer held down and moved past a few px moves the drawing, and the
 * click that ends the drag opens or closes nothing. */

import { GraphModel } from './model';

/** Moves shorter than this (px, summed over both axes) are clicks, not drags. */
const DRAG_PX = 4;

export class Pan {
  private drag: { x: number; y: number; tx: number; ty: number; moved: boolean } | null = null;
  private suppressClick = false;

  /** `started`: called once when a drag begins (hide the tooltip). */
  constructor(
    private readonly canvas: HTMLElement,
    private readonly model: GraphModel,
    private readonly started: () => void
  ) {
    canvas.addEventListener('pointerdown', ev => this.onPointerDown(ev));
    canvas.addEventListener('pointermove', ev => this.onPointerMove(ev));
    canvas.addEventListener('pointerup', ev => this.onPointerUp(ev));
  }

  /** A drag is moving the drawing now. */
  get panning(): boolean {
    return !!this.drag?.moved;
  }

  /** Whether this click ended a drag (and is not a click); asked once per click. */
  takeClick(): boolean {
    const ended = this.suppressClick;
    this.suppressClick = false;
    return ended;
  }

  private onPointerDown(ev: PointerEvent): void {
    if (ev.button !== 0) {
      return;
    }
    const { tx, ty } = this.model.transform;
    this.drag = { x: ev.clientX, y: ev.clientY, tx, ty, moved: false };
  }

  private onPointerMove(ev: PointerEvent): void {
    const d = this.drag;
    if (!d || !(ev.buttons & 1)) {
      this.drag = null;
      return;
    }
    const dx = ev.clientX - d.x;
    const dy = ev.clientY - d.y;
    if (!d.moved && Math.abs(dx) + Math.abs(dy) < DRAG_PX) {
      return;
    }
    if (!d.moved) {
      d.moved = true;
      this.canvas.setPointerCapture?.(ev.pointerId);
      this.canvas.classList.add('jp-jaxviz-panning');
      this.started();
    }
    this.model.setTransform({ tx: d.tx + dx, ty: d.ty + dy });
  }

  private onPointerUp(ev: PointerEvent): void {
    if (this.drag?.moved) {
      // The click a mouse fires on release comes before any task: a later one is the
      // user's next (a pan on a touchscreen fires none).
      this.suppressClick = true;
      window.setTimeout(() => (this.suppressClick = false), 0);
      this.canvas.releasePointerCapture?.(ev.pointerId);
    }
    this.canvas.classList.remove('jp-jaxviz-panning');
    this.drag = null;
  }
}
