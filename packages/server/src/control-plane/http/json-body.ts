import type { Context } from 'hono';
import { ForkdError } from '@forkd/protocol';

export const MAX_JSON_BODY = 24 * 1024 * 1024;

function tooLarge(max: number): ForkdError {
  return new ForkdError('INVALID_ARGUMENT', `request body larger than ${max} bytes`, { limitBytes: max });
}

/**
 * A JSON request body: bounded in size while it is read (a chunked body has
 * no length to check first, and must not be buffered whole before the check),
 * and INVALID_ARGUMENT (never a 500) when it is not JSON. What the client
 * still sends after the answer is discarded by the Node adapter, bounded.
 */
export async function jsonBody(c: Context, max = MAX_JSON_BODY): Promise<unknown> {
  const len = Number(c.req.header('content-length') ?? '0');
  if (len > max) throw tooLarge(max);
  const body = c.req.raw.body;
  if (!body) return {};
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > max) {
        void reader.cancel().catch(() => {});
        throw tooLarge(max);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  const text = Buffer.concat(chunks, size).toString('utf8');
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ForkdError('INVALID_ARGUMENT', 'request body is not valid JSON');
  }
}
