import { join, resolve } from 'node:path';
import type { EffectiveTenantLimits } from '@forkd/protocol';
import { fileURLToPath } from 'node:url';
import { cidrListError } from './cidr.js';
import { tracesUrl } from './otlp-exporter.js';
import { fleetConfig, type FleetConfig } from './fleet-config.js';
import { proxyConfig, type ProxyTlsConfig } from './proxy-config.js';
import { parseBlobStoreConfig, type BlobStoreConfig } from '../blob/blob-store-config.js';
import { registryAccessFromEnv, type RegistryAccess } from './registry-config.js';

/**
 * What `forkd serve` runs: `all`, the control plane and the node in one
 * process (the default); `node`, only the node, its contract served over
 * HTTP; `control-plane`, only the API, over a node at FORKD_NODE_URL.
 */
export type ServeRole = 'all' | 'node' | 'control-plane';
export const SERVE_ROLES: readonly ServeRole[] = ['all', 'node', 'control-plane'];

export interface ForkdConfig {
  /** FORKD_ROLE or `forkd serve --role`. */
  role: ServeRole;
  /** Role `control-plane`: the node's URL (FORKD_NODE_URL, `--node`). */
  nodeUrl?: string | undefined;
  /** The file holding the node's token (FORKD_NODE_TOKEN_FILE, default <state dir>/node.token): role `node` answers it (made there when missing), role `control-plane` presents it. */
  nodeTokenFile: string;
  /** Fleet membership and node deadlines (shared/fleet-config.ts). */
  fleet: FleetConfig;
  /** Durable state: database, bundles, pool image, admin key. */
  stateDir: string;
  /**
   * The control plane's store: PostgreSQL at this URL (FORKD_DATABASE_URL,
   * postgres://user:password@host:port/db), shared by every control-plane
   * replica; unset: SQLite in the state directory. A credential: never logged.
   */
  databaseUrl?: string | undefined;
  /** Toolchain (private CRIU root) and root-filesystem cache shared by every pool on this host. */
  cacheDir: string;
  pool: { mountPoint: string; image?: string | undefined; sizeBytes: number };
  /** Which Runtime runs sandboxes (FORKD_RUNTIME, default `runc`; the choices are in node/drivers.ts). */
  runtime: string;
  /** Which Storage holds volumes (FORKD_STORAGE, default `btrfs`; see node/drivers.ts). */
  storage: string;
  /** Volatile runtime state (runc state); lost on reboot like the processes it describes. */
  runDir: string;
  /**
   * Egress networking's host side: forkd's nftables table (`inet <table>`),
   * the host-side veth names (`<ifPrefix><n>`) and the /16 of the sandboxes'
   * unique host-side addresses (first two octets). One node's own: two nodes
   * on a host need different ones (FORKD_NET_TABLE, FORKD_NET_IF_PREFIX,
   * FORKD_NET_HOST_NET; defaults forkd, fkv, 10.254). Its DNS resolver and
   * HTTP/TLS proxy listen on per-node ports (FORKD_NET_DNS_PORT,
   * FORKD_NET_HTTP_PORT, FORKD_NET_TLS_PORT; default 0: any free one) and
   * forward DNS to FORKD_DNS_UPSTREAM (`ip[:port]`; default the host's
   * /etc/resolv.conf nameserver). FORKD_EGRESS_EXTRA_CA: a PEM file of CAs
   * trusted besides the system's when the proxy terminates TLS (tests).
   * FORKD_EGRESS_OPERATOR_ALLOW: comma-separated CIDRs sandboxes may reach
   * although the host protection refuses them (loopback, link-local, the
   * host's own addresses; see node/network/destination-guard.ts). The
   * operator's alone: no tenant or sandbox rule lifts that protection.
   */
  net: {
    table: string;
    ifPrefix: string;
    hostNet: string;
    ports: { dns: number; http: number; tls: number };
    upstream?: { host: string; port: number } | undefined;
    extraCaFile?: string | undefined;
    operatorAllow?: string[] | undefined;
    /** `enable` (default): IPv4 forwarding turned on for the uplink when off, as Docker does; `leave`: the host's setting kept (FORKD_HOST_FORWARDING). */
    hostForwarding: 'enable' | 'leave';
  };
  /** Memory-backed directory where CRIU dumps before images move to the pool (short freezes). */
  stagingDir: string;
  cgroupParent: string;
  guestBinary: string;
  host: string;
  port: number;
  /** Sandboxes of the base template kept started ahead of demand. */
  warmPool: number;
  /** Templates besides base kept with one warm member: the most recently built or created from. */
  warmPoolTemplates: number;
  /** Default rolling-snapshot interval while active (0 = off). */
  snapshotIntervalS: number;
  /** Default idle time before hibernation (0 = never). */
  idleTimeoutS: number;
  /** How long a paused sandbox's frozen processes are kept, so a resume within it is a thaw (FORKD_HOT_PAUSE_S, default 60; 0: off). */
  hotPauseS: number;
  /** The host's conntrack hash is shrunk to this many buckets at start (FORKD_CONNTRACK_BUCKETS, default 16384; 0: left alone; see conntrack-dump.ts). */
  conntrackBuckets: number;
  /** `enable` (default): the host's cgroup2 hierarchy is remounted with favordynmods at start when the kernel has it; `leave`: the host's setting kept (FORKD_CGROUP_FAVORDYNMODS; see cgroups/favor-dynmods.ts). */
  cgroupFavorDynmods: 'enable' | 'leave';
  /** `enable` (default): the tmpfs of the CRIU staging directory is remounted with huge=within_size at start when it has no huge pages; `leave`: kept as it is (FORKD_STAGING_HUGE_PAGES; see storage/staging-huge.ts). */
  stagingHugePages: 'enable' | 'leave';
  /** A resume keeps the root volume its pause froze when nothing changed it (FORKD_KEEP_PAUSED_ROOT, default on; 0: always a fresh copy of the pause snapshot's root; see SandboxInstances.frozenAt). */
  keepPausedRoot: boolean;
  /** Restore memory lazily (userfaultfd) for faster resume and fork. */
  lazyRestore: boolean;
  /** Images with fewer pages than this restore eagerly even with lazyRestore (FORKD_LAZY_RESTORE_MIN_MB, default 64): the lazy daemon costs more than copying them. */
  lazyRestoreMinMb: number;
  /** A lazy restore's runc starts beside its pages daemon, CRIU's connect waiting for it (FORKD_LAZY_CONNECT_WAIT, default on; 0: runc after the daemon listens; see libforkd-uffd). */
  lazyConnectWait: boolean;
  /** A dump's steps are done by the criu wrapper's relay at CRIU's RPC notifications, not by an action script CRIU runs at each (FORKD_CRIU_RELAY, default on; 0: the script; see host-tools/src/criu-version/relay.c). */
  criuRelay: boolean;
  /** With the relay, a running sandbox's next dumps send the request runc built for its first to CRIU without runc (FORKD_CRIU_DIRECT, default on; 0: runc at every dump; see node/runtime/runc-direct-dump.ts). */
  criuDirect: boolean;
  /** CRIU's log level for the dumps the relay carries (FORKD_CRIU_DUMP_LOG_LEVEL, 0-4, default 2: errors and warnings; runc asks 4, debug, whose ~1,700 lines a dump are written mostly inside the freeze). */
  criuDumpLogLevel: number;
  /** Tools are started by a resident forkd-spawn, not by forks of the daemon (FORKD_RESIDENT_SPAWN, default on; 0: off). */
  residentSpawn: boolean;
  /** On a cgroup v1 host, /sys/fs/cgroup is read-only binds, not runc's tmpfs that CRIU archives (FORKD_CGROUP_V1_BINDS, default on; 0: off; see oci-spec.ts). */
  cgroupV1Binds: boolean;
  /** /dev is a directory of the sandbox's root, not a tmpfs CRIU archives (FORKD_DEV_IN_ROOT, default on; 0: a tmpfs; see oci-spec.ts). */
  devInRoot: boolean;
  /** At start, bring back sandboxes whose processes were lost (host reboot or crash) from their latest snapshot. */
  recoverOnStart: boolean;
  /** New sandboxes get a user namespace of their own (root inside is an unprivileged range outside); FORKD_USERNS=0 turns it off. */
  userns: boolean;
  /** Deadline of every guest-agent operation, in seconds (FORKD_GUEST_DEADLINE_S, default 30; see GUEST_DEADLINE_MS). */
  guestDeadlineS: number;
  /** Host-based port proxy: `{port}-{id}.{proxyDomain}` (wildcard DNS pointing here; FORKD_PROXY_DOMAIN). */
  proxyDomain?: string | undefined;
  /** Those names over HTTPS with the operator's wildcard certificate (see shared/proxy-config.ts); absent: not served. */
  proxyTls?: ProxyTlsConfig | undefined;
  /** Audit records older than this many days are deleted (0: kept for ever). */
  auditRetentionDays: number;
  /** POSTed a JSON note whenever a call starts waiting for approval (FORKD_APPROVAL_WEBHOOK; see docs/SECURITY.md). */
  approvalWebhook?: string | undefined;
  /** OTLP/HTTP JSON traces of lifecycle operations go to this collector's `/v1/traces` (FORKD_OTLP_ENDPOINT); unset: no tracing. */
  otlpTracesUrl?: string | undefined;
  /** Every tenant's limits unless an admin key set its own (FORKD_TENANT_MAX_*; unset: none). */
  tenantLimits: EffectiveTenantLimits;
  /** The largest memory, CPUs and pids one sandbox may ask for (FORKD_MAX_*; unset: from the host, see sandbox-maxima.ts). */
  maxMemoryMb?: number | undefined;
  maxCpus?: number | undefined;
  maxPids?: number | undefined;
  /** Memory limits of running sandboxes may add up to this many times the host's memory (FORKD_MEMORY_OVERCOMMIT, default 4). */
  memoryOvercommit: number;
  /** CPUs of running sandboxes may add up to this many times the host's (FORKD_CPU_OVERCOMMIT; 0, the default: not checked). */
  cpuOvercommit: number;
  /** Disk quota of a sandbox that asks for none (FORKD_DEFAULT_DISK_MB, default 10240). */
  defaultDiskMb: number;
  /** Creates, forks and snapshots are refused while the pool has less free than this (FORKD_POOL_MIN_FREE_MB, default 2048)… */
  poolMinFreeMb: number;
  /** …or than this share of its size (FORKD_POOL_MIN_FREE_PCT, default 5; 0: only the MB floor). */
  poolMinFreePct: number;
  /** Disk quotas of all sandboxes may add up to this many times the pool's size (FORKD_DISK_OVERCOMMIT, default 8; 0: not checked). */
  diskOvercommit: number;
  /** Btrfs quota mode (FORKD_QUOTA_MODE): `auto` (default) simple quotas where the kernel has them (≥ 6.7), else full qgroups; `full`: full qgroups. */
  quotaMode: 'auto' | 'full';
  /**
   * Where snapshots go when they leave the node (FORKD_BLOB_STORE, default
   * `dir:<state dir>/blobs`; see blob/blob-store-config.ts). S3 credentials
   * are not here: they are read from the environment when the store opens.
   */
  blobStore: BlobStoreConfig;
  /** How template builds reach image registries (FORKD_REGISTRY_AUTH_FILE, FORKD_INSECURE_REGISTRIES; see registry-config.ts). */
  registries: RegistryAccess;
  /** What one image may unpack to, in MiB (FORKD_IMAGE_MAX_MB, default 16384). */
  imageMaxMb: number;
  /** Days a Dockerfile step or image layer is kept unused before it is pruned (FORKD_BUILD_CACHE_DAYS, default 7; 0 keeps them). */
  buildCacheDays: number;
  /** The E2B-compatible control-plane API's port (FORKD_E2B_API_PORT, default 3000; 0 or `off`: not served). */
  e2bApiPort: number | null;
  /** The E2B-compatible envd gateway's port (FORKD_E2B_ENVD_PORT, default 49983; 0 or `off`: not served). */
  e2bEnvdPort: number | null;
}

