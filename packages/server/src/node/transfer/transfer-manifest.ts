import { z } from 'zod';
import { EnvMap, ForkdError, Limits, MetadataMap, NetworkRules, SANDBOX_ID_PATTERN, SNAPSHOT_ID_PATTERN, TEMPLATE_NAME_PATTERN } from '@forkd/protocol';
import { ChunkedObjectSchema } from '../../blob/chunked.js';

/**
 * What an export leaves in a blob store beside its chunks: a manifest per
 * snapshot and per template (docs/ARCHITECTURE.md, Snapshot transfer). A
 * manifest is read back from a store another node (or anyone with write
 * access to the store) wrote: every field is checked here before a path,
 * a size or an id of it is used.
 */

/** Manifests are small (a chunk list per object); anything bigger is not one. */
export const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;
/** One object (a send stream, an images file) is at most 1 TiB (the chunk layer bounds each chunk). */
const MAX_OBJECT_BYTES = 2 ** 40;
/** CRIU writes a few dozen files per process tree; forkd's own beside them. */
const MAX_IMAGE_FILES = 4096;

/** A Btrfs UUID as `btrfs subvolume show` prints it. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const Uuid = z.string().regex(UUID_PATTERN, 'not a UUID');
const IsoTime = z.string().max(64);

const Chunked = ChunkedObjectSchema.refine((o) => o.size <= MAX_OBJECT_BYTES, `larger than ${MAX_OBJECT_BYTES} bytes`);

/** A file name CRIU or the runtime writes into an images directory: one plain path component. */
const ImageName = z.string().regex(/^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/, 'invalid image file name');

/** Which template a stream is incremental against: the identity `btrfs receive` looks its parent up by. */
export const TemplateRef = z.strictObject({
  name: z.string().regex(TEMPLATE_NAME_PATTERN),
  /** The template's id on the node it was exported from (TemplateRecord.id). */
  id: z.string().min(1).max(64),
  /** Its send identity: received UUID, else UUID (see subvolume-identity.ts). */
  uuid: Uuid,
  /** Blob key of its own manifest (a full send stream). */
  manifest: z.string().min(1).max(512),
});
export type TemplateRef = z.infer<typeof TemplateRef>;

export const TemplateManifest = z.strictObject({
  kind: z.literal('forkd-template'),
  version: z.literal(1),
  name: z.string().regex(TEMPLATE_NAME_PATTERN),
  uuid: Uuid,
  /** The template it was built from, when its stream is incremental against that one's volume (received first). */
  parent: TemplateRef.optional(),
  /** The send stream of the template's root volume: incremental against `parent`, else full. */
  rootfs: Chunked,
  exportedAt: IsoTime,
});
export type TemplateManifest = z.infer<typeof TemplateManifest>;

/** A process default as a spawn takes it (SpawnDefaults), bounded. */
const Defaults = {
  cwd: z.string().min(1).max(4096).optional(),
  user: z.string().min(1).max(64).optional(),
  shell: z.array(z.string().min(1).max(256)).min(1).max(4).optional(),
};

/** The memory images of a checkpoint, one object per file, by name. */
const Images = z
  .array(z.strictObject({ name: ImageName, object: Chunked }))
  .max(MAX_IMAGE_FILES)
  .refine((a) => new Set(a.map((f) => f.name)).size === a.length, 'image file names repeat');

/**
 * A whole template (NodeService.exportTemplate): its root volume by
 * reference (the volume's own manifest, shared with the snapshots that
 * descend from it), its record, and for a warm template the memory images
 * its sandboxes start from.
 */
export const TemplateExportManifest = z.strictObject({
  kind: z.literal('forkd-template-export'),
  version: z.literal(1),
  template: TemplateRef,
  createdAt: IsoTime,
  /** What it was built from: a template's name or an image reference. */
  from: z.string().min(1).max(1024).optional(),
  /** An image template's process defaults (TemplateImage). */
  image: z.strictObject({ ref: z.string().min(1).max(1024), env: EnvMap, ...Defaults }).optional(),
  /** Empty: a cold template. */
  images: Images,
  exportedAt: IsoTime,
});
export type TemplateExportManifest = z.infer<typeof TemplateExportManifest>;

