import { setFlagsFromString } from 'node:v8';
import { ForkdError } from '@forkd/protocol';

// V8's linear-time engine (the `l` flag) runs in time linear in the input,
// whatever the pattern: a tenant's policy cannot stall the daemon with
// catastrophic backtracking. It is behind a flag, which must be set before
// the first such expression is made; it has no back-references or lookarounds
// (the protocol's schema refuses those already).
setFlagsFromString('--enable-experimental-regexp-engine');

const cache = new Map<string, RegExp>();
const CACHE_MAX = 4096;

/** The pattern on the linear-time engine; INVALID_ARGUMENT naming it when it cannot run there. */
export function linearRegExp(pattern: string): RegExp {
  let re = cache.get(pattern);
  if (re) return re;
  try {
    re = new RegExp(pattern, 'l');
  } catch (err) {
    throw new ForkdError('INVALID_ARGUMENT', `policy pattern ${JSON.stringify(pattern.slice(0, 80))} cannot be run in linear time: ${(err as Error).message}`, { issues: [{ message: `pattern ${JSON.stringify(pattern.slice(0, 80))}` }] });
  }
  if (cache.size >= CACHE_MAX) cache.clear();
  cache.set(pattern, re);
  return re;
}

/** Every pattern of a document, checked at set time. */
export function checkLinear(patterns: Iterable<string>): void {
  for (const p of patterns) linearRegExp(p);
}
