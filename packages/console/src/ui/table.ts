import { h } from './dom.js';

export interface Column<T> {
  title: string;
  cell: (row: T) => Node | string;
  /** Narrow screens show it under the row's first cell instead of in its own column. */
  minor?: boolean;
}

/** A table with a caption (for screen readers) and a line shown when there are no rows. */
export function table<T>(caption: string, columns: readonly Column<T>[], rows: readonly T[], empty: string): HTMLElement {
  if (!rows.length) return h('p', { class: 'muted empty' }, empty);
  return h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h('thead', {}, h('tr', {}, ...columns.map((c) => h('th', { scope: 'col', class: c.minor ? 'minor' : undefined }, c.title)))),
      h('tbody', {}, ...rows.map((r) => h('tr', {}, ...columns.map((c) => h('td', { class: c.minor ? 'minor' : undefined, 'data-title': c.title }, c.cell(r)))))),
    ),
  );
}
