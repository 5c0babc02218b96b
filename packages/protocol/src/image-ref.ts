/**
 * An image a template is built from: a registry reference as Docker spells
 * them (`python:3.12-slim` is Docker Hub's `library/python`), or a local
 * image named with a skopeo transport prefix. Parsed strictly: the string
 * comes from tenants and ends up as an argument of skopeo on the host.
 */
export type ImageRef = RegistryImageRef | LocalImageRef;

export interface RegistryImageRef {
  kind: 'registry';
  /** Lowercase host, with `:port` when given (`docker.io` by default). */
  registry: string;
  /** `library/python`, `team/img`. */
  repository: string;
  tag?: string | undefined;
  /** `sha256:<64 hex>`; with a digest the tag is informative only (skopeo pulls by digest). */
  digest?: string | undefined;
}

export interface LocalImageRef {
  kind: 'oci-archive' | 'docker-archive' | 'oci';
  /** An absolute, normalized host path. */
  path: string;
  /** `oci:` only: the reference in the layout's index (`org.opencontainers.image.ref.name`). */
  tag?: string | undefined;
}

export type ParsedImageRef = { ok: true; ref: ImageRef } | { ok: false; error: string };

export const IMAGE_REF_MAX = 1024;
const DOCKER_HUB = 'docker.io';
const COMPONENT = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[a-f0-9]{64}$/;
const HOST_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const LOCAL_PREFIXES = ['oci-archive:', 'docker-archive:', 'oci:'] as const;
/** skopeo's other transports: refused by name, not read as a Docker Hub image and tag. */
const OTHER_TRANSPORTS = /^(containers-storage|docker-daemon|dir|ostree|sif|tarball):/;

/** Parses an image reference; never throws. */
export function parseImageRef(input: string): ParsedImageRef {
  if (typeof input !== 'string' || input.length === 0) return fail('an image reference is required');
  if (input.length > IMAGE_REF_MAX) return fail(`an image reference is at most ${IMAGE_REF_MAX} characters`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(input)) return fail('an image reference has no spaces or control characters');
  for (const p of LOCAL_PREFIXES) if (input.startsWith(p)) return parseLocal(p.slice(0, -1) as LocalImageRef['kind'], input.slice(p.length));
  if (OTHER_TRANSPORTS.test(input)) return fail(`transport ${input.split(':')[0]}: is not supported (for the Docker Hub image, write docker.io/library/${input})`);
  const rest = input.startsWith('docker://') ? input.slice('docker://'.length) : input;
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(rest) || /^[a-z-]+:\//.test(rest)) return fail('unknown transport (use a registry reference, oci-archive:PATH, docker-archive:PATH or oci:DIR[:TAG])');
  return parseRegistry(rest);
}

function fail(error: string): ParsedImageRef {
  return { ok: false, error };
}

function parseRegistry(s: string): ParsedImageRef {
  let name = s;
  let digest: string | undefined;
  const at = name.indexOf('@');
  if (at >= 0) {
    digest = name.slice(at + 1);
    name = name.slice(0, at);
    if (!DIGEST.test(digest)) return fail('a digest is sha256: and 64 lowercase hex digits');
  }
  let tag: string | undefined;
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon + 1);
    name = name.slice(0, colon);
    if (!TAG.test(tag)) return fail(`invalid tag: ${JSON.stringify(tag)}`);
  }
  const parts = name.split('/');
  let registry = DOCKER_HUB;
  const first = parts[0] ?? '';
  if (parts.length > 1 && (first.includes('.') || first.includes(':') || first === 'localhost')) {
    const host = parseHost(first);
    if (!host.ok) return host;
    registry = host.host;
    parts.shift();
  }
  if (parts.length === 0 || parts.some((p) => !COMPONENT.test(p))) return fail('a repository is lowercase letters, digits and . _ - separators, in /-separated parts');
  if (registry === DOCKER_HUB && parts.length === 1) parts.unshift('library');
  const repository = parts.join('/');
  if (repository.length > 255) return fail('a repository name is at most 255 characters');
  return { ok: true, ref: { kind: 'registry', registry, repository, ...(tag || !digest ? { tag: tag ?? 'latest' } : {}), ...(digest ? { digest } : {}) } };
}

function parseHost(s: string): { ok: true; host: string } | { ok: false; error: string } {
  const m = /^([^:]+)(?::(\d{1,5}))?$/.exec(s);
  const port = m?.[2] === undefined ? undefined : Number(m[2]);
  if (!m || (port !== undefined && (port < 1 || port > 65535 || m[2]!.startsWith('0')))) return { ok: false, error: `invalid registry host: ${JSON.stringify(s)}` };
  const host = m[1]!.toLowerCase();
  if (host.length > 253 || !host.split('.').every((l) => HOST_LABEL.test(l))) return { ok: false, error: `invalid registry host: ${JSON.stringify(s)}` };
  return { ok: true, host: port === undefined ? host : `${host}:${port}` };
}

function parseLocal(kind: LocalImageRef['kind'], s: string): ParsedImageRef {
  let path = s;
  let tag: string | undefined;
  if (kind === 'oci') {
    const colon = s.indexOf(':');
    if (colon >= 0) {
      tag = s.slice(colon + 1);
      path = s.slice(0, colon);
      if (!TAG.test(tag)) return fail(`invalid tag: ${JSON.stringify(tag)}`);
    }
  }
  if (!path.startsWith('/')) return fail(`${kind}: takes an absolute path`);
  if (path.includes(':')) return fail(`${kind}: a path with ':' is ambiguous; rename it`);
  if (path.length > 4096) return fail('a path is at most 4096 characters');
  const segs = path.split('/').slice(1);
  if (path !== '/' && segs.some((p, i) => p === '.' || p === '..' || (p === '' && i < segs.length - 1))) return fail(`${kind}: the path must be normalized (no ., .. or //)`);
  const clean = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
  return { ok: true, ref: { kind, path: clean, ...(tag ? { tag } : {}) } };
}

/** The reference as one canonical string (what templates record as their origin). */
export function formatImageRef(ref: ImageRef): string {
  if (ref.kind !== 'registry') return `${ref.kind}:${ref.path}${ref.tag ? `:${ref.tag}` : ''}`;
  return `${ref.registry}/${ref.repository}${ref.tag ? `:${ref.tag}` : ''}${ref.digest ? `@${ref.digest}` : ''}`;
}

/** The reference as skopeo's source argument. */
export function skopeoImageName(ref: ImageRef): string {
  return ref.kind === 'registry' ? `docker://${formatImageRef(ref)}` : formatImageRef(ref);
}

/** Whether it names a file on the host (admins and operators only). */
export function isLocalImageRef(ref: ImageRef): ref is LocalImageRef {
  return ref.kind !== 'registry';
}
