import { FILE_METADATA_LIMITS, ForkdError, fileMetadataProblem } from '@forkd/protocol';
import { K, type TlvInput } from './guest-frames.js';

/**
 * File metadata on the guest protocol (version 3): a file's `user.*`
 * extended attributes as repeated XATTR `name=value` strings, the name
 * without its `user.` prefix (docs/guest-protocol.md).
 */

/** The lowest protocol version whose agent stores and reports metadata. */
export const XATTR_PROTOCOL = 3;

/** WRITE_FILE fields: the pairs to set and, as XATTR_REPLACE, the scope whose other keys the agent removes. */
export function xattrFields(metadata: Record<string, string>, scope = ''): TlvInput {
  const problem = fileMetadataProblem(metadata);
  if (problem) throw new ForkdError('INVALID_ARGUMENT', problem);
  return [[K.XATTR_REPLACE, scope], ...Object.entries(metadata).map(([k, v]) => [K.XATTR, `${k}=${v}`] as const)];
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * An ENTRY's XATTR values as metadata, or undefined when it has none (an
 * agent older than version 3 sends none). The agent's word is untrusted:
 * anything malformed, not UTF-8 or past the limits (attributes set inside
 * the sandbox need not follow forkd's rules) is left out, not fatal.
 */
export function decodeXattrs(raw: readonly Buffer[]): Record<string, string> | undefined {
  let out: Record<string, string> | undefined;
  let n = 0;
  for (const b of raw) {
    if (n >= FILE_METADATA_LIMITS.maxKeys) break;
    const eq = b.indexOf(0x3d);
    if (eq < 1 || eq > FILE_METADATA_LIMITS.maxKeyBytes || b.length - eq - 1 > 4096 || b.includes(0)) continue;
    let key: string;
    let value: string;
    try {
      key = utf8.decode(b.subarray(0, eq));
      value = utf8.decode(b.subarray(eq + 1));
    } catch {
      continue;
    }
    // Own properties only: a key such as `__proto__` must not reach an object's prototype.
    out ??= Object.create(null) as Record<string, string>;
    if (Object.hasOwn(out, key)) continue;
    Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
    n++;
  }
  return out ? { ...out } : undefined;
}

/** ~Bytes of metadata in a JSON reply (it counts against a listing's cap). */
export function metadataBytes(m: Record<string, string> | undefined): number {
  let n = 0;
  for (const [k, v] of Object.entries(m ?? {})) n += k.length + v.length + 6;
  return n;
}
