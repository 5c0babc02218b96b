import { z } from 'zod';
import { SANDBOX_STATES } from './sandbox-state.js';
import { SANDBOX_ID_PATTERN, TEMPLATE_NAME_PATTERN } from './ids.js';
import { NetworkRules } from './network.js';
import { IMAGE_REF_MAX, parseImageRef } from './image-ref.js';
import { BuildContext } from './build-context.js';

/** A sandbox's id where it is an argument rather than a path segment (e.g. MCP tools). */
export const SandboxId = z.string().regex(SANDBOX_ID_PATTERN, 'invalid sandbox id');

const MemoryMb = z.number().int().min(32).max(262144);
const Cpus = z.number().min(0.05).max(256);
const Pids = z.number().int().min(16).max(65536);
/** Disk quota in MiB: what the sandbox's files may hold beyond its template's (1 MiB to 16 TiB). */
export const DiskMb = z.number().int().min(1).max(16 * 1024 * 1024);

export const Limits = z.object({
  memoryMb: MemoryMb.default(512),
  cpus: Cpus.default(1),
  pids: Pids.default(1024),
  /** Absent only in records of older versions; the node fills in its default (FORKD_DEFAULT_DISK_MB). */
  diskMb: DiskMb.optional(),
});
export type Limits = z.infer<typeof Limits>;

export const EnvMap = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'invalid env var name').max(256), z.string().max(65536));

export const MetadataMap = z.record(z.string().max(128), z.string().max(1024));

const LifetimeSeconds = z.number().int().min(0).max(30 * 86400);
const OnTimeout = z.enum(['pause', 'kill']);

/** Extends (or shortens) a sandbox's lifetime: it times out this long from now (0 = never). */
export const SetTimeoutRequest = z.strictObject({ timeoutSeconds: LifetimeSeconds });

export const CreateSandboxRequest = z.strictObject({
  template: z.string().regex(TEMPLATE_NAME_PATTERN, 'invalid template name').default('base'),
  memoryMb: MemoryMb.optional(),
  cpus: Cpus.optional(),
  pids: Pids.optional(),
  /** Disk quota (MiB) over the template; default: the server's (FORKD_DEFAULT_DISK_MB, 10240). */
  diskMb: DiskMb.optional(),
  env: EnvMap.optional(),
  metadata: MetadataMap.optional(),
  /** Rolling timeline: a snapshot this often while active (0 = none). Default: the server's (300). */
  snapshotIntervalSeconds: z.number().int().min(0).max(7 * 86400).optional(),
  /** Hibernate (pause to disk) after this long without activity (0 = never). Default: the server's (600). */
  idleTimeoutSeconds: z.number().int().min(0).max(30 * 86400).optional(),
  /** Lifetime: this long after creation (and after each resume from a timeout) the sandbox times out. Default: none. */
  timeoutSeconds: LifetimeSeconds.optional(),
  /** What a timeout does: pause (keeps everything, default) or kill (deletes the sandbox). */
  onTimeout: OnTimeout.optional(),
  /** false: the pause at a timeout keeps only the files (a filesystem-only pause; the resume starts it cold). Default true. */
  timeoutPauseMemory: z.boolean().optional(),
  /** Its network (see NetworkRules). Absent: its template's default network, else its tenant's, else `none` (loopback only); the tenant's network policy caps it. */
  network: NetworkRules.optional(),
});
export type CreateSandboxRequest = z.input<typeof CreateSandboxRequest>;

/**
 * Pause. `memory: false` keeps only the files: the processes are stopped
 * without a memory image, and the resume starts the sandbox cold (a fresh
 * init and agent on the same files, same id, limits and env).
 */
export const PauseRequest = z.strictObject({ memory: z.boolean().default(true) });
export type PauseRequest = z.input<typeof PauseRequest>;

/**
 * Resume. `memory: false` starts the sandbox cold from its files even when
 * its pause kept memory (a restart); a filesystem-only pause always does.
 */
export const ResumeRequest = z.strictObject({ memory: z.boolean().default(true) });
export type ResumeRequest = z.input<typeof ResumeRequest>;

/**
 * The last time a sandbox's processes were lost (host reboot or crash, its
 * init killed) and it was brought back under its own id.
 */
export const SandboxRecovery = z.object({
  /** When it came back. */
  at: z.string(),
  /** What happened to its processes. */
  reason: z.string(),
  /** Restored from this snapshot (memory and files); absent: started cold from its files (its processes' memory is gone). */
  fromSnapshot: z.string().optional(),
  /** Work lost: seconds from that snapshot to the recovery. */
  lostSeconds: z.number().optional(),
});
export type SandboxRecovery = z.infer<typeof SandboxRecovery>;

