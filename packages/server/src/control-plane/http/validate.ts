import { ForkdError } from '@forkd/protocol';
import type { z } from 'zod';

/** Parses untrusted input against a schema; every failure is INVALID_ARGUMENT with the offending paths. */
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  throw new ForkdError('INVALID_ARGUMENT', issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join('; '), { issues });
}