/** The repository root (packages/server/dist/shared → ../../../..). */
export const REPO_ROOT = resolve(fileURLToPath(new URL('../../../../', import.meta.url)));

function int(v: string | undefined, def: number, name: string): number {
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function quotaMode(v: string | undefined): 'auto' | 'full' {
  if (v === undefined || v === '' || v === 'auto') return 'auto';
  if (v === 'full') return 'full';
  throw new Error(`FORKD_QUOTA_MODE must be auto or full, got ${JSON.stringify(v)}`);
}

function criuLogLevel(v: string | undefined): number {
  if (v === undefined || v === '') return 2;
  if (/^[0-4]$/.test(v)) return Number(v);
  throw new Error(`FORKD_CRIU_DUMP_LOG_LEVEL must be one of 0-4 (CRIU's -v levels), got ${JSON.stringify(v)}`);
}

/** A positive number (fractions allowed), or undefined when unset. */
function positive(v: string | undefined, name: string): number | undefined {
  if (v === undefined || v === '') return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(v)}`);
  return n;
}

/** A limit: unset is none (null); 0 allows nothing. */
function limit(v: string | undefined, name: string): number | null {
  if (v === undefined || v === '') return null;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a number ≥ 0, got ${JSON.stringify(v)}`);
  return n;
}

