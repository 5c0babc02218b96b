import type { SecureContext } from 'node:tls';
import type { NodeCredential } from '@forkd/protocol';
import type { EgressInterceptor, OutboundRequest } from '../network/egress-interceptor.js';
import type { NodeEventSink } from '../node-event.js';
import { credentialApplies, expired, hostMatches } from './credential-match.js';

/** What the interceptor needs of the per-sandbox CAs. */
export interface TlsContexts {
  context(sandboxId: string, host: string): Promise<SecureContext>;
}

/** Audit detail of one use: which grant and secret, where; never the value. */
export function useDetail(c: NodeCredential, req: OutboundRequest): string {
  return `grant=${c.grantId} secret=${c.secret} ${req.tls ? 'https' : 'http'}://${req.host}:${req.port} ${req.method} ${req.path.slice(0, 300)}`;
}

/**
 * The egress proxy's credential injector: each sandbox's credentials in this
 * process's memory only (replaced whole by setCredentials), matched per
 * request, so a revocation or an expiry applies to the very next request.
 * Every header added is reported as a `secret.use` event (the audit log).
 */
export class CredentialInterceptor implements EgressInterceptor {
  readonly #creds = new Map<string, readonly NodeCredential[]>();
  readonly #tls: TlsContexts;
  readonly #onEvent: NodeEventSink | undefined;
  readonly #now: () => number;

  constructor(tls: TlsContexts, onEvent?: NodeEventSink, now: () => number = Date.now) {
    this.#tls = tls;
    this.#onEvent = onEvent;
    this.#now = now;
  }

  set(sandboxId: string, creds: readonly NodeCredential[]): void {
    if (creds.length === 0) this.#creds.delete(sandboxId);
    else this.#creds.set(sandboxId, [...creds]);
  }

  credentials(sandboxId: string): readonly NodeCredential[] {
    return this.#creds.get(sandboxId) ?? [];
  }

  terminates(sandboxId: string, host: string, port: number): boolean {
    const now = this.#now();
    return (this.#creds.get(sandboxId) ?? []).some((c) => !expired(c, now) && c.hosts.some((p) => hostMatches(p, host, port)));
  }

  tlsContext(sandboxId: string, host: string): Promise<SecureContext> {
    return this.#tls.context(sandboxId, host);
  }

  headers(sandboxId: string, req: OutboundRequest): Array<[name: string, value: string]> {
    const now = this.#now();
    const out = new Map<string, [string, string, NodeCredential]>();
    for (const c of this.#creds.get(sandboxId) ?? []) {
      // The first grant for a header name wins: two grants never both send one.
      if (credentialApplies(c, req, now) && !out.has(c.headerName.toLowerCase())) out.set(c.headerName.toLowerCase(), [c.headerName, c.headerValue, c]);
    }
    const at = new Date(now).toISOString();
    for (const [, , c] of out.values()) this.#onEvent?.({ at, sandboxId, operation: 'secret.use', detail: useDetail(c, req), code: 'OK', durationMs: 0 });
    return [...out.values()].map(([n, v]) => [n, v]);
  }
}