export const SandboxInfo = z.object({
  id: z.string(),
  /** Its tenant: in an admin's list of every tenant's sandboxes (`allTenants`) only. */
  tenant: z.string().optional(),
  template: z.string(),
  /** The template's id (TemplateInfo.id): read-only, tells a deleted template from a later one of the same name. */
  templateId: z.string().optional(),
  state: z.enum(SANDBOX_STATES),
  limits: Limits,
  env: z.record(z.string(), z.string()),
  metadata: z.record(z.string(), z.string()),
  createdAt: z.string(),
  hostname: z.string(),
  error: z.string().optional(),
  /** The snapshot this sandbox was forked from. */
  forkedFrom: z.string().optional(),
  /**
   * Opens the port proxy to this sandbox (header X-Forkd-Token or ?forkd_token=).
   * Minted per sandbox, forks included; in the create or fork answer only
   * (forkd keeps its SHA-256), so only the caller that made the sandbox has it.
   */
  proxyToken: z.string().optional(),
  /** When it times out (see onTimeout); absent: no lifetime. */
  expiresAt: z.string().optional(),
  onTimeout: OnTimeout.optional(),
  /** false: its timeout's pause keeps only the files (see CreateSandboxRequest). */
  timeoutPauseMemory: z.literal(false).optional(),
  /** Set once its processes were lost and it came back (see SandboxRecovery). */
  recovered: SandboxRecovery.optional(),
  /** While paused: whether its memory was kept (false: a filesystem-only pause; the resume starts it cold). */
  pausedMemory: z.boolean().optional(),
  /** Its network mode and rules (absent: `none`). */
  network: NetworkRules.optional(),
});
export type SandboxInfo = z.infer<typeof SandboxInfo>;

/**
 * Listing filters and paging. `metadata` is URL-encoded `k=v&k2=v2` (every
 * pair must match, as in e2b); `state` a comma-separated list; `cursor` the
 * `nextCursor` of the previous page (sandboxes come oldest first).
 */
export const ListSandboxesQuery = z.strictObject({
  state: z
    .string()
    .max(200)
    .refine((v) => v.split(',').every((s) => (SANDBOX_STATES as readonly string[]).includes(s)), `state: a comma-separated list of ${SANDBOX_STATES.join(', ')}`)
    .optional(),
  metadata: z.string().max(4096).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(1000),
  cursor: z.string().regex(/^[A-Za-z0-9_-]{1,200}$/, 'cursor: the nextCursor of the previous page').optional(),
  /** Admin keys: every tenant's sandboxes, each with its `tenant`. */
  allTenants: z.enum(['true', 'false']).optional(),
});
export type ListSandboxesQuery = z.infer<typeof ListSandboxesQuery>;

export const TemplateInfo = z.object({
  name: z.string(),
  /** Made at its first build, kept by rebuilds, never reused after a delete (read-only; the API takes names). */
  id: z.string().optional(),
  createdAt: z.string(),
  sizeBytes: z.number().optional(),
  /** Sandboxes start by restoring the processes running at build time. */
  warm: z.boolean().optional(),
  from: z.string().optional(),
});

/** A registry's user name and password (or token) for one pull: used for that pull only, never logged or stored. */
export const RegistryAuth = z.strictObject({
  username: z.string().min(1).max(256),
  password: z.string().min(1).max(16384),
});
export type RegistryAuth = z.infer<typeof RegistryAuth>;

/** An image reference (see image-ref.ts): a registry's, or a local one with a transport prefix. */
export const ImageRefString = z
  .string()
  .max(IMAGE_REF_MAX)
  .superRefine((v, ctx) => {
    const r = parseImageRef(v);
    if (!r.ok) ctx.addIssue({ code: 'custom', message: r.error });
  });

/** A Debian package name (Debian policy 5.6.1): no leading dash, so never an option of apt's. */
export const DebianPackageName = z.string().regex(/^[a-z0-9][a-z0-9+.-]{1,99}$/, 'invalid Debian package name');

