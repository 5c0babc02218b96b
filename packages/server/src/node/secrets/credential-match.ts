import type { NodeCredential } from '@forkd/protocol';
import type { OutboundRequest } from '../network/egress-interceptor.js';
import { normalizeTarget } from './request-path.js';

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

/** A request target as the path limits compare it (see request-path.ts); undefined: ambiguous. */
function comparable(target: string): string | undefined {
  const t = normalizeTarget(target);
  return t && (t.query === undefined ? t.path : `${t.path}?${t.query}`);
}

/** Headers (and the query parameter) by which common frameworks let a request claim another method. */
export const METHOD_OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'];

/** Whether a request asks its upstream to treat it as another method than its own. */
export function overridesMethod(req: Pick<OutboundRequest, 'path' | 'headers'>): boolean {
  if (METHOD_OVERRIDES.some((h) => req.headers?.[h] !== undefined)) return true;
  const q = req.path.indexOf('?');
  return q >= 0 && new URLSearchParams(req.path.slice(q + 1)).has('_method');
}

/**
 * Whether the credential applies to the request (destination, method, path,
 * not expired). A method-limited grant never applies to a request claiming
 * another method (the upstream may honour the claim); a path-limited one
 * matches the normalized path only, and never one without an unambiguous form.
 */
export function credentialApplies(c: NodeCredential, req: Pick<OutboundRequest, 'host' | 'port' | 'method' | 'path' | 'headers'>, now: number): boolean {
  if (expired(c, now)) return false;
  if (!c.hosts.some((p) => hostMatches(p, req.host, req.port))) return false;
  if (c.methods && c.methods.length > 0 && (!c.methods.includes(req.method.toUpperCase()) || overridesMethod(req))) return false;
  if (c.paths && c.paths.length > 0) {
    const path = comparable(req.path);
    if (path === undefined) return false;
    const under = (p: string) => {
      const prefix = comparable(p);
      return prefix !== undefined && pathMatches(prefix, path);
    };
    if (!c.paths.some(under)) return false;
  }
  return true;
}
