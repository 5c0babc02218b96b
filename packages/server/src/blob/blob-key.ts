import { ForkdError } from '@forkd/protocol';

/** The longest key (and list prefix) any store accepts, in bytes (all ASCII). */
export const MAX_BLOB_KEY_LENGTH = 512;

const KEY_CHARS = /^[A-Za-z0-9._/-]*$/;

/**
 * Why `key` is not a blob key, or undefined when it is. Besides the character
 * set and length (see BlobStore), a key has no empty, `.` or `..` segment and
 * does not start or end with `/`: such keys would name the same file as
 * another key in the directory store, or a file outside it.
 */
export function blobKeyError(key: string): string | undefined {
  if (key.length === 0) return 'is empty';
  const bad = prefixError(key);
  if (bad) return bad;
  return segmentError(key.slice(key.lastIndexOf('/') + 1), key.includes('/'));
}

/**
 * Why `prefix` is not a list prefix. A prefix is the start of some valid key:
 * the same characters and complete segments valid; its last, partial
 * segment may be anything (`.` or `..` may still grow into `..x`).
 */
export function blobPrefixError(prefix: string): string | undefined {
  return prefixError(prefix);
}

function prefixError(s: string): string | undefined {
  if (typeof s !== 'string') return 'is not a string';
  if (s.length > MAX_BLOB_KEY_LENGTH) return `is longer than ${MAX_BLOB_KEY_LENGTH} bytes`;
  if (!KEY_CHARS.test(s)) return 'has a character outside [A-Za-z0-9._/-]';
  const complete = s.split('/').slice(0, -1);
  for (let i = 0; i < complete.length; i++) {
    const bad = segmentError(complete[i]!, i > 0);
    if (bad) return bad;
  }
  return undefined;
}

function segmentError(seg: string, afterSlash: boolean): string | undefined {
  if (seg === '') return afterSlash ? 'has an empty segment (// or a trailing /)' : 'starts with /';
  if (seg === '.' || seg === '..') return `has a ${seg} segment`;
  return undefined;
}

/** Throws INVALID_ARGUMENT unless `key` is a valid blob key. */
export function assertBlobKey(key: string): void {
  const bad = blobKeyError(key);
  if (bad) throw new ForkdError('INVALID_ARGUMENT', `blob key ${JSON.stringify(String(key).slice(0, 80))} ${bad}`);
}

/** Throws INVALID_ARGUMENT unless `prefix` is a valid list prefix ('' lists everything). */
export function assertBlobPrefix(prefix: string): void {
  const bad = blobPrefixError(prefix);
  if (bad) throw new ForkdError('INVALID_ARGUMENT', `blob prefix ${JSON.stringify(String(prefix).slice(0, 80))} ${bad}`);
}
