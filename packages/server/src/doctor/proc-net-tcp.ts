/** A listening TCP socket: its address (IPv4 dotted, `::` for the IPv6 wildcard, else `v6:<hex>`) and port. */
export interface Listener {
  address: string;
  port: number;
}

const LISTEN = '0A';

/** /proc/net/tcp or tcp6: the sockets in LISTEN. Lines of another shape are skipped. */
export function parseListeners(text: string): Listener[] {
  const out: Listener[] = [];
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    const m = /^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$/.exec(f[1] ?? '');
    if (!m || f[3] !== LISTEN) continue;
    out.push({ address: address(m[1]!), port: parseInt(m[2]!, 16) });
  }
  return out;
}

/** The kernel prints each 32-bit word in host order (little-endian here): bytes reversed. */
function address(hex: string): string {
  if (hex.length === 8) return [6, 4, 2, 0].map((i) => parseInt(hex.slice(i, i + 2), 16)).join('.');
  return /^0+$/.test(hex) ? '::' : `v6:${hex.toLowerCase()}`;
}

/** Whether a listener on `l` keeps a server from listening on `host`:`port`. */
export function blocks(l: Listener, host: string, port: number): boolean {
  if (l.port !== port) return false;
  const wildcard = (a: string) => a === '0.0.0.0' || a === '::' || a === '';
  return wildcard(l.address) || wildcard(host) || l.address === host || (host === 'localhost' && l.address === '127.0.0.1');
}
