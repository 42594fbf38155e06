/** Small DOM helpers of the graph widget. */

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  e.className = className;
  if (text !== undefined) {
    e.textContent = text;
  }
  return e;
}

export function button(label: string, title: string, onClick: () => void, cls = ''): HTMLButtonElement {
  const b = el('button', `jp-jaxviz-button ${cls}`.trim(), label);
  b.type = 'button';
  b.title = title;
  b.addEventListener('click', ev => {
    ev.preventDefault();
    onClick();
  });
  return b;
}

/** Save `text` as a file named `<name>.<ext>`. */
export function download(text: string, type: string, name: string, ext: string): void {
  const blob = new Blob([text], { type });
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = `${name.replace(/[^\w.-]+/g, '_')}.${ext}`;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 10000);
}
