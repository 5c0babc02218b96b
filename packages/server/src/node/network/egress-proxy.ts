import { connect, createServer, type Server, type Socket } from 'node:net';
import { addressAllowed, isIpv4, nameVerdict } from './domain-rules.js';
import { mayResolve } from './dns-policy.js';
import type { DestinationCheck } from './destination-guard.js';
import type { EgressPolicy, EgressSandbox } from './egress-policy.js';
import type { EgressResolver } from './dns-resolver.js';
import { readSni } from './tls-sni.js';
import { readHost } from './http-head.js';
import { destroyQuietly, guardListener, recordFault } from '../../shared/connection-guard.js';
import { relay } from './egress-relay.js';
import { OwnerSlots } from './owner-slots.js';
import { EgressHttpForwarder, type Route } from './egress-http-forwarder.js';
import type { EgressInterceptor } from './egress-interceptor.js';

export type ProxyKind = 'http' | 'tls';

/** The most a request head or ClientHello may take before a decision, and how long it may take to come. */
const MAX_PEEK = 64 * 1024;
const PEEK_TIMEOUT_MS = 10_000;
const CONNECT_TIMEOUT_MS = 10_000;
/** Connections through the proxy at once, per sandbox and in all: a sandbox cannot starve the node. */
const MAX_PER_SANDBOX = 512;
const MAX_TOTAL = 4096;
/** Of those, how many may be in forkd-splice processes at once (the rest relay in Node). */
const MAX_SPLICED_PER_SANDBOX = 32;
const MAX_SPLICED = 256;

/** What the proxy decided for one connection (logged by the caller, asserted by tests). */
export interface ProxyDecision {
  sandboxId: string;
  kind: ProxyKind;
  name: string | undefined;
  addr: string | undefined;
  allowed: boolean;
  why?: string;
}

/**
 * forkd's HTTP and TLS proxy for egress sandboxes: TCP 80 and 443 from a
 * sandbox are redirected here (nft, see egress-nft.ts). The destination is
 * the name the sandbox gives (Host header, TLS SNI), never the address it
 * connected to: the name is checked against the sandbox's rules, resolved by
 * forkd's resolver and its address against the address rules; then the
 * bytes read so far and the rest of the connection are relayed unchanged
 * (TLS is not terminated; a big transfer is handed to forkd-splice).
 */
export class EgressProxy {
  readonly #policy: EgressPolicy;
  readonly #resolver: EgressResolver;
  readonly #destinations: DestinationCheck;
  readonly #onDecision: ((d: ProxyDecision) => void) | undefined;
  readonly #interceptor: EgressInterceptor | undefined;
  readonly #forwarder: EgressHttpForwarder;
  readonly #servers: Server[] = [];
  readonly #connections = new OwnerSlots({ total: MAX_TOTAL, perOwner: MAX_PER_SANDBOX });
  readonly #release = new WeakMap<Socket, () => void>();
  readonly #relayed = new WeakSet<Socket>();
  readonly #spliced = new OwnerSlots({ total: MAX_SPLICED, perOwner: MAX_SPLICED_PER_SANDBOX });

  constructor(o: { policy: EgressPolicy; resolver: EgressResolver; destinations: DestinationCheck; onDecision?: (d: ProxyDecision) => void; interceptor?: EgressInterceptor | undefined; extraCa?: string | undefined }) {
    this.#policy = o.policy;
    this.#resolver = o.resolver;
    this.#destinations = o.destinations;
    this.#onDecision = o.onDecision;
    this.#interceptor = o.interceptor;
    this.#forwarder = new EgressHttpForwarder({ interceptor: o.interceptor, extraCa: o.extraCa, route: (sb, name, port) => this.#check(sb, name, port) });
  }

