import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface ForkdConfig {
  /** Durable state: database, bundles, pool image, admin key. */
  stateDir: string;
  /** Toolchain (private CRIU root) and root-filesystem cache shared by every pool on this host. */
  cacheDir: string;
  pool: { mountPoint: string; image?: string | undefined; sizeBytes: number };
  /** Volatile runtime state (runc state); lost on reboot like the processes it describes. */
  runDir: string;
  /** Memory-backed directory where CRIU dumps before images move to the pool (short freezes). */
  stagingDir: string;
  cgroupParent: string;
  guestBinary: string;
  host: string;
  port: number;
  /** Sandboxes of the base template kept started ahead of demand. */
  warmPool: number;
  /** Default rolling-snapshot interval while active (0 = off). */
  snapshotIntervalS: number;
  /** Default idle time before hibernation (0 = never). */
  idleTimeoutS: number;
  /** How often the timeline/hibernation reconciler runs. */
  policyTickS: number;
  /** Restore memory lazily (userfaultfd) for faster resume and fork. */
  lazyRestore: boolean;
  /** At start, bring back sandboxes whose processes were lost (host reboot or crash) from their latest snapshot. */
  recoverOnStart: boolean;
  /** New sandboxes get a user namespace of their own (root inside is an unprivileged range outside); FORKD_USERNS=0 turns it off. */
  userns: boolean;
  /** Deadline of every guest-agent operation, in seconds (FORKD_GUEST_DEADLINE_S, default 30; see GUEST_DEADLINE_MS). */
  guestDeadlineS: number;
  /** Host-based port proxy: `{port}-{id}.{proxyDomain}` (wildcard DNS pointing here). */
  proxyDomain?: string | undefined;
  /** Audit records older than this many days are deleted (0: kept for ever). */
  auditRetentionDays: number;
}

/** The repository root (packages/server/dist/shared → ../../../..). */
export const REPO_ROOT = resolve(fileURLToPath(new URL('../../../../', import.meta.url)));

function int(v: string | undefined, def: number, name: string): number {
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(v)}`);
  return n;
}

function nonNegative(v: string | undefined, def: number, name: string): number {
  return v === '0' ? 0 : int(v, def, name);
}

/**
 * Configuration from the environment. FORKD_POOL names an existing Btrfs path
 * to use as the pool; without it a sparse loop image under the state dir is
 * created (FORKD_POOL_SIZE_GB, default 64).
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<ForkdConfig> = {}): ForkdConfig {
  const stateDir = env.FORKD_STATE_DIR || '/var/lib/forkd';
  const existing = env.FORKD_POOL;
  return {
    stateDir,
    cacheDir: env.FORKD_CACHE_DIR || '/var/lib/forkd/cache',
    pool: existing
      ? { mountPoint: existing, sizeBytes: 0 }
      : { mountPoint: join(stateDir, 'pool'), image: join(stateDir, 'pool.img'), sizeBytes: int(env.FORKD_POOL_SIZE_GB, 64, 'FORKD_POOL_SIZE_GB') * 2 ** 30 },
    runDir: env.FORKD_RUN_DIR || '/run/forkd',
    stagingDir: env.FORKD_STAGING_DIR || '/dev/shm/forkd',
    cgroupParent: env.FORKD_CGROUP_PARENT || 'forkd',
    guestBinary: env.FORKD_GUEST_BINARY || join(REPO_ROOT, 'packages/guest/build/forkd-guest'),
    host: env.FORKD_HOST || '127.0.0.1',
    port: int(env.FORKD_PORT, 8080, 'FORKD_PORT'),
    warmPool: nonNegative(env.FORKD_WARM_POOL, 2, 'FORKD_WARM_POOL'),
    snapshotIntervalS: nonNegative(env.FORKD_SNAPSHOT_INTERVAL_S, 300, 'FORKD_SNAPSHOT_INTERVAL_S'),
    idleTimeoutS: nonNegative(env.FORKD_IDLE_TIMEOUT_S, 600, 'FORKD_IDLE_TIMEOUT_S'),
    policyTickS: int(env.FORKD_POLICY_TICK_S, 15, 'FORKD_POLICY_TICK_S'),
    lazyRestore: env.FORKD_LAZY_RESTORE !== '0',
    recoverOnStart: env.FORKD_RECOVER_ON_START !== '0',
    userns: env.FORKD_USERNS !== '0',
    guestDeadlineS: int(env.FORKD_GUEST_DEADLINE_S, 30, 'FORKD_GUEST_DEADLINE_S'),
    proxyDomain: env.FORKD_PROXY_DOMAIN || undefined,
    auditRetentionDays: nonNegative(env.FORKD_AUDIT_RETENTION_DAYS, 30, 'FORKD_AUDIT_RETENTION_DAYS'),
    ...overrides,
  };
}
