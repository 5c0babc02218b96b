import type { Context } from 'hono';
import type { z } from 'zod';
import type { NodeService } from '../../node-contract/index.js';
import type { Principal } from '../auth/api-keys.js';
import { E2bApiError } from './e2b-errors.js';

/** What E2B's API middleware leaves on each call (e2b-api.ts): who calls, their tenant view, the sandbox named. */
export type E2bEnv = { Variables: { requestId: string; who: Principal; view: NodeService; sandbox: string | undefined } };
export type C = Context<E2bEnv>;

/** A JSON body checked against its schema; E2B's 400 with the first issues otherwise. */
export async function body<T extends z.ZodType>(c: C, schema: T, optional = false): Promise<z.infer<T>> {
  const text = await c.req.text();
  if (!text.trim()) {
    if (optional) return schema.parse({});
    throw new E2bApiError(400, 'a JSON body is required');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new E2bApiError(400, 'the body is not valid JSON');
  }
  const r = schema.safeParse(json);
  if (!r.success) throw new E2bApiError(400, r.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
  return r.data;
}