/** The sandbox a snapshot belongs to, as much of its record as travels (not its state, instance or node-local history). */
const SandboxPart = z.strictObject({
  id: z.string().regex(SANDBOX_ID_PATTERN),
  template: z.string().regex(TEMPLATE_NAME_PATTERN),
  templateId: z.string().min(1).max(64),
  limits: Limits,
  env: EnvMap,
  metadata: MetadataMap,
  createdAt: IsoTime,
  forkedFrom: z.string().regex(SNAPSHOT_ID_PATTERN).optional(),
  policy: z
    .strictObject({
      snapshotIntervalSeconds: z.number().int().min(0).max(7 * 86400).optional(),
      idleTimeoutSeconds: z.number().int().min(0).max(30 * 86400).optional(),
      timeoutSeconds: z.number().int().min(0).max(30 * 86400).optional(),
      onTimeout: z.enum(['pause', 'kill']).optional(),
      timeoutPauseMemory: z.literal(false).optional(),
      expiresAt: IsoTime.optional(),
    })
    .optional(),
  idmap: z.number().int().min(0).max(2 ** 32 - 1).optional(),
  network: NetworkRules.optional(),
  /** An image template's process defaults (SpawnDefaults). */
  defaults: z.strictObject(Defaults).optional(),
});

export const SnapshotManifest = z.strictObject({
  kind: z.literal('forkd-snapshot'),
  version: z.literal(1),
  snapshot: z.strictObject({
    id: z.string().regex(SNAPSHOT_ID_PATTERN),
    name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/).optional(),
    createdAt: IsoTime,
    frozenMs: z.number().min(0).max(1e9),
    sizeBytes: z.number().int().min(0).max(MAX_OBJECT_BYTES),
    pinned: z.boolean(),
    reason: z.enum(['manual', 'pause', 'rewind', 'fork', 'policy']),
  }),
  sandbox: SandboxPart,
  /** Null: the stream is a full one (the template it came from was gone on the exporting node). */
  template: TemplateRef.nullable(),
  /** The send stream of the snapshot's root volume (subvolume `rootfs`), incremental against `template`. */
  rootfs: Chunked,
  images: Images,
  exportedAt: IsoTime,
});
export type SnapshotManifest = z.infer<typeof SnapshotManifest>;

/** Bytes an import of it writes into the pool at most (its stream and its images). */
export function manifestBytes(m: SnapshotManifest): number {
  return m.rootfs.size + m.images.reduce((n, f) => n + f.object.size, 0);
}

export type ManifestResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** Parses manifest bytes (untrusted: from a blob store) without throwing. */
export function parseManifest<S extends z.ZodType>(schema: S, bytes: Uint8Array): ManifestResult<z.infer<S>> {
  if (bytes.length > MAX_MANIFEST_BYTES) return { ok: false, error: `larger than ${MAX_MANIFEST_BYTES} bytes` };
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch {
    return { ok: false, error: 'not JSON' };
  }
  const r = schema.safeParse(json);
  if (r.success) return { ok: true, value: r.data as z.infer<S> };
  return { ok: false, error: r.error.issues.slice(0, 5).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ') };
}

/** The manifest under `key`, or INVALID_ARGUMENT / NOT_FOUND naming what is wrong with it. */
export function manifestOrThrow<S extends z.ZodType>(schema: S, key: string, bytes: Uint8Array | undefined): z.infer<S> {
  if (!bytes) throw new ForkdError('NOT_FOUND', `no manifest at ${key} in the blob store`);
  const r = parseManifest(schema, bytes);
  if (!r.ok) throw new ForkdError('INVALID_ARGUMENT', `${key} is not a valid forkd manifest: ${r.error}`);
  return r.value;
}

export function encodeManifest(m: SnapshotManifest | TemplateManifest | TemplateExportManifest): Uint8Array {
  return new TextEncoder().encode(`${JSON.stringify(m)}\n`);
}

/** Where an export keeps its manifests (stable keys: a retry finds what an earlier try wrote). */
export const transferKeys = {
  snapshot: (snapId: string): string => `snapshots/${snapId}/manifest.json`,
  template: (name: string, uuid: string): string => `templates/${name}/${uuid}/manifest.json`,
  /** A whole template (TemplateExportManifest) beside its volume's manifest: one per published version (its root's send identity). */
  templateExport: (name: string, uuid: string): string => `templates/${name}/${uuid}/template.json`,
} as const;
