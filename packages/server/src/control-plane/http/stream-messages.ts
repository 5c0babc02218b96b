import type { RawData } from 'ws';
import { z } from 'zod';
import { ForkdError, ResumePoint, SpawnRequest, TAG_PATTERN } from '@forkd/protocol';
import { validate } from './validate.js';

/**
 * The client's messages on a stream socket (`/v1/sandboxes/{id}/stream`):
 * the first is a JSON open request, later text frames JSON control messages.
 * Any bytes decode to a message or an INVALID_ARGUMENT error, never a throw.
 */

const Open = z.union([
  z.object({ op: z.literal('spawn'), spawn: SpawnRequest }),
  /** `resume`: that very spawn, from that offset (a client resuming after a daemon restart; see ResumePoint). */
  z.object({ op: z.literal('attach'), pid: z.number().int().positive().optional(), tag: z.string().regex(TAG_PATTERN).optional(), resume: ResumePoint.optional() }),
]);
export type OpenRequest = z.infer<typeof Open>;

const Control = z.discriminatedUnion('type', [
  z.object({ type: z.literal('stdin_eof') }),
  z.object({ type: z.literal('resize'), cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(1000) }),
  z.object({ type: z.literal('signal'), signal: z.union([z.number().int().min(1).max(64), z.string().max(16)]) }),
]);
export type ControlMessage = z.infer<typeof Control>;

export type Decoded<T> = { ok: true; value: T } | { ok: false; error: ForkdError };

/** A message's bytes as one Buffer, whichever form ws handed them in. */
export function rawBytes(d: RawData): Buffer {
  if (Array.isArray(d)) return Buffer.concat(d);
  return Buffer.isBuffer(d) ? d : Buffer.from(d);
}

function decodeJson<S extends z.ZodType>(schema: S, bytes: Buffer, what: string): Decoded<z.infer<S>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch {
    return { ok: false, error: new ForkdError('INVALID_ARGUMENT', `${what} is not valid JSON`) };
  }
  try {
    return { ok: true, value: validate(schema, parsed) };
  } catch (err) {
    return { ok: false, error: err instanceof ForkdError ? err : new ForkdError('INVALID_ARGUMENT', `${what} is malformed`) };
  }
}

export function parseOpen(bytes: Buffer, binary: boolean): Decoded<OpenRequest> {
  if (binary) return { ok: false, error: new ForkdError('INVALID_ARGUMENT', 'first message must be a JSON open request') };
  const r = decodeJson(Open, bytes, 'open request');
  if (r.ok && r.value.op === 'attach' && (r.value.pid === undefined) === (r.value.tag === undefined)) {
    return { ok: false, error: new ForkdError('INVALID_ARGUMENT', 'attach needs exactly one of pid or tag') };
  }
  return r;
}

export function parseControl(bytes: Buffer): Decoded<ControlMessage> {
  return decodeJson(Control, bytes, 'control message');
}
