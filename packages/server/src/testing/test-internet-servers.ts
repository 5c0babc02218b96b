import { createSocket } from 'node:dgram';
import { appendFileSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { errorReply, parseQuestion, RCODE } from '../node/network/dns-message.js';

/**
 * The test internet's servers, run inside its namespace (see
 * test-internet.ts): on each address HTTP on `port` and 80 (`hello from
 * <addr>`) and HTTPS on 443 (`tls hello from <addr>`; both echo an
 * `x-credential` header and a body's size), with the test CA's
 * certificate for the test zone), and a DNS server on DNS_ADDR for the zone
 * that logs every query it gets (`name type` lines in DNS_LOG of the cert
 * dir: what left the host) and never answers names under HANG_SUFFIX (an
 * authoritative server that holds a resolver's query until it times out).
 * argv: port, cert dir, zone as JSON ({ name or *.suffix: addr }), addresses…
 */
export const DNS_ADDR = '198.51.100.53';
export const DNS_LOG = 'dns-queries.log';
export const HANG_SUFFIX = '.hang.test';

function lookup(zone: Record<string, string>, name: string): string | undefined {
  if (zone[name]) return zone[name];
  for (const [k, v] of Object.entries(zone)) if (k.startsWith('*.') && name.endsWith(k.slice(1))) return v;
  return undefined;
}

function dnsAnswer(msg: Buffer, zone: Record<string, string>): Buffer | undefined {
  const q = parseQuestion(msg);
  if (!q) return undefined;
  const addr = lookup(zone, q.name);
  if (!addr) return errorReply(msg, q, RCODE.NXDOMAIN);
  const r = errorReply(msg, q, 0);
  if (q.type !== 1) return r;
  r.writeUInt16BE(1, 6);
  const rr = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, ...addr.split('.').map(Number)]);
  return Buffer.concat([r, rr]);
}

const CHUNK = Buffer.alloc(64 * 1024, 120);

function sendBytes(s: ServerResponse, n: number): void {
  s.writeHead(200, { 'content-length': n });
  const more = (): void => {
    while (n > 0) {
      const c = n >= CHUNK.length ? CHUNK : CHUNK.subarray(0, n);
      n -= c.length;
      if (!s.write(c)) return void s.once('drain', more);
    }
    s.end();
  };
  more();
}

function main(): void {
  const [port = '8080', certDir = '', zoneJson = '{}', ...addrs] = process.argv.slice(2);
  const zone = JSON.parse(zoneJson) as Record<string, string>;
  const tls = { key: readFileSync(`${certDir}/server.key`), cert: readFileSync(`${certDir}/server.pem`) };
  // A request's x-credential header and body size are echoed (what the egress proxy's interceptor added).
  const reply = (greeting: string) => (q: IncomingMessage, s: ServerResponse) => {
    // /bytes/<n>: n bytes (the benchmark's throughput), in 64 KiB writes.
    const big = /^\/bytes\/(\d{1,10})$/.exec(q.url ?? '');
    if (big) return sendBytes(s, Number(big[1]));
    let n = 0;
    q.on('data', (d: Buffer) => (n += d.length));
    q.on('end', () => s.end(`${greeting}${q.headers['x-credential'] ? ` with ${String(q.headers['x-credential'])}` : ''}${n ? ` got ${n}` : ''}`));
  };
  for (const a of addrs) {
    for (const p of [Number(port), 80]) createServer(reply(`hello from ${a}`)).listen(p, a);
    createTlsServer(tls, reply(`tls hello from ${a}`)).listen(443, a);
  }
  const dns = createSocket('udp4');
  dns.on('message', (m, r) => {
    const q = parseQuestion(m);
    appendFileSync(`${certDir}/${DNS_LOG}`, q ? `${q.name} ${q.type}\n` : '?\n');
    if (q?.name.endsWith(HANG_SUFFIX)) return;
    const reply = dnsAnswer(m, zone);
    if (reply) dns.send(reply, r.port, r.address);
  });
  dns.bind(53, DNS_ADDR);
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '')) main();
