import type { IdMap } from './runtime.js';

/**
 * The two records forkd keeps beside CRIU's files in a bundle and in every
 * checkpoint's images (see runc-images.ts). Images travel (export, import,
 * template copies between nodes), so their bytes are parsed as untrusted:
 * a typed result, never a throw, nothing taken from JSON but the fields.
 */

export type IdmapRecord = { kind: 'idmap'; idmap: IdMap } | { kind: 'malformed' };
export type LayoutRecord = { kind: 'layout'; devInRoot: boolean } | { kind: 'malformed' };

/** Larger than any record forkd writes (tens of bytes): anything beyond is not one. */
const MAX_BYTES = 4096;
/** (uid_t)-1 is not an id: a range must end below it. */
const ID_LIMIT = 2 ** 32 - 1;

/**
 * A user namespace range: never one that maps host root (hostId 0), never
 * past the last valid id.
 */
export function parseIdmapRecord(bytes: Uint8Array): IdmapRecord {
  const o = jsonObject(bytes);
  const hostId = o?.['hostId'];
  const size = o?.['size'];
  if (!Number.isSafeInteger(hostId) || !Number.isSafeInteger(size)) return { kind: 'malformed' };
  const [h, s] = [hostId as number, size as number];
  if (h < 1 || s < 1 || h + s > ID_LIMIT) return { kind: 'malformed' };
  return { kind: 'idmap', idmap: { hostId: h, size: s } };
}

export function parseLayoutRecord(bytes: Uint8Array): LayoutRecord {
  const devInRoot = jsonObject(bytes)?.['devInRoot'];
  return typeof devInRoot === 'boolean' ? { kind: 'layout', devInRoot } : { kind: 'malformed' };
}

/** The record's own keys (none inherited: `__proto__` in the text is a plain key here, and ignored). */
function jsonObject(bytes: Uint8Array): Record<string, unknown> | undefined {
  if (bytes.length > MAX_BYTES) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  return Object.fromEntries(Object.entries(v));
}
