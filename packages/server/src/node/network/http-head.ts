import { hostName, type NameResult } from './tls-sni.js';

/** A token (RFC 9110 5.6.2): a method or a header field name. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e\x80-\xff]+) HTTP\/1\.[01]$/;
const NONE: NameResult = { kind: 'none' };

/**
 * The destination name of the first request on a plain-HTTP connection,
 * read from its head without consuming it (the proxy forwards the same
 * bytes): `need` until the head is complete, `none` when it is not a
 * request head the proxy can vouch for. The bytes come from a sandbox; no
 * input throws. The spliced path sends the head upstream as it came, so
 * whatever a server might take for the destination must agree with the name
 * checked: two Host fields, a folded or malformed field line, or an
 * absolute-form target naming another host than Host are refused.
 */
export function readHost(b: Buffer): NameResult {
  const end = b.indexOf('\r\n\r\n');
  const firstEol = b.indexOf('\r\n');
  // A first line that is already wrong is refused now, not after 64 KiB or the peek timeout.
  if (firstEol >= 0 && !REQUEST_LINE.test(b.toString('latin1', 0, firstEol))) return NONE;
  if (end < 0) return { kind: 'need' };
  const lines = b.toString('latin1', 0, end).split('\r\n');
  const target = REQUEST_LINE.exec(lines[0] ?? '')?.[2] ?? '';
  let host: string | undefined;
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) return NONE;
    if (line.slice(0, colon).toLowerCase() !== 'host') continue;
    if (host !== undefined) return NONE;
    host = line.slice(colon + 1).trim();
  }
  const absolute = /^http:\/\/([^/?#]*)/i.exec(target)?.[1];
  if (absolute !== undefined && host !== undefined && absolute.toLowerCase() !== host.toLowerCase()) return NONE;
  const authority = host ?? absolute;
  return authority ? nameOfAuthority(authority) : NONE;
}

/** The name of a Host value, `name[:port]` or `[v6][:port]` (the port digits only). */
export function nameOfAuthority(a: string): NameResult {
  const m = /^(\[[^\]]*\]|[^:[\]@]*)(?::(\d{0,5}))?$/.exec(a);
  if (!m) return NONE;
  const h = m[1] ?? '';
  return hostName(h.startsWith('[') ? h.slice(1, -1) : h);
}
