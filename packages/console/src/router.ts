/** Where the console is: the path and query of its `#/…` hash. */
export interface Location {
  path: string;
  query: URLSearchParams;
}

export interface RouteMatch<R> {
  route: R;
  params: Record<string, string>;
}

/** `#/sandboxes/sbx-1?state=running` → path `/sandboxes/sbx-1`, query `state=running`; an empty hash is `/`. */
export function parseHash(hash: string): Location {
  const raw = hash.replace(/^#/, '');
  const at = raw.indexOf('?');
  const path = (at < 0 ? raw : raw.slice(0, at)) || '/';
  return { path: path.startsWith('/') ? path : `/${path}`, query: new URLSearchParams(at < 0 ? '' : raw.slice(at + 1)) };
}

/** The hash for a path and query (empty values left out). */
export function toHash(path: string, query: Record<string, string | undefined> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) q.set(k, v);
  const s = q.toString();
  return `#${path}${s ? `?${s}` : ''}`;
}

/**
 * The first route whose pattern matches the path: literal segments match
 * themselves, `:name` any one segment (decoded into params).
 */
export function matchRoute<R extends { pattern: string }>(routes: readonly R[], path: string): RouteMatch<R> | undefined {
  const segs = path.split('/').filter(Boolean);
  for (const route of routes) {
    const pat = route.pattern.split('/').filter(Boolean);
    if (pat.length !== segs.length) continue;
    const params: Record<string, string> = {};
    let ok = true;
    for (let i = 0; i < pat.length && ok; i++) {
      const p = pat[i]!;
      const s = segs[i]!;
      if (p.startsWith(':')) {
        try {
          params[p.slice(1)] = decodeURIComponent(s);
        } catch {
          ok = false;
        }
      } else ok = p === s;
    }
    if (ok) return { route, params };
  }
  return undefined;
}
