/**
 * A few DOM helpers. Every text goes in through `textContent` (never `innerHTML`), so nothing the API
 * returns (prompts, key names, provider messages) can become markup.
 */

type Child = Node | string | number | false | null | undefined;
type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>;

/**
 * Creates an element. Attributes whose value is a function become event listeners (`onclick`), `true`
 * sets a boolean attribute, `false` and `undefined` leave it out.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'function') element.addEventListener(name.replace(/^on/, ''), value);
    else if (value === true) element.setAttribute(name, '');
    else if (value !== false && value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, ...children);
  return element;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Creates an SVG element (`h` makes HTML elements, which an `<svg>` would not draw). Presentation goes
 * in classes styled by app.css: the CSP refuses inline `style` attributes.
 */
export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | number | undefined> = {},
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const element = document.createElementNS(SVG_NS, tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== undefined) element.setAttribute(name, String(value));
  }
  append(element, ...children);
  return element;
}

/** Appends children, skipping `false`, `null` and `undefined`. */
export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === false || child === null || child === undefined) continue;
    parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** Replaces every child of `parent`. */
export function replace(parent: Node, ...children: Child[]): void {
  while (parent.firstChild) parent.removeChild(parent.firstChild);
  append(parent, ...children);
}

let nextId = 0;
/** A document-unique id for label/control and aria-describedby pairs. */
export function uid(prefix: string): string {
  nextId += 1;
  return `${prefix}-${nextId}`;
}

/**
 * A labelled control with an error slot below it. `setError` shows a message next to the field (and
 * marks the control invalid for assistive technology); `undefined` clears it.
 */
export function field(
  label: string,
  control: HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement,
  hint?: string,
): { element: HTMLElement; control: typeof control; setError(message: string | undefined): void } {
  const id = control.id || uid('field');
  control.id = id;
  const error = h('p', { class: 'field-error', id: `${id}-error`, hidden: true });
  const hintElement = hint ? h('p', { class: 'hint', id: `${id}-hint` }, hint) : undefined;
  const describedBy = [hintElement ? `${id}-hint` : '', `${id}-error`].filter(Boolean).join(' ');
  control.setAttribute('aria-describedby', describedBy);
  const element = h('div', { class: 'field' }, h('label', { for: id }, label), control, hintElement, error);
  return {
    element,
    control,
    setError(message) {
      error.textContent = message ?? '';
      error.hidden = message === undefined;
      if (message === undefined) control.removeAttribute('aria-invalid');
      else control.setAttribute('aria-invalid', 'true');
    },
  };
}

/** A status line (`role="status"`) whose text screen readers announce when it changes. */
export function statusLine(className = 'notice'): HTMLParagraphElement {
  return h('p', { class: className, role: 'status', 'aria-live': 'polite' });
}

/** One row of `dataTable`: its attributes and one cell per column (a ready cell keeps its own class). */
export interface TableRow {
  attributes?: Attributes;
  cells: (Child | HTMLTableCellElement)[];
}

/**
 * A table with a caption for screen readers and column headers; every cell carries its column's name
 * (`data-label`), which the phone layout shows in front of the value when rows become cards.
 */
export function dataTable(caption: string, columns: string[], rows: TableRow[]): HTMLTableElement {
  return h(
    'table',
    { class: 'data' },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', {}, h('tr', {}, ...columns.map((name) => h('th', { scope: 'col' }, name)))),
    h(
      'tbody',
      {},
      ...rows.map((row) =>
        h(
          'tr',
          row.attributes ?? {},
          ...row.cells.map((cell, index) => {
            const td = cell instanceof HTMLTableCellElement ? cell : h('td', {}, cell);
            td.dataset.label = columns[index] ?? '';
            return td;
          }),
        ),
      ),
    ),
  );
}
