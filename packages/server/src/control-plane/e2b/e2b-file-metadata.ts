import type { IncomingHttpHeaders } from 'node:http';
import { fileMetadataProblem } from '@forkd/protocol';

/**
 * E2B file metadata over forkd's. envd stores key `k` as the xattr
 * `user.e2b.k`; forkd's metadata key is the xattr name after `user.`, so an
 * E2B key is the forkd key `e2b.k`: a file written here reads the same in
 * a real envd and back, and forkd's own keys outside `e2b.` are neither
 * shown to nor cleared by E2B clients.
 */
export const E2B_METADATA_SCOPE = 'e2b.';

const HEADER = 'x-metadata-';

/**
 * An upload's `X-Metadata-<key>: <value>` headers as forkd metadata, as
 * envd reads them: keys lowercased (header names are case-insensitive), the
 * first value of a repeated header, an empty key ignored. Always an object:
 * envd replaces a file's metadata on every upload, none clears it. A string
 * is why the set is refused (envd's limits, counted as it counts them).
 */
export function uploadMetadata(headers: IncomingHttpHeaders, distinct: Record<string, string[] | undefined>): Record<string, string> | string {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) {
    if (!name.startsWith(HEADER) || name.length === HEADER.length) continue;
    const first = distinct[name]?.[0];
    if (first !== undefined) out[E2B_METADATA_SCOPE + name.slice(HEADER.length).toLowerCase()] = first;
  }
  return fileMetadataProblem(out) ?? out;
}

/** forkd metadata as E2B's: only the `e2b.` keys, the prefix stripped. */
export function e2bMetadata(m: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m ?? {})) if (k.startsWith(E2B_METADATA_SCOPE) && k.length > E2B_METADATA_SCOPE.length) out[k.slice(E2B_METADATA_SCOPE.length)] = v;
  return out;
}
