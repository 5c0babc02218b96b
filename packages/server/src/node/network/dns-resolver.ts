import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { randomInt } from 'node:crypto';
import { dnsQuery, errorReply, parseAddresses, parseQuestion, RCODE, TYPE, type DnsAddresses } from './dns-message.js';
import { rebuildReply, UDP_MAX } from './dns-answer.js';
import { dnsDecision } from './dns-policy.js';
import type { EgressPolicy, EgressSandbox } from './egress-policy.js';
import { destroyQuietly, guardListener, recordFault } from '../../shared/connection-guard.js';
import { OwnerSlots } from './owner-slots.js';
import { KeyedBuckets } from '../../shared/keyed-buckets.js';

export interface Upstream {
  host: string;
  port: number;
}

const UPSTREAM_TIMEOUT_MS = 3000;
/**
 * Queries in flight to the upstream at once, per sandbox and in all: a
 * flood is answered SERVFAIL at once, not queued, and one sandbox holding
 * its slots with names whose servers never answer leaves the rest to its
 * neighbours.
 */
const INFLIGHT = { total: 256, perOwner: 32 };
/** Upstream queries a sandbox may start: a burst, then a rate (the upstream may limit the whole host's rate). */
const QUERY_RATE = { capacity: 100, perSecond: 50 };
/** TCP connections to port 53 open at once, per sandbox and in all. */
const TCP_CONNS = { total: 128, perOwner: 8 };
const CACHE_MAX = 10_000;

/**
 * forkd's DNS resolver for egress sandboxes: every query a sandbox sends to
 * port 53 of any address is redirected here (nft, see egress-nft.ts). A
 * query from an address that is not one of this node's sandboxes gets no
 * answer. What is asked upstream, and what is not, is dnsDecision's
 * (dns-policy.ts): a denied name gets NXDOMAIN without any upstream query.
 * What is asked is forkd's own query, and the reply is rebuilt from the
 * answer's records on the question's chain (dns-answer.ts), its A records
 * learned for the sandbox (see EgressPolicy).
 */
export class EgressResolver {
  readonly #policy: EgressPolicy;
  readonly #upstream: Upstream;
  #udp: Socket | undefined;
  #tcp: Server | undefined;
  readonly #inflight = new OwnerSlots(INFLIGHT);
  readonly #rate = new KeyedBuckets(QUERY_RATE);
  readonly #conns = new OwnerSlots(TCP_CONNS);
  readonly #cache = new Map<string, { r: DnsAddresses; until: number }>();

  constructor(policy: EgressPolicy, upstream: Upstream) {
    this.#policy = policy;
    this.#upstream = upstream;
  }

