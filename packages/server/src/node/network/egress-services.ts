import { readFileSync } from 'node:fs';
import { EgressResolver, type Upstream } from './dns-resolver.js';
import { DestinationGuard } from './destination-guard.js';
import { EgressPolicy } from './egress-policy.js';
import { EgressProxy, type ProxyDecision } from './egress-proxy.js';
import type { EgressInterceptor } from './egress-interceptor.js';

/** The ports forkd's resolver and proxy listen on (the node's nft table redirects to them). */
export interface EgressPorts {
  dns: number;
  http: number;
  tls: number;
}

export interface EgressServicesOptions {
  table: string;
  /** Wanted ports; 0: any free one (several nodes share a host and the gateway address). */
  ports: EgressPorts;
  /** The upstream resolver; default the host's first /etc/resolv.conf nameserver. */
  upstream?: Upstream | undefined;
  onDecision?: (d: ProxyDecision) => void;
  /** Credentials seam: terminates TLS and sets headers where it says (see egress-interceptor.ts). */
  interceptor?: EgressInterceptor | undefined;
  /** A PEM file of extra CAs the real hosts may chain to when TLS is terminated (FORKD_EGRESS_EXTRA_CA; tests). */
  extraCaFile?: string | undefined;
  /** CIDRs the operator lets sandboxes reach despite the host protection (FORKD_EGRESS_OPERATOR_ALLOW; see destination-guard.ts). */
  operatorAllow?: readonly string[] | undefined;
  /** The node's other listening ports (API, E2B): refused on the host's and loopback addresses whatever is allowed. */
  servicePorts?: readonly number[] | undefined;
  /** The uplink forkd turned IPv4 forwarding on for (uplink-forwarding.ts), whose forwarding the table guards. */
  routedUplink?: string | undefined;
}

/** The host's resolver: the first IPv4 nameserver of /etc/resolv.conf. */
export function hostUpstream(): Upstream {
  const text = (() => {
    try {
      return readFileSync('/etc/resolv.conf', 'utf8');
    } catch {
      return '';
    }
  })();
  const m = /^\s*nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/m.exec(text);
  return { host: m?.[1] ?? '127.0.0.1', port: 53 };
}

/** The resolver and proxy of one node, started once and shared by its sandboxes. */
export class EgressServices {
  readonly policy: EgressPolicy;
  /** The one destination check of the proxy (the nft side drops the same ranges: egress-nft.ts). */
  readonly destinations: DestinationGuard;
  readonly #o: EgressServicesOptions;
  #ports: EgressPorts | undefined;
  #started: Promise<EgressPorts> | undefined;
  #resolver: EgressResolver | undefined;
  #proxy: EgressProxy | undefined;

  constructor(o: EgressServicesOptions) {
    this.#o = o;
    this.policy = new EgressPolicy(o.table);
    const own = () => [...(o.servicePorts ?? []), ...(this.#ports ? [this.#ports.dns, this.#ports.http, this.#ports.tls] : [])];
    this.destinations = new DestinationGuard({ operatorAllow: o.operatorAllow, servicePorts: own });
  }

  get operatorAllow(): readonly string[] {
    return this.#o.operatorAllow ?? [];
  }

  get routedUplink(): string | undefined {
    return this.#o.routedUplink;
  }

  /** Starts them (once); the ports they listen on. */
  start(): Promise<EgressPorts> {
    this.#started ??= (async () => {
      const resolver = new EgressResolver(this.policy, this.#o.upstream ?? hostUpstream());
      const extraCa = this.#o.extraCaFile ? readFileSync(this.#o.extraCaFile, 'utf8') : undefined;
      const proxy = new EgressProxy({ policy: this.policy, resolver, destinations: this.destinations, interceptor: this.#o.interceptor, extraCa, ...(this.#o.onDecision ? { onDecision: this.#o.onDecision } : {}) });
      this.#resolver = resolver;
      this.#proxy = proxy;
      this.#ports = { dns: await resolver.listen(this.#o.ports.dns), http: await proxy.listen('http', this.#o.ports.http), tls: await proxy.listen('tls', this.#o.ports.tls) };
      return this.#ports;
    })();
    return this.#started;
  }

  get resolver(): EgressResolver | undefined {
    return this.#resolver;
  }

  async close(): Promise<void> {
    if (!this.#started) return;
    await this.#started.catch(() => undefined);
    await Promise.all([this.#resolver?.close(), this.#proxy?.close()]);
    this.#started = undefined;
  }
}
