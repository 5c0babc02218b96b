import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { createServer, type Server, type Socket as TcpSocket } from 'node:net';
import { randomInt } from 'node:crypto';
import { aQuery, errorReply, parseAddresses, parseQuestion, RCODE_NXDOMAIN, RCODE_REFUSED, type DnsAddresses } from './dns-message.js';
import { nameVerdict } from './domain-rules.js';
import type { EgressPolicy, EgressSandbox } from './egress-policy.js';

export interface Upstream {
  host: string;
  port: number;
}

const UPSTREAM_TIMEOUT_MS = 3000;
/** Queries in flight to the upstream at once, over every sandbox: a flood of them is dropped, not queued. */
const MAX_INFLIGHT = 256;
const MAX_TCP_CONNS = 128;
const CACHE_MAX = 10_000;

/**
 * forkd's DNS resolver for egress sandboxes: every query a sandbox sends to
 * port 53 of any address is redirected here (nft, see egress-nft.ts). A
 * query from an address that is not one of this node's sandboxes gets no
 * answer; one for a name the sandbox's rules deny gets NXDOMAIN; any other
 * is forwarded to the upstream and its answer returned as sent, its A
 * records learned for the sandbox (see EgressPolicy).
 */
export class EgressResolver {
  readonly #policy: EgressPolicy;
  readonly #upstream: Upstream;
  #udp: Socket | undefined;
  #tcp: Server | undefined;
  #inflight = 0;
  readonly #cache = new Map<string, { r: DnsAddresses; until: number }>();
  #conns = 0;

  constructor(policy: EgressPolicy, upstream: Upstream) {
    this.#policy = policy;
    this.#upstream = upstream;
  }

  /** Listens (UDP and TCP) on `port` (0: any free one, the same for both); returns it. */
  async listen(port: number): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const udp = createSocket('udp4');
      udp.on('message', (m, r) => void this.#onUdp(udp, m, r));
      udp.on('error', () => {});
      await new Promise<void>((res, rej) => {
        udp.once('error', rej);
        udp.bind(port, '0.0.0.0', () => res());
      });
      const p = udp.address().port;
      const tcp = createServer((s) => this.#onTcp(s));
      const ok = await new Promise<boolean>((res) => {
        tcp.once('error', () => res(false));
        tcp.listen(p, '0.0.0.0', () => res(true));
      });
      if (ok) {
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

  async #answer(sb: EgressSandbox, msg: Buffer): Promise<Buffer | undefined> {
    const q = parseQuestion(msg);
    if (!q) return undefined;
    const verdict = nameVerdict(sb.rules, q.name);
    if (verdict === 'deny') {
      // Its addresses go to the deny set: connecting to them by address is refused too.
      void this.lookup(q.name).then((r) => r && this.#policy.learn(sb, q.name, r.a));
      return errorReply(msg, q, RCODE_NXDOMAIN);
    }
    const reply = await this.#forward(msg);
    if (!reply) return errorReply(msg, q, RCODE_REFUSED);
    const got = parseAddresses(reply);
    if (got) await this.#policy.learn(sb, q.name, got.a);
    return reply;
  }

  async #onUdp(sock: Socket, msg: Buffer, r: RemoteInfo): Promise<void> {
    const sb = this.#policy.byRemote(r.address);
    if (!sb) return;
    const reply = await this.#answer(sb, msg).catch(() => undefined);
    if (reply) sock.send(reply, r.port, r.address);
  }

  #onTcp(s: TcpSocket): void {
    const sb = this.#policy.byRemote(s.remoteAddress ?? '');
    if (!sb || this.#conns >= MAX_TCP_CONNS) return void s.destroy();
    this.#conns++;
    s.on('close', () => this.#conns--);
    s.on('error', () => {});
    s.setTimeout(10_000, () => s.destroy());
    let buf = Buffer.alloc(0);
    s.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      while (buf.length >= 2 && buf.length >= 2 + buf.readUInt16BE(0)) {
        const msg = buf.subarray(2, 2 + buf.readUInt16BE(0));
        buf = buf.subarray(2 + msg.length);
        void this.#answer(sb, msg)
          .catch(() => undefined)
          .then((reply) => {
            if (!reply || s.destroyed) return;
            const len = Buffer.alloc(2);
            len.writeUInt16BE(reply.length);
            s.write(Buffer.concat([len, reply]));
          });
      }
      if (buf.length > 4096) s.destroy();
    });
  }

  /** One exchange with the upstream over UDP (its own socket: a random source port per query). */
  #forward(msg: Buffer): Promise<Buffer | undefined> {
    if (this.#inflight >= MAX_INFLIGHT) return Promise.resolve(undefined);
    this.#inflight++;
    return new Promise<Buffer | undefined>((resolve) => {
      const s = createSocket('udp4');
      const done = (b: Buffer | undefined) => {
        clearTimeout(t);
        s.close();
        resolve(b);
      };
      const t = setTimeout(() => done(undefined), UPSTREAM_TIMEOUT_MS);
      s.on('error', () => done(undefined));
      s.on('message', (m, r) => {
        if (r.address === this.#upstream.host && m.length >= 2 && m.readUInt16BE(0) === msg.readUInt16BE(0)) done(m);
      });
      s.send(msg, this.#upstream.port, this.#upstream.host);
    }).finally(() => this.#inflight--);
  }

  /**
   * `name`'s A records from the upstream (the proxy's resolution, and a
   * denied name's addresses), cached for their TTL (at most a minute): a
   * proxied request does not wait for a DNS round trip each time.
   */
  async lookup(name: string): Promise<DnsAddresses | undefined> {
    const hit = this.#cache.get(name);
    if (hit && hit.until > Date.now()) return hit.r;
    const reply = await this.#forward(aQuery(randomInt(65536), name));
    const r = reply ? parseAddresses(reply) : undefined;
    if (r && r.rcode === 0 && r.a.length) {
      if (this.#cache.size >= CACHE_MAX) this.#cache.clear();
      this.#cache.set(name, { r, until: Date.now() + Math.min(60, ...r.a.map((x) => x.ttl)) * 1000 });
    }
    return r;
  }
}
