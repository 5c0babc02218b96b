import type { IncomingHttpHeaders, OutgoingHttpHeaders } from 'node:http';

/** Fields that belong to one hop, never forwarded either way. */
export const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer'];

/** What the sandbox is sent for an upstream's reply head, or why it is a 502 instead. */
export type ReplyHead = { ok: true; status: number; message: string | undefined; headers: OutgoingHttpHeaders } | { ok: false; why: string };

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What Node's writeHead takes in a reason phrase or a field value (anything else throws there). */
const FIELD_TEXT = /^[\t\x20-\x7e\x80-\xff]*$/;
/** A reply head the proxy re-sends is bounded (Node's client already caps what it parses: 16 KiB by default). */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * An upstream's reply head as the forwarder may re-send it with
 * `res.writeHead`, which throws on a status outside 100–999 or a character
 * it refuses: any upstream a sandbox names can send such a reply. A final
 * status outside 200–599, or a field that could not be written as it came,
 * is refused (a 502), never thrown.
 */
export function replyHead(statusCode: number | undefined, statusMessage: string | undefined, headers: IncomingHttpHeaders): ReplyHead {
  if (statusCode === undefined || !Number.isInteger(statusCode) || statusCode < 200 || statusCode > 599) return { ok: false, why: `upstream status ${String(statusCode)}` };
  const out: OutgoingHttpHeaders = {};
  let bytes = 0;
  for (const [k, v] of Object.entries(headers)) {
    if (v === undefined || HOP_BY_HOP.includes(k)) continue;
    if (!TOKEN.test(k)) return { ok: false, why: 'upstream header name' };
    for (const one of Array.isArray(v) ? v : [v]) {
      if (!FIELD_TEXT.test(one)) return { ok: false, why: `upstream header ${k}` };
      bytes += k.length + one.length + 4;
    }
    out[k] = v;
  }
  if (bytes > MAX_HEAD_BYTES) return { ok: false, why: 'upstream header too large' };
  const message = statusMessage !== undefined && FIELD_TEXT.test(statusMessage) ? statusMessage : undefined;
  return { ok: true, status: statusCode, message, headers: out };
}