export const BuildTemplateRequest = z
  .strictObject({
    name: z.string().regex(TEMPLATE_NAME_PATTERN, 'invalid template name'),
    /** The template it starts from (default `base`); not with fromImage. */
    from: z.string().regex(TEMPLATE_NAME_PATTERN, 'invalid template name').optional(),
    /**
     * Or an OCI image: its layers become the root filesystem, its Env, WorkingDir
     * and User the sandboxes' defaults, its Entrypoint and Cmd the start command
     * (unless `start` is given). Local transports (oci-archive:, docker-archive:, oci:) are for admin keys only.
     */
    fromImage: ImageRefString.optional(),
    /** Credentials for fromImage's registry, for this pull only (else the operator's FORKD_REGISTRY_AUTH_FILE). */
    registryAuth: RegistryAuth.optional(),
    /**
     * Debian packages installed before the setup commands (admin keys only): the node's apt fetches them and what
     * they need from its own sources (builds run offline), apt in the build sandbox installs them. For templates of
     * the host's Debian release (base and those built from it), not images.
     */
    aptPackages: z.array(DebianPackageName).max(200).optional(),
    /** Every tenant's (admin keys only): built with no owner, as `base` is; else the building tenant's own. */
    shared: z.boolean().optional(),
    /** Commands run (by `bash -lc`, as root; `sh -c` in an image without bash) in order; any failure fails the build. */
    setup: z.array(z.string().min(1).max(65536)).max(100).default([]),
    /** A long-running command left running: sandboxes from the template start with it already running. */
    start: z.string().min(1).max(65536).optional(),
    /** With start: a command run (as setup commands are) until it exits 0, at most 120 s, before the template is taken (as E2B's ready command); e.g. a health check of the start command's server. */
    ready: z.string().min(1).max(65536).optional(),
    /** The template's default network (see PUT /v1/templates/{name}/network), set when the build is done (absent: none; a rebuild replaces it). The build itself runs offline. */
    network: NetworkRules.optional(),
    /**
     * Or a Dockerfile's text: its FROM (an image reference, or `template:NAME`)
     * is where the build starts; not with from, fromImage, setup or start.
     */
    dockerfile: z.string().min(1).max(1024 * 1024).optional(),
    /** Values for the Dockerfile's ARGs (`--build-arg NAME=VALUE`). */
    buildArgs: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'invalid build arg name').max(256), z.string().max(65536)).optional(),
    /** The files COPY and ADD take from (see BuildContext). */
    context: BuildContext.optional(),
    /** With from: that template as it is (files, warm processes, defaults) under this name, with nothing run (as `docker tag`). */
    copy: z.boolean().optional(),
  })
  .superRefine((r, ctx) => {
    // The node's own staged templates (template-registry.ts) are named so.
    if (r.name.startsWith('forkd-stage-')) ctx.addIssue({ code: 'custom', path: ['name'], message: 'template names starting with forkd-stage- are reserved' });
    if (r.from !== undefined && r.fromImage !== undefined) ctx.addIssue({ code: 'custom', path: ['fromImage'], message: 'from and fromImage exclude each other' });
    const image = r.fromImage === undefined ? undefined : parseImageRef(r.fromImage);
    if (r.ready !== undefined && r.start === undefined && r.fromImage === undefined && r.dockerfile === undefined) ctx.addIssue({ code: 'custom', path: ['ready'], message: 'ready goes with start' });
    if (r.aptPackages?.length && (r.fromImage !== undefined || r.dockerfile !== undefined)) ctx.addIssue({ code: 'custom', path: ['aptPackages'], message: "aptPackages installs the host's Debian release: not for image or Dockerfile templates" });
    if (r.dockerfile !== undefined) {
      for (const k of ['from', 'fromImage', 'start'] as const) if (r[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `${k} and dockerfile exclude each other` });
      if (r.setup?.length) ctx.addIssue({ code: 'custom', path: ['setup'], message: 'setup and dockerfile exclude each other (use RUN)' });
    } else if (r.context !== undefined || r.buildArgs !== undefined) ctx.addIssue({ code: 'custom', path: [r.context ? 'context' : 'buildArgs'], message: 'context and buildArgs go with dockerfile' });
    if (r.copy) {
      if (r.from === undefined) ctx.addIssue({ code: 'custom', path: ['copy'], message: 'copy goes with from' });
      for (const k of ['fromImage', 'dockerfile', 'start', 'ready', 'aptPackages'] as const) if (r[k] !== undefined) ctx.addIssue({ code: 'custom', path: [k], message: `${k} and copy exclude each other` });
      if (r.setup?.length) ctx.addIssue({ code: 'custom', path: ['setup'], message: 'setup and copy exclude each other' });
    }
    if (r.registryAuth && r.dockerfile === undefined && !(image?.ok && image.ref.kind === 'registry')) ctx.addIssue({ code: 'custom', path: ['registryAuth'], message: 'registryAuth goes with a registry fromImage' });
  });
export type BuildTemplateRequest = z.input<typeof BuildTemplateRequest>;
export type TemplateInfo = z.infer<typeof TemplateInfo>;

export const SandboxMetrics = z.object({
  memoryBytes: z.number(),
  memoryLimitBytes: z.number(),
  cpuNanos: z.number(),
  pids: z.number(),
  oomKills: z.number(),
  /** Forks refused by the pids limit. */
  pidsLimitHits: z.number(),
  /** Bytes in the sandbox's root filesystem. */
  diskBytes: z.number(),
  /** Of those, bytes no other volume shares (template, snapshots): roughly what it wrote since its latest snapshot. */
  diskWrittenBytes: z.number(),
  /** What counts against the disk quota: bytes its files hold beyond its template's (Btrfs qgroup; absent when quotas are off). */
  diskQuotaUsedBytes: z.number().optional(),
  /** The disk quota (limits.diskMb) in bytes. */
  diskQuotaBytes: z.number().optional(),
});
export type SandboxMetrics = z.infer<typeof SandboxMetrics>;