/** The URL is not echoed back: it may hold a password. */
function databaseUrl(v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined;
  if (!/^postgres(ql)?:\/\/./.test(v)) throw new Error('FORKD_DATABASE_URL must be a postgres:// or postgresql:// URL (unset: SQLite in the state directory)');
  return v;
}

function role(v: string | undefined): ServeRole {
  if (v === undefined || v === '') return 'all';
  if (!(SERVE_ROLES as readonly string[]).includes(v)) throw new Error(`FORKD_ROLE must be one of ${SERVE_ROLES.join(', ')}, got ${JSON.stringify(v)}`);
  return v as ServeRole;
}

/** A port that may be switched off: `0` or `off` is null. */
function optionalPort(v: string | undefined, def: number, name: string): number | null {
  if (v === '0' || v?.toLowerCase() === 'off') return null;
  const n = int(v, def, name);
  if (n > 65535) throw new Error(`${name} must be a port (1-65535), 0 or off, got ${JSON.stringify(v)}`);
  return n;
}

function nonNegative(v: string | undefined, def: number, name: string): number {
  return v === '0' ? 0 : int(v, def, name);
}

/** A host setting forkd changes at start (`enable`, the default) or keeps as it found it (`leave`). */
function enableOrLeave(v: string | undefined, name: string): 'enable' | 'leave' {
  const value = v || 'enable';
  if (value !== 'enable' && value !== 'leave') throw new Error(`${name}: enable or leave`);
  return value;
}

