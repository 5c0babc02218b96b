import type { Context } from 'hono';
import { ForkdError } from '@forkd/protocol';

const MAX_JSON_BODY = 24 * 1024 * 1024;

/** A JSON request body: bounded in size, and INVALID_ARGUMENT (never a 500) when it is not JSON. */
export async function jsonBody(c: Context): Promise<unknown> {
  const len = Number(c.req.header('content-length') ?? '0');
  if (len > MAX_JSON_BODY) throw new ForkdError('INVALID_ARGUMENT', `request body larger than ${MAX_JSON_BODY} bytes`, { limitBytes: MAX_JSON_BODY });
  const text = await c.req.text();
  if (text.length > MAX_JSON_BODY) throw new ForkdError('INVALID_ARGUMENT', `request body larger than ${MAX_JSON_BODY} bytes`, { limitBytes: MAX_JSON_BODY });
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ForkdError('INVALID_ARGUMENT', 'request body is not valid JSON');
  }
}

