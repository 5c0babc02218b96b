import type { Context } from 'hono';
import type { z } from 'zod';
import { ForkdError } from '@forkd/protocol';

/** A request the node could not have come from its control plane is INVALID_ARGUMENT, with the offending paths. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  throw new ForkdError('INVALID_ARGUMENT', issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; '), { issues });
}

/** A JSON body (empty: `{}`). The caller is the authenticated control plane, whose own API bounded what it forwards. */
export async function jsonOf(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (!text.trim()) return {};
  try {
    return JSON.parse(text);
  } catch {
    throw new ForkdError('INVALID_ARGUMENT', 'request body is not valid JSON');
  }
}

/** A whole number in [min, max], or INVALID_ARGUMENT naming it. */
export function intIn(value: unknown, min: number, max: number, name: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) throw new ForkdError('INVALID_ARGUMENT', `${name} must be an integer from ${min} to ${max}`);
  return value;
}
