import type { IncomingMessage, ServerResponse } from 'node:http';
import { envelope, FLAG_COMPRESSED, FLAG_END_STREAM, FLAG_MESSAGE, jsonPayload, takeEnvelope, type Parsed } from './connect-framing.js';
import type { EnvdCall } from './envd-call.js';
import { Selector } from './envd-messages.js';
import { RpcError, rpcError } from './e2b-errors.js';
import { z } from 'zod';

/**
 * `process.Process/StreamInput`, Connect client streaming: a start event
 * naming the process, then input events written in order as they arrive,
 * keepalives ignored. Not used by the JS SDK (fetch cannot stream request
 * bodies everywhere); other clients do.
 */

const MAX_ENVELOPE = 16 * 1024 * 1024;

const Event = z.looseObject({
  start: z.looseObject({ process: Selector }).optional(),
  data: z.looseObject({ input: z.looseObject({ stdin: z.string().optional(), pty: z.string().optional() }).default({}) }).optional(),
  keepalive: z.unknown().optional(),
});

/** One client event of the stream, decoded: a typed error for bytes that are not one. */
export function parseInputEvent(payload: Buffer): Parsed<z.infer<typeof Event>> {
  const json = jsonPayload(payload);
  if (!json.ok) return json;
  const r = Event.safeParse(json.value ?? {});
  return r.success ? { ok: true, value: r.data } : { ok: false, error: r.error.issues.map((i) => `${i.path.join('.') || 'message'}: ${i.message}`).join('; ') };
}

export async function streamInput(call: EnvdCall, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let buf: Buffer = Buffer.alloc(0);
  let sel: { pid: number } | { tag: string } | undefined;
  // Each event is written before the next chunk is read: a process that does not read its stdin
  // holds the client's body in TCP, not in the daemon.
  const handle = async (payload: Buffer) => {
    const parsed = parseInputEvent(payload);
    if (!parsed.ok) throw new RpcError('invalid_argument', parsed.error);
    const ev = parsed.value;
    const start = ev.start?.process;
    if (start) {
      sel = start.pid !== undefined ? { pid: start.pid } : { tag: start.tag ?? '' };
      return;
    }
    if (ev.data) {
      if (!sel) throw new RpcError('failed_precondition', 'the start event must come first');
      const data = Buffer.from(ev.data.input.stdin ?? ev.data.input.pty ?? '', 'base64');
      if (data.length) await call.view.writeStdin(call.id, sel, data, false);
    }
  };
  let error: { code: ReturnType<typeof rpcError>['code']; message: string } | undefined;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      buf = Buffer.concat([buf, chunk]);
      for (let next = takeEnvelope(buf, MAX_ENVELOPE); next; next = takeEnvelope(buf, MAX_ENVELOPE)) {
        if (!next.ok) throw new RpcError('resource_exhausted', next.error);
        const { envelope: env, rest } = next.value;
        buf = rest;
        if (env.flag & FLAG_COMPRESSED) throw new RpcError('internal', 'compressed messages are not supported');
        if (env.flag & FLAG_END_STREAM) continue;
        await handle(env.payload);
      }
    }
    if (buf.length) throw new RpcError('invalid_argument', 'truncated message');
  } catch (err) {
    error = rpcError(err, call.requestId);
  }
  if (res.destroyed) return;
  res.writeHead(200, { 'content-type': 'application/connect+json' });
  if (!error) res.write(envelope(FLAG_MESSAGE, {}));
  res.end(envelope(FLAG_END_STREAM, error ? { error } : {}));
}
