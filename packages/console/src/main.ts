import { ApiClient } from './api.js';
import { isAdminKey } from './api/admin.js';
import { ROUTES, HOME } from './routes.js';
import { matchRoute, parseHash, toHash } from './router.js';
import { sessionKeyStore } from './session.js';
import { h, replace } from './ui/dom.js';
import { layout, type Layout } from './ui/layout.js';
import type { Mounted, ViewContext } from './view.js';
import { signInView } from './views/sign-in.js';

const keys = sessionKeyStore(sessionStorage);
const root = document.getElementById('app')!;
let frame: Layout | undefined;
let current: (Mounted & { leave: AbortController }) | undefined;

function signOut(): void {
  keys.clear();
  frame = undefined;
  showSignIn();
}

/** Stops the page on screen: its own clean-up, then every call it still has in flight. */
function leave(): void {
  current?.leave.abort();
  current?.dispose?.();
  current = undefined;
}

function showSignIn(): void {
  leave();
  document.title = 'Sign in · forkd';
  replace(root, signInView((key) => {
    keys.set(key);
    // replaceState fires no hashchange: the page renders once.
    if (parseHash(location.hash).path === '/') history.replaceState(null, '', toHash(HOME));
    render();
  }));
}

/** Shows the page the hash names (the sign-in page without a key). */
function render(): void {
  const key = keys.get();
  if (!key) return showSignIn();
  const loc = parseHash(location.hash);
  const match = matchRoute(ROUTES, loc.path);
  if (!match) {
    location.replace(toHash(HOME));
    return;
  }
  if (!frame) {
    const f = (frame = layout(ROUTES, signOut));
    replace(root, f.el);
    isAdminKey(new ApiClient(key)).then((admin) => f.setAdmin(admin), () => {});
  }
  // Moving between pages puts focus on the new content (as a page load would put it at the top); the first page leaves it at the top.
  const moved = current !== undefined;
  leave();
  const left = new AbortController();
  const ctx: ViewContext = {
    api: new ApiClient(key),
    params: match.params,
    query: loc.query,
    signal: left.signal,
    navigate: (path, query) => void (location.hash = toHash(path, query)),
    signOut,
  };
  let mounted: Mounted;
  try {
    mounted = match.route.view(ctx);
  } catch (err) {
    mounted = { el: h('p', { class: 'notice notice-error', role: 'alert' }, String(err)) };
  }
  current = { ...mounted, leave: left };
  document.title = `${match.route.title} · forkd`;
  frame.setCurrent(loc.path);
  replace(frame.main, current.el);
  if (moved) frame.main.focus({ preventScroll: true });
}

window.addEventListener('hashchange', render);
render();
