/**
 * A request target's path as the grant limits see it: percent-decoded, and
 * only when every upstream would read it the same way. A path that servers
 * resolve differently (dot segments, empty segments, `\`, `;` parameters,
 * an encoded `/`, `\`, `%` or NUL, control bytes, bad UTF-8, not origin-form)
 * has no normalized form: a grant limited to paths never applies to it, so
 * `/allowed/../private` or `/allowed/%2e%2e/private` never gets the secret.
 */
export interface NormalizedTarget {
  /** Decoded path, `/`-separated segments with no dot or empty one (but a trailing `/`). */
  path: string;
  /** The query, as sent, without the `?` (undefined: none). */
  query: string | undefined;
}

// Control bytes (C0, DEL) and the separators servers treat as path syntax besides `/`.
// eslint-disable-next-line no-control-regex
const AMBIGUOUS_RAW = /[\u0000-\u0020\u007f\\;#]/;
// After decoding: a separator, an escape to decode again, control bytes.
// eslint-disable-next-line no-control-regex
const AMBIGUOUS_DECODED = /[\u0000-\u001f\u007f/\\%;]/;

export function normalizeTarget(target: string): NormalizedTarget | undefined {
  if (!target.startsWith('/') || target.length > 8192) return undefined;
  const q = target.indexOf('?');
  const raw = q < 0 ? target : target.slice(0, q);
  if (AMBIGUOUS_RAW.test(raw)) return undefined;
  const segments = raw.slice(1).split('/');
  const out: string[] = [];
  for (let i = 0; i < segments.length; i++) {
    const seg = decode(segments[i] ?? '');
    if (seg === undefined || AMBIGUOUS_DECODED.test(seg)) return undefined;
    if (seg === '.' || seg === '..') return undefined;
    // Only the last segment may be empty (`/v1/`): `//` is collapsed by some servers, not by others.
    if (seg === '' && i < segments.length - 1) return undefined;
    out.push(seg);
  }
  return { path: '/' + out.join('/'), query: q < 0 ? undefined : target.slice(q + 1) };
}

function decode(seg: string): string | undefined {
  if (!seg.includes('%')) return seg;
  try {
    return decodeURIComponent(seg);
  } catch {
    return undefined;
  }
}
