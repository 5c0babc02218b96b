import type { IncomingMessage, ServerResponse } from 'node:http';
import { envelope, FLAG_COMPRESSED, FLAG_END_STREAM, FLAG_MESSAGE } from './connect-framing.js';
import type { EnvdCall } from './envd-call.js';
import { Selector, parseMessage } from './envd-messages.js';
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

export async function streamInput(call: EnvdCall, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let buf = Buffer.alloc(0);
  let sel: { pid: number } | { tag: string } | undefined;
  const handle = async (payload: Buffer) => {
    const ev = parseMessage(Event, payload.length ? JSON.parse(payload.toString('utf8')) : {});
    if (ev.start) {
      sel = ev.start.process.pid !== undefined ? { pid: ev.start.process.pid } : { tag: ev.start.process.tag! };
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
      while (buf.length >= 5) {
        const flag = buf.readUInt8(0);
        const len = buf.readUInt32BE(1);
        if (len > MAX_ENVELOPE) throw new RpcError('resource_exhausted', 'message too large');
        if (buf.length < 5 + len) break;
        const payload = buf.subarray(5, 5 + len);
        buf = buf.subarray(5 + len);
        if (flag & FLAG_COMPRESSED) throw new RpcError('internal', 'compressed messages are not supported');
        if (flag & FLAG_END_STREAM) continue;
        await handle(payload);
      }
    }
    if (buf.length) throw new RpcError('invalid_argument', 'truncated message');
  } catch (err) {
    error = err instanceof SyntaxError ? { code: 'invalid_argument', message: 'a message is not valid JSON' } : rpcError(err, call.requestId);
  }
  res.writeHead(200, { 'content-type': 'application/connect+json' });
  if (!error) res.write(envelope(FLAG_MESSAGE, {}));
  res.end(envelope(FLAG_END_STREAM, error ? { error } : {}));
}
