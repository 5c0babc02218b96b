import { h } from '../ui/dom.js';
import type { View } from '../view.js';

/** A page not built yet: its route exists so links to it work. */
export function comingView(title: string, what: string): View {
  return () => ({ el: h('section', { class: 'page' }, h('h1', {}, title), h('p', { class: 'muted' }, `Coming: ${what}.`)) });
}
