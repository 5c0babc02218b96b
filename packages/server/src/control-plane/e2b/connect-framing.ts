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

/** A parse of client bytes: the value, or why the bytes are refused (never a throw). */
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/**
 * The next envelope at the start of `buf`: `undefined` while more bytes are
 * needed, an error for one longer than `max`, else the envelope and what follows.
 */
export function takeEnvelope(buf: Buffer, max: number): Parsed<{ envelope: Envelope; rest: Buffer }> | undefined {
  if (buf.length < 5) return undefined;
  const len = buf.readUInt32BE(1);
  if (len > max) return { ok: false, error: 'message too large' };
  if (buf.length - 5 < len) return undefined;
  return { ok: true, value: { envelope: { flag: buf[0]!, payload: buf.subarray(5, 5 + len) }, rest: buf.subarray(5 + len) } };
}

/** Splits a whole request body into its envelopes; a truncated one is an error. */
export function parseEnvelopes(buf: Buffer): Parsed<Envelope[]> {
  const out: Envelope[] = [];
  let rest = buf;
  while (rest.length) {
    const r = takeEnvelope(rest, rest.length);
    if (!r) return { ok: false, error: rest.length < 5 ? 'truncated envelope header' : 'truncated envelope' };
    if (!r.ok) return r;
    out.push(r.value.envelope);
    rest = r.value.rest;
  }
  return { ok: true, value: out };
}

/** A message's JSON payload (an empty one is `{}`). */
export function jsonPayload(payload: Buffer): Parsed<unknown> {
  if (!payload.length) return { ok: true, value: {} };
  try {
    return { ok: true, value: JSON.parse(payload.toString('utf8')) as unknown };
  } catch {
    return { ok: false, error: 'a message is not valid JSON' };
  }
}

/** The first message of a server-streaming request (the only one a client sends). */
export function streamRequestMessage(buf: Buffer): Parsed<unknown> {
  const envs = parseEnvelopes(buf);
  if (!envs.ok) return envs;
  const first = envs.value[0];
  if (!first) return { ok: true, value: {} };
  if (first.flag & FLAG_COMPRESSED) return { ok: false, error: 'compressed envelopes are not supported' };
  return jsonPayload(first.payload);
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