  async listen(kind: ProxyKind, port: number): Promise<number> {
    // Half-open: a client that shuts down its sending side still gets the whole answer.
    const srv = createServer({ noDelay: true, allowHalfOpen: true }, (s) => guardListener('egress-proxy', () => destroyQuietly(s), () => this.#accept(kind, s))());
    await new Promise<void>((res, rej) => {
      srv.once('error', rej);
      srv.listen(port, '0.0.0.0', () => res());
    });
    // After listening, an accept that fails (EMFILE) is an 'error' on the server: counted, never thrown.
    srv.on('error', (err) => recordFault('egress-proxy', err, { during: 'accept' }));
    this.#servers.push(srv);
    return (srv.address() as { port: number }).port;
  }

  async close(): Promise<void> {
    this.#forwarder.close();
    await Promise.all(this.#servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }

  #accept(kind: ProxyKind, s: Socket): void {
    s.on('error', () => {});
    const sb = this.#policy.byRemote(s.remoteAddress ?? '');
    const release = sb && this.#connections.take(sb.key);
    if (!sb || !release) return void s.destroy();
    // A relayed connection's slot is released when the relay ends (it may outlive this socket: forkd-splice).
    this.#release.set(s, release);
    s.once('close', () => !this.#relayed.has(s) && release());
    let buf: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => s.destroy(), PEEK_TIMEOUT_MS);
    const close = () => {
      clearTimeout(timer);
      destroyQuietly(s);
    };
    const onData = guardListener('egress-proxy', close, (d: Buffer) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      const r = kind === 'http' ? readHost(buf) : readSni(buf);
      if (r.kind === 'need' && buf.length < MAX_PEEK) return;
      s.off('data', onData);
      s.pause();
      clearTimeout(timer);
      return this.#route(kind, sb, s, buf, r.kind === 'name' ? r.name : undefined);
    });
    s.on('data', onData);
  }

  /** Where a connection or request naming `name` on `port` may go, after every check. */
  async #check(sb: EgressSandbox, name: string, port: number): Promise<Route> {
    let addr = name;
    let verdict = nameVerdict(sb.rules, name);
    if (isIpv4(name)) verdict = 'neutral';
    else {
      if (verdict === 'deny') return { why: `egress to ${name} is not allowed` };
      // A name the resolver would not ask about is not asked here either (a Host header is a query name too).
      if (!mayResolve(sb.rules, name)) return { why: `${name} does not resolve` };
      const r = await this.#resolver.lookup(name, sb.key);
      const first = r?.rcode === 0 ? r.a[0] : undefined;
      if (!r || !first) return { why: `${name} does not resolve` };
      await this.#policy.learn(sb, name, r.a);
      addr = first.addr;
    }
    // The proxy connects from the host: the host-protection check comes before (and whatever) the rules.
    const never = this.#destinations.refusal(addr, port);
    if (never) return { why: `egress to ${name} is not allowed: ${never}` };
    if (!addressAllowed(sb.rules, addr, verdict, this.#policy.learnedDenied(sb, addr))) return { why: `egress to ${name} (${addr}) is not allowed` };
    return { addr };
  }

  async #route(kind: ProxyKind, sb: EgressSandbox, s: Socket, head: Buffer, name: string | undefined): Promise<void> {
    const d: ProxyDecision = { sandboxId: sb.sandboxId, kind, name, addr: undefined, allowed: false };
    const refuse = (why: string) => {
      d.why = why;
      this.#onDecision?.(d);
      if (kind === 'http') s.end(`HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: ${why.length + 7}\r\nConnection: close\r\n\r\nforkd: ${why}\n`);
      else s.destroy();
    };
    // No name (TLS without SNI, HTTP without Host): the redirect hides the address the sandbox connected
    // to, so there is no destination to check. Refused.
    if (!name) return refuse('no destination name (Host header or TLS SNI)');
    const r = await this.#check(sb, name, kind === 'http' ? 80 : 443);
    if ('why' in r) return refuse(r.why);
    d.addr = r.addr;
    if (s.destroyed) return;
    // Where a credential may apply, every plain request is parsed (headers on each; each Host checked
    // again). Elsewhere the bytes are spliced after this first request's check, as TLS is without
    // termination: Node's HTTP parsing caps a connection at a fraction of the link's speed.
    if (kind === 'http' && this.#interceptor?.terminates(sb.sandboxId, name, 80)) {
      d.allowed = true;
      this.#onDecision?.(d);
      return this.#forwarder.serveHttp(sb, s, head);
    }
    if (kind === 'tls' && this.#interceptor?.terminates(sb.sandboxId, name, 443)) {
      const ctx = await this.#interceptor.tlsContext(sb.sandboxId, name).catch(() => undefined);
      if (!ctx) return refuse(`no certificate for ${name}`);
      d.allowed = true;
      this.#onDecision?.(d);
      return this.#forwarder.serveTls(sb, s, head, ctx, name);
    }
    this.#splice(kind, sb, s, head, r.addr, d);
  }

  #splice(kind: ProxyKind, sb: EgressSandbox, s: Socket, head: Buffer, addr: string, d: ProxyDecision): void {
    const up = connect({ host: addr, port: kind === 'http' ? 80 : 443, noDelay: true, allowHalfOpen: true, timeout: CONNECT_TIMEOUT_MS });
    // An 'error' with no listener is thrown by the emitter: one stays for the socket's life.
    up.on('error', () => {});
    up.once('timeout', () => up.destroy());
    const failed = () => s.destroy();
    up.on('error', failed);
    up.once('close', failed);
    const close = () => {
      destroyQuietly(up);
      destroyQuietly(s);
    };
    up.once('connect', guardListener('egress-proxy', close, () => {
      up.off('error', failed);
      up.off('close', failed);
      up.setTimeout(0);
      if (s.destroyed) return void up.destroy();
      d.allowed = true;
      this.#onDecision?.(d);
      up.write(head);
      this.#relayed.add(s);
      relay(s, up, () => this.#release.get(s)?.(), { slots: this.#spliced, owner: sb.key });
      s.resume();
    }));
  }
}