/**
 * Configuration from the environment. FORKD_POOL names an existing Btrfs path
 * to use as the pool; without it a sparse loop image under the state dir is
 * created (FORKD_POOL_SIZE_GB, default 64).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ForkdConfig> = {}): ForkdConfig {
  const stateDir = env.FORKD_STATE_DIR || '/var/lib/forkd';
  const existing = env.FORKD_POOL;
  const proxy = proxyConfig(env);
  return {
    role: role(env.FORKD_ROLE),
    nodeUrl: env.FORKD_NODE_URL || undefined,
    nodeTokenFile: env.FORKD_NODE_TOKEN_FILE || join(stateDir, 'node.token'),
    fleet: fleetConfig(env, stateDir),
    stateDir,
    cacheDir: env.FORKD_CACHE_DIR || '/var/lib/forkd/cache',
    pool: existing
      ? { mountPoint: existing, sizeBytes: 0 }
      : { mountPoint: join(stateDir, 'pool'), image: join(stateDir, 'pool.img'), sizeBytes: int(env.FORKD_POOL_SIZE_GB, 64, 'FORKD_POOL_SIZE_GB') * 2 ** 30 },
    runtime: env.FORKD_RUNTIME || 'runc',
    storage: env.FORKD_STORAGE || 'btrfs',
    runDir: env.FORKD_RUN_DIR || '/run/forkd',
    net: netConfig(env),
    stagingDir: env.FORKD_STAGING_DIR || '/dev/shm/forkd',
    cgroupParent: env.FORKD_CGROUP_PARENT || 'forkd',
    guestBinary: env.FORKD_GUEST_BINARY || join(REPO_ROOT, 'packages/guest/build/forkd-guest'),
    host: env.FORKD_HOST || '127.0.0.1',
    port: int(env.FORKD_PORT, 8080, 'FORKD_PORT'),
    warmPool: nonNegative(env.FORKD_WARM_POOL, 2, 'FORKD_WARM_POOL'),
    warmPoolTemplates: nonNegative(env.FORKD_WARM_POOL_TEMPLATES, 2, 'FORKD_WARM_POOL_TEMPLATES'),
    snapshotIntervalS: nonNegative(env.FORKD_SNAPSHOT_INTERVAL_S, 300, 'FORKD_SNAPSHOT_INTERVAL_S'),
    idleTimeoutS: nonNegative(env.FORKD_IDLE_TIMEOUT_S, 600, 'FORKD_IDLE_TIMEOUT_S'),
    hotPauseS: nonNegative(env.FORKD_HOT_PAUSE_S, 60, 'FORKD_HOT_PAUSE_S'),
    conntrackBuckets: nonNegative(env.FORKD_CONNTRACK_BUCKETS, 16_384, 'FORKD_CONNTRACK_BUCKETS'),
    cgroupFavorDynmods: enableOrLeave(env.FORKD_CGROUP_FAVORDYNMODS, 'FORKD_CGROUP_FAVORDYNMODS'),
    stagingHugePages: enableOrLeave(env.FORKD_STAGING_HUGE_PAGES, 'FORKD_STAGING_HUGE_PAGES'),
    keepPausedRoot: env.FORKD_KEEP_PAUSED_ROOT !== '0',
    lazyRestore: env.FORKD_LAZY_RESTORE !== '0',
    lazyRestoreMinMb: nonNegative(env.FORKD_LAZY_RESTORE_MIN_MB, 64, 'FORKD_LAZY_RESTORE_MIN_MB'),
    lazyConnectWait: env.FORKD_LAZY_CONNECT_WAIT !== '0',
    criuRelay: env.FORKD_CRIU_RELAY !== '0',
    criuDirect: env.FORKD_CRIU_DIRECT !== '0',
    criuDumpLogLevel: criuLogLevel(env.FORKD_CRIU_DUMP_LOG_LEVEL),
    residentSpawn: env.FORKD_RESIDENT_SPAWN !== '0',
    cgroupV1Binds: env.FORKD_CGROUP_V1_BINDS !== '0',
    devInRoot: env.FORKD_DEV_IN_ROOT !== '0',
    recoverOnStart: env.FORKD_RECOVER_ON_START !== '0',
    userns: env.FORKD_USERNS !== '0',
    guestDeadlineS: int(env.FORKD_GUEST_DEADLINE_S, 30, 'FORKD_GUEST_DEADLINE_S'),
    proxyDomain: proxy.domain,
    proxyTls: proxy.tls,
    auditRetentionDays: nonNegative(env.FORKD_AUDIT_RETENTION_DAYS, 30, 'FORKD_AUDIT_RETENTION_DAYS'),
    approvalWebhook: env.FORKD_APPROVAL_WEBHOOK || undefined,
    otlpTracesUrl: env.FORKD_OTLP_ENDPOINT ? tracesUrl(env.FORKD_OTLP_ENDPOINT) : undefined,
    databaseUrl: databaseUrl(env.FORKD_DATABASE_URL),
    tenantLimits: {
      runningSandboxes: limit(env.FORKD_TENANT_MAX_SANDBOXES, 'FORKD_TENANT_MAX_SANDBOXES'),
      memoryMb: limit(env.FORKD_TENANT_MAX_MEMORY_MB, 'FORKD_TENANT_MAX_MEMORY_MB'),
      cpus: limit(env.FORKD_TENANT_MAX_CPUS, 'FORKD_TENANT_MAX_CPUS'),
      snapshots: limit(env.FORKD_TENANT_MAX_SNAPSHOTS, 'FORKD_TENANT_MAX_SNAPSHOTS'),
      diskMb: limit(env.FORKD_TENANT_MAX_DISK_MB, 'FORKD_TENANT_MAX_DISK_MB'),
    },
    maxMemoryMb: positive(env.FORKD_MAX_MEMORY_MB, 'FORKD_MAX_MEMORY_MB'),
    maxCpus: positive(env.FORKD_MAX_CPUS, 'FORKD_MAX_CPUS'),
    maxPids: positive(env.FORKD_MAX_PIDS, 'FORKD_MAX_PIDS'),
    memoryOvercommit: positive(env.FORKD_MEMORY_OVERCOMMIT, 'FORKD_MEMORY_OVERCOMMIT') ?? 4,
    cpuOvercommit: env.FORKD_CPU_OVERCOMMIT === '0' ? 0 : (positive(env.FORKD_CPU_OVERCOMMIT, 'FORKD_CPU_OVERCOMMIT') ?? 0),
    defaultDiskMb: int(env.FORKD_DEFAULT_DISK_MB, 10240, 'FORKD_DEFAULT_DISK_MB'),
    poolMinFreeMb: nonNegative(env.FORKD_POOL_MIN_FREE_MB, 2048, 'FORKD_POOL_MIN_FREE_MB'),
    poolMinFreePct: limit(env.FORKD_POOL_MIN_FREE_PCT, 'FORKD_POOL_MIN_FREE_PCT') ?? 5,
    diskOvercommit: env.FORKD_DISK_OVERCOMMIT === '0' ? 0 : (positive(env.FORKD_DISK_OVERCOMMIT, 'FORKD_DISK_OVERCOMMIT') ?? 8),
    quotaMode: quotaMode(env.FORKD_QUOTA_MODE),
    blobStore: parseBlobStoreConfig(env.FORKD_BLOB_STORE || `dir:${join(stateDir, 'blobs')}`),
    registries: registryAccessFromEnv(env),
    imageMaxMb: int(env.FORKD_IMAGE_MAX_MB, 16384, 'FORKD_IMAGE_MAX_MB'),
    buildCacheDays: nonNegative(env.FORKD_BUILD_CACHE_DAYS, 7, 'FORKD_BUILD_CACHE_DAYS'),
    e2bApiPort: optionalPort(env.FORKD_E2B_API_PORT, 3000, 'FORKD_E2B_API_PORT'),
    e2bEnvdPort: optionalPort(env.FORKD_E2B_ENVD_PORT, 49983, 'FORKD_E2B_ENVD_PORT'),
    ...overrides,
  };
}

function netConfig(env: NodeJS.ProcessEnv): ForkdConfig['net'] {
  const table = env.FORKD_NET_TABLE || 'forkd';
  const ifPrefix = env.FORKD_NET_IF_PREFIX || 'fkv';
  const hostNet = env.FORKD_NET_HOST_NET || '10.254';
  if (!/^[a-z][a-z0-9_]{0,31}$/.test(table)) throw new Error('FORKD_NET_TABLE: a lowercase nftables table name');
  if (!/^[a-z][a-z0-9]{0,9}$/.test(ifPrefix)) throw new Error('FORKD_NET_IF_PREFIX: 1 to 10 lowercase letters and digits');
  if (!/^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/.test(hostNet)) throw new Error('FORKD_NET_HOST_NET: the first two octets of a /16, e.g. 10.254');
  const port = (name: string) => {
    const v = env[name];
    if (v === undefined || v === '') return 0;
    if (!/^\d{1,5}$/.test(v) || Number(v) > 65535) throw new Error(`${name}: a port number (0: any free one)`);
    return Number(v);
  };
  const ports = { dns: port('FORKD_NET_DNS_PORT'), http: port('FORKD_NET_HTTP_PORT'), tls: port('FORKD_NET_TLS_PORT') };
  const operatorAllow = (env.FORKD_EGRESS_OPERATOR_ALLOW ?? '').split(',').map((c) => c.trim()).filter(Boolean);
  const bad = cidrListError(operatorAllow);
  if (bad) throw new Error(`FORKD_EGRESS_OPERATOR_ALLOW: ${bad} (comma-separated CIDRs)`);
  const upstream = env.FORKD_DNS_UPSTREAM ? parseUpstream(env.FORKD_DNS_UPSTREAM) : undefined;
  const hostForwarding = enableOrLeave(env.FORKD_HOST_FORWARDING, 'FORKD_HOST_FORWARDING');
  return { table, ifPrefix, hostNet, ports, upstream, extraCaFile: env.FORKD_EGRESS_EXTRA_CA || undefined, ...(operatorAllow.length ? { operatorAllow } : {}), hostForwarding };
}

/** `ip[:port]` (FORKD_DNS_UPSTREAM). */
function parseUpstream(v: string): { host: string; port: number } {
  const m = /^(\d+\.\d+\.\d+\.\d+)(?::(\d{1,5}))?$/.exec(v);
  if (!m || Number(m[2] ?? 53) > 65535) throw new Error('FORKD_DNS_UPSTREAM: an IPv4 address with an optional port, e.g. 10.0.0.2:53');
  return { host: m[1]!, port: Number(m[2] ?? 53) };
}
