import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { ControlPlane } from '../control-plane.js';
import type { AccessTokens } from './access-tokens.js';
import { Lifetimes } from './lifetimes.js';
import type { SandboxReach } from './sandbox-mapping.js';

/** Open envd streams per sandbox, so a kill, pause or expiry cuts them (the SDK reads a cut as "the sandbox was killed"). */
export class OpenStreams {
  readonly #bySandbox = new Map<string, Set<() => void>>();

  /** Registers an abort; returns its removal. */
  add(id: string, abort: () => void): () => void {
    let set = this.#bySandbox.get(id);
    if (!set) this.#bySandbox.set(id, (set = new Set()));
    set.add(abort);
    return () => {
      set.delete(abort);
      if (set.size === 0 && this.#bySandbox.get(id) === set) this.#bySandbox.delete(id);
    };
  }

  abortAll(id: string): void {
    const set = this.#bySandbox.get(id);
    this.#bySandbox.delete(id);
    for (const f of set ?? []) f();
  }
}

/** What both E2B servers (API and envd gateway) share. */
export interface E2bContext {
  svc: NodeService;
  control: ControlPlane;
  logger: Logger;
  tokens: AccessTokens;
  lifetimes: Lifetimes;
  streams: OpenStreams;
  /** Where `{port}-{id}.{domain}` is served over HTTPS (FORKD_PROXY_DOMAIN with its certificate); told to the SDK as each sandbox's domain. */
  sandboxDomain?: string | undefined;
}

/** What create, connect and getInfo tell the SDK about reaching the sandbox `id`. */
export function sandboxReach(ctx: E2bContext, id: string): SandboxReach {
  return { envdAccessToken: ctx.tokens.token(id), trafficAccessToken: ctx.tokens.trafficToken(id), domain: ctx.sandboxDomain ?? null };
}

export function e2bContext(svc: NodeService, control: ControlPlane, logger: Logger, tokens: AccessTokens, sandboxDomain?: string): E2bContext {
  const streams = new OpenStreams();
  return { svc, control, logger, tokens, streams, sandboxDomain, lifetimes: new Lifetimes(svc, logger, (id) => streams.abortAll(id), control.replicaId ? { leases: control.store, holder: control.replicaId } : undefined) };
}