  /** Listens (UDP and TCP) on `port` (0: any free one, the same for both); returns it. */
  async listen(port: number): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket('udp4');
      // A throw on one datagram drops that datagram (counted), nothing else.
      udp.on('message', guardListener('dns', () => {}, (m: Buffer, r: RemoteInfo) => this.#onUdp(udp, m, r)));
      udp.on('error', () => {});
      await new Promise<void>((res, rej) => {
        udp.once('error', rej);
        udp.bind(port, '0.0.0.0', () => res());
      });
      const p = udp.address().port;
      const tcp = createServer((s) => guardListener('dns', () => destroyQuietly(s), () => this.#onTcp(s))());
      const ok = await new Promise<boolean>((res) => {
        tcp.once('error', () => res(false));
        tcp.listen(p, '0.0.0.0', () => res(true));
      });
      if (ok) {
        tcp.on('error', (err) => recordFault('dns', err, { during: 'accept' }));
        this.#udp = udp;
        this.#tcp = tcp;
        return p;
      }
      udp.close();
      if (port !== 0 || attempt > 20) throw new Error(`DNS port ${p}: TCP port in use`);
    }
  }

  async close(): Promise<void> {
    this.#udp?.close();
    await new Promise<void>((r) => (this.#tcp ? this.#tcp.close(() => r()) : r()));
  }

  /** The reply to a sandbox's query `msg` (at most `maxLen` bytes); undefined: not a query, no answer. */
  async #answer(sb: EgressSandbox, msg: Buffer, maxLen: number): Promise<Buffer | undefined> {
    const q = parseQuestion(msg);
    if (!q) return undefined;
    const d = dnsDecision(sb.rules, { name: q.name, type: q.type, qclass: msg.readUInt16BE(q.end - 2), opcode: (msg[2]! >> 3) & 0x0f });
    if (!d.ask) return errorReply(msg, q, d.rcode);
    const query = dnsQuery(randomInt(65536), q.name, q.type);
    const answer = query && (await this.#forward(query, sb.key));
    const reply = answer && rebuildReply(msg, q, answer, maxLen);
    if (!reply) return errorReply(msg, q, RCODE.SERVFAIL);
    const got = parseAddresses(reply);
    if (got) await this.#policy.learn(sb, q.name, got.a);
    return reply;
  }

  async #onUdp(sock: Socket, msg: Buffer, r: RemoteInfo): Promise<void> {
    const sb = this.#policy.byRemote(r.address);
    if (!sb) return;
    const reply = await this.#answer(sb, msg, UDP_MAX).catch(() => undefined);
    if (reply) sock.send(reply, r.port, r.address);
  }

  #onTcp(s: TcpSocket): void {
    const sb = this.#policy.byRemote(s.remoteAddress ?? '');
    const release = sb && this.#conns.take(sb.key);
    if (!sb || !release) return void s.destroy();
    s.on('close', release);
    s.on('error', () => {});
    s.setTimeout(10_000, () => s.destroy());
    let buf = Buffer.alloc(0);
    const close = () => destroyQuietly(s);
    const reply = guardListener('dns', close, async (msg: Buffer) => {
      const r = await this.#answer(sb, msg, 0xffff).catch(() => undefined);
      if (!r || s.destroyed) return;
      const len = Buffer.alloc(2);
      len.writeUInt16BE(r.length);
      s.write(Buffer.concat([len, r]));
    });
    s.on('data', guardListener('dns', close, (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        reply(msg);
      }
      if (buf.length > 4096) s.destroy();
    }));
  }

  /**
   * One exchange with the upstream over UDP (its own socket: a random source
   * port per query), on `owner`'s slot and rate (a sandbox's key; none:
   * forkd's own lookup); undefined: no slot, no token, or no answer in time.
   */
  #forward(msg: Buffer, owner: string | undefined): Promise<Buffer | undefined> {
    const release = this.#inflight.take(owner);
    if (!release) return Promise.resolve(undefined);
    if (owner !== undefined && !this.#rate.take(owner)) {
      release();
      return Promise.resolve(undefined);
    }
    return new Promise<Buffer | undefined>((resolve) => {
      const s = createSocket('udp4');
      const done = (b: Buffer | undefined) => {
        clearTimeout(t);
        s.close();
        resolve(b);
      };
      const t = setTimeout(() => done(undefined), UPSTREAM_TIMEOUT_MS);
      s.on('error', () => done(undefined));
      s.on('message', guardListener('dns', () => done(undefined), (m: Buffer, r: RemoteInfo) => {
        if (r.address === this.#upstream.host && m.length >= 2 && m.readUInt16BE(0) === msg.readUInt16BE(0)) done(m);
      }));
      s.send(msg, this.#upstream.port, this.#upstream.host);
    }).finally(release);
  }

  /**
   * `name`'s A records from the upstream (the proxy's resolution for a
   * sandbox, `owner`, which must have checked mayResolve; the literal names
   * of deny rules, no owner), cached for their TTL (at most a minute): a
   * proxied request does not wait for a DNS round trip each time.
   */
  async lookup(name: string, owner?: string): Promise<DnsAddresses | undefined> {
    const hit = this.#cache.get(name);
    if (hit && hit.until > Date.now()) return hit.r;
    const query = dnsQuery(randomInt(65536), name, TYPE.A);
    const q = query && parseQuestion(query);
    const answer = q && (await this.#forward(query, owner));
    const reply = q && answer && rebuildReply(query, q, answer, 0xffff);
    const r = reply ? parseAddresses(reply) : undefined;
    if (r && r.rcode === 0 && r.a.length) {
      if (this.#cache.size >= CACHE_MAX) this.#cache.clear();
      this.#cache.set(name, { r, until: Date.now() + Math.min(60, ...r.a.map((x) => x.ttl)) * 1000 });
    }
    return r;
  }
}
