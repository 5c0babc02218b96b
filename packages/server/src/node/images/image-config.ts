import { createHash } from 'node:crypto';
import { z } from 'zod';
import { EnvMap } from '@forkd/protocol';

/**
 * An image's manifest and config as skopeo stored them: JSON from the image's
 * author, so parsed with schemas (unknown fields ignored, sizes bounded) into
 * typed results.
 */
const Digest = z.string().regex(/^sha256:[a-f0-9]{64}$/);
const Strings = z.array(z.string().max(65536)).max(4096);

const ImageConfigJson = z.object({
  architecture: z.string().max(64).optional(),
  os: z.string().max(64).optional(),
  config: z
    .object({
      Env: Strings.nullish(),
      Entrypoint: Strings.nullish(),
      Cmd: Strings.nullish(),
      WorkingDir: z.string().max(4096).nullish(),
      User: z.string().max(256).nullish(),
    })
    .nullish(),
  rootfs: z.object({ type: z.literal('layers'), diff_ids: z.array(Digest).max(256) }),
});

const ManifestJson = z.object({
  schemaVersion: z.literal(2),
  config: z.object({ digest: Digest }),
  layers: z.array(z.object({ digest: Digest, mediaType: z.string().max(256).optional() })).max(256),
});
export type ImageManifest = z.infer<typeof ManifestJson>;

// Sizes as a registry states them: only for a pull's progress, so bounded, never trusted further.
const Size = z.number().int().nonnegative().max(2 ** 44);
const SizedManifestJson = z.object({
  config: z.object({ size: Size }),
  layers: z.array(z.object({ size: Size })).max(256),
});
const IndexJson = z.object({
  manifests: z.array(z.object({ digest: Digest, platform: z.object({ os: z.string().max(64), architecture: z.string().max(64) }).optional() })).max(1024),
});

/** What a pull will copy: the bytes of an image manifest's blobs, or which manifest of an index is linux/amd64's. */
export type PullSize = { kind: 'bytes'; bytes: number } | { kind: 'index'; amd64: string | undefined };

/** What a template keeps of an image's config: its sandboxes' defaults and its start command. */
export interface ImageDefaults {
  env: Record<string, string>;
  cwd?: string | undefined;
  user?: string | undefined;
  /** Entrypoint then Cmd; absent when both are empty. */
  start?: string[] | undefined;
  /** Each on its own, for a Dockerfile FROM the image (its ENTRYPOINT drops the image's Cmd). */
  entrypoint?: string[] | undefined;
  cmd?: string[] | undefined;
}

export interface ImageConfig {
  diffIds: string[];
  defaults: ImageDefaults;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

function parseJson<T>(schema: z.ZodType<T>, text: string, what: string): Parsed<T> {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return { ok: false, error: `the image's ${what} is not JSON` };
  }
  const r = schema.safeParse(raw);
  return r.success ? { ok: true, value: r.data } : { ok: false, error: `the image's ${what} is invalid: ${r.error.issues[0]?.path.join('.') ?? ''} ${r.error.issues[0]?.message ?? ''}`.trim() };
}

export function parseManifest(text: string): Parsed<ImageManifest> {
  return parseJson(ManifestJson, text, 'manifest');
}

/** A manifest (`skopeo inspect --raw`) as the bytes its pull copies, or an index with its linux/amd64 entry. */
export function parsePullSize(text: string): Parsed<PullSize> {
  const m = parseJson(SizedManifestJson, text, 'manifest');
  if (m.ok) return { ok: true, value: { kind: 'bytes', bytes: m.value.layers.reduce((sum, l) => sum + l.size, m.value.config.size) } };
  const i = parseJson(IndexJson, text, 'index');
  if (!i.ok) return m;
  const amd64 = i.value.manifests.find((e) => e.platform?.os === 'linux' && e.platform.architecture === 'amd64');
  return { ok: true, value: { kind: 'index', amd64: amd64?.digest } };
}

/** An image config of linux/amd64 (what sandboxes run), its layers' diff ids and defaults. */
export function parseImageConfig(text: string): Parsed<ImageConfig> {
  const r = parseJson(ImageConfigJson, text, 'config');
  if (!r.ok) return r;
  const c = r.value;
  if ((c.os && c.os !== 'linux') || (c.architecture && c.architecture !== 'amd64')) return { ok: false, error: `the image is for ${c.os ?? '?'}/${c.architecture ?? '?'}; sandboxes run linux/amd64` };
  if (c.rootfs.diff_ids.length === 0) return { ok: false, error: 'the image has no layers' };
  const env: Record<string, string> = {};
  for (const kv of c.config?.Env ?? []) {
    const eq = kv.indexOf('=');
    if (eq > 0) env[kv.slice(0, eq)] = kv.slice(eq + 1);
  }
  const checked = EnvMap.safeParse(env);
  if (!checked.success) return { ok: false, error: `the image's Env is not usable: ${checked.error.issues[0]?.message ?? ''}` };
  const start = [...(c.config?.Entrypoint ?? []), ...(c.config?.Cmd ?? [])];
  if (start.some((a) => a.includes('\0'))) return { ok: false, error: "the image's Entrypoint or Cmd holds a NUL byte" };
  const cwd = c.config?.WorkingDir || undefined;
  if (cwd !== undefined && (!cwd.startsWith('/') || cwd.includes('\0'))) return { ok: false, error: `the image's WorkingDir is not an absolute path` };
  // `user:group`: the guest agent takes a user (name or uid) and that user's groups.
  const user = c.config?.User?.split(':')[0] || undefined;
  if (user !== undefined && !/^[A-Za-z0-9_.][A-Za-z0-9_.-]{0,63}$/.test(user)) return { ok: false, error: `the image's User is invalid` };
  return { ok: true, value: { diffIds: c.rootfs.diff_ids, defaults: { env, ...(cwd ? { cwd } : {}), ...(user ? { user } : {}), ...(start.length ? { start } : {}), ...(c.config?.Entrypoint?.length ? { entrypoint: c.config.Entrypoint } : {}), ...(c.config?.Cmd?.length ? { cmd: c.config.Cmd } : {}) } } };
}

/**
 * Chain ids of an image's layers (OCI image spec): the first is its diff
 * id, each next one the digest of `<previous chain id> <diff id>`. Equal
 * chain ids are equal trees, whichever image they came from: one volume each.
 */
export function chainIds(diffIds: readonly string[]): string[] {
  const out: string[] = [];
  for (const d of diffIds) {
    const prev = out.at(-1);
    out.push(prev === undefined ? d : `sha256:${createHash('sha256').update(`${prev} ${d}`).digest('hex')}`);
  }
  return out;
}
