/** Sandbox ids are short, URL- and hostname-safe, and self-describing in logs. */
export const SANDBOX_ID_PATTERN = /^sbx-[a-z0-9]{12}$/;
export const SNAPSHOT_ID_PATTERN = /^snap-[a-z0-9]{12}$/;
export const TEMPLATE_NAME_PATTERN = /^[a-z][a-z0-9-]{0,62}$/;
/** A snapshot's optional name. */
export const SNAPSHOT_NAME_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
export const TAG_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
/** The id patterns without anchors, for routes and host names that embed an id. */
export const SANDBOX_ID_SOURCE = SANDBOX_ID_PATTERN.source.slice(1, -1);
export const SNAPSHOT_ID_SOURCE = SNAPSHOT_ID_PATTERN.source.slice(1, -1);
/** Forks one call may make (API, SDK and CLI all refuse more). */
export const MAX_FORK_COUNT = 64;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

function newId(prefix: string): string {
  // Web Crypto, so the protocol package also runs in browsers (SDK).
  const bytes = globalThis.crypto.getRandomValues(new Uint8Array(12));
  let out = prefix;
  for (const b of bytes) out += ALPHABET[b % ALPHABET.length];
  return out;
}

export function newSandboxId(): string {
  return newId('sbx-');
}

export function newSnapshotId(): string {
  return newId('snap-');
}

/**
 * A template's identity, made once per template and never reused: a build
 * under a name that was deleted gets a new one, so nothing keyed by it (its
 * policy, default network, the sandboxes made from it) passes to the new
 * template. `_` is not allowed in names: no id made here equals a name, which
 * older databases use as their templates' ids.
 */
export function newTemplateId(): string {
  return newId('tpl_');
}
