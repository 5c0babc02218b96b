import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { ControlPlane } from '../control-plane.js';
import type { AccessTokens } from './access-tokens.js';
import { Lifetimes } from './lifetimes.js';
import type { SandboxReach } from './sandbox-mapping.js';
import { KeyedCallbacks } from '../../shared/keyed-callbacks.js';

/** Open envd streams per sandbox, so a kill, pause or expiry cuts them (the SDK reads a cut as "the sandbox was killed"). */
export class OpenStreams extends KeyedCallbacks {
  abortAll(id: string): void {
    for (const f of this.take(id)) f();
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
