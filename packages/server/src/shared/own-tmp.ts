import { randomBytes } from 'node:crypto';

/**
 * A temporary name beside `path` that no other process uses: daemons on one
 * host (a fleet's nodes, tests) set up the shared cache at the same time, and
 * one writing a shared `.tmp` while another renames or executes it gives a
 * half-written file or ETXTBSY. Write here, then rename over `path`.
 */
export function ownTmp(path: string): string {
  return `${path}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
}
