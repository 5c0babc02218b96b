import type { RouteEntry } from '../view.js';
import { button, h } from './dom.js';

export interface Layout {
  el: HTMLElement;
  main: HTMLElement;
  /** Marks the current top-level section in the nav. */
  setCurrent(path: string): void;
  /** Shows or hides the admin-only links (hidden until the key is known to be an admin's). */
  setAdmin(admin: boolean): void;
}

/** The frame around every signed-in page: a skip link, the nav bar (links from the route table) and the main region. */
export function layout(routes: readonly RouteEntry[], signOut: () => void): Layout {
  const links = routes.filter((r) => r.nav).map((r) => ({ r, a: h('a', { href: `#${r.pattern}`, hidden: !!r.adminOnly }, r.title) }));
  const main = h('main', { id: 'main', tabindex: -1 });
  const el = h(
    'div',
    { class: 'app' },
    h('a', { class: 'skip', href: '#main', onclick: (ev) => (ev.preventDefault(), main.focus()) }, 'Skip to content'),
    h('header', { class: 'top' }, h('span', { class: 'brand' }, 'forkd'), h('nav', { 'aria-label': 'Sections' }, ...links.map((l) => l.a)), button('Sign out', signOut, { class: 'quiet' })),
    main,
  );
  return {
    el,
    main,
    setCurrent(path) {
      for (const { r, a } of links) {
        if (path === r.pattern || path.startsWith(`${r.pattern}/`)) a.setAttribute('aria-current', 'page');
        else a.removeAttribute('aria-current');
      }
    },
    setAdmin(admin) {
      for (const { r, a } of links) if (r.adminOnly) a.hidden = !admin;
    },
  };
}
