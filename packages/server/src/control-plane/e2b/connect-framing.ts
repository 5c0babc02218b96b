/**
 * Connect-RPC's envelope for streaming calls: one flag byte, a big-endian
 * uint32 length, the payload (JSON here). 0x00 is a message, 0x02 the
 * end-stream message; 0x01 (compressed) is never sent nor accepted.
 */
export const FLAG_MESSAGE = 0x00;
export const FLAG_COMPRESSED = 0x01;
export const FLAG_END_STREAM = 0x02;

export function envelope(flag: number, payload: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(payload), 'utf8');
  const head = Buffer.alloc(5);
  head.writeUInt8(flag, 0);
  head.writeUInt32BE(body.length, 1);
  return Buffer.concat([head, body]);
}

export interface Envelope {
  flag: number;
  payload: Buffer;
}

/** Splits a request body into its envelopes; throws on a truncated one. */
export function parseEnvelopes(buf: Buffer): Envelope[] {
  const out: Envelope[] = [];
  let at = 0;
  while (at < buf.length) {
    if (buf.length - at < 5) throw new Error('truncated envelope header');
    const flag = buf.readUInt8(at);
    const len = buf.readUInt32BE(at + 1);
    if (buf.length - at - 5 < len) throw new Error('truncated envelope');
    out.push({ flag, payload: buf.subarray(at + 5, at + 5 + len) });
    at += 5 + len;
  }
  return out;
}

/** The first message of a server-streaming request (the only one a client sends). */
export function streamRequestMessage(buf: Buffer): unknown {
  const envs = parseEnvelopes(buf);
  const first = envs[0];
  if (!first) return {};
  if (first.flag & FLAG_COMPRESSED) throw new Error('compressed envelopes are not supported');
  return first.payload.length ? JSON.parse(first.payload.toString('utf8')) : {};
}

/** Connect's timeout header (milliseconds; at most 10 digits); undefined when absent or malformed. */
export function connectTimeoutMs(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d{1,10}$/.test(v)) return undefined;
  const n = Number(v);
  return n > 0 ? n : undefined;
}

/** envd's keepalive interval: `Keepalive-Ping-Interval` seconds, 90 when absent or not an integer. */
export function keepaliveMs(v: string | undefined): number {
  const n = v !== undefined && /^\d{1,6}$/.test(v) ? Number(v) : 90;
  return Math.max(1, n) * 1000;
}
