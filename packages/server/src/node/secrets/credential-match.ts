import type { NodeCredential } from '@forkd/protocol';

/** Whether a grant host (`host[:port]`, `*.suffix[:port]`; no port: any port) covers host:port. */
export function hostMatches(pattern: string, host: string, port: number): boolean {
  const i = pattern.lastIndexOf(':');
  const name = i < 0 ? pattern : pattern.slice(0, i);
  if (i >= 0 && Number(pattern.slice(i + 1)) !== port) return false;
  const h = host.toLowerCase().replace(/\.$/, '');
  // `*.example.com` covers sub-domains only: the apex is a different name, granted on its own.
  if (name.startsWith('*.')) return h.endsWith(name.slice(1)) && h.length > name.length - 1;
  return h === name;
}

/** Whether a path is under a prefix at a segment boundary (`/v1` covers `/v1`, `/v1/x`, `/v1?q`, never `/v10`). */
export function pathMatches(prefix: string, path: string): boolean {
  if (!path.startsWith(prefix)) return false;
  if (prefix.endsWith('/') || path.length === prefix.length) return true;
  const next = path[prefix.length];
  return next === '/' || next === '?' || next === '#';
}

export function expired(c: Pick<NodeCredential, 'expiresAt'>, now: number): boolean {
  return c.expiresAt !== undefined && Date.parse(c.expiresAt) <= now;
}

/** Whether the credential applies to the request (destination, method, path, not expired). */
export function credentialApplies(c: NodeCredential, req: { host: string; port: number; method: string; path: string }, now: number): boolean {
  if (expired(c, now)) return false;
  if (!c.hosts.some((p) => hostMatches(p, req.host, req.port))) return false;
  if (c.methods && c.methods.length > 0 && !c.methods.includes(req.method.toUpperCase())) return false;
  if (c.paths && c.paths.length > 0 && !c.paths.some((p) => pathMatches(p, req.path))) return false;
  return true;
}
