import { join } from 'node:path';
import type { ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { ControlStore } from '../store/control-store.js';
import { SqliteControlStore } from '../store/sqlite-control-store.js';
import { PgControlStore } from '../store/pg-control-store.js';
import { redactDatabaseUrl } from '../store/pg-open.js';
import { newReplicaId } from './leased-job.js';
import { ApiKeys } from './auth/api-keys.js';
import { startAuditRetention } from './audit-retention.js';
import { TenantQuotas } from './quota/tenant-quotas.js';
import { loadSecretKey, SecretCipher } from './secrets/secret-cipher.js';
import { newPolicyRuntime, type PolicyRuntime } from './policy/policy-runtime.js';
import { AccessTokens } from './e2b/access-tokens.js';

export interface ControlPlane {
  store: ControlStore;
  /** This process among the control-plane replicas sharing the store: the holder its leases name (absent: a hand-made control plane). */
  replicaId?: string | undefined;
  keys: ApiKeys;
  /** Per-tenant limits and the capacity operations in flight reserved (one instance: reservations are shared by every request). */
  quotas: TenantQuotas;
  /** Seals and opens secret values (the key: secretKeyFile, root-only). */
  cipher: SecretCipher;
  /** E2B's per-sandbox tokens (envd access, traffic), which the port proxy takes too (absent: a hand-made control plane; the proxy then takes none). */
  e2bTokens?: AccessTokens | undefined;
  /** Calls waiting for approval and network-off cuts in force (absent: a hand-made control plane; see caller-view.ts). */
  policy?: PolicyRuntime | undefined;
  close(): Promise<void>;
}

/** Where `forkd setup` leaves the machine's admin key (root only). */
export function adminKeyFile(config: ForkdConfig): string {
  return join(config.stateDir, 'admin.key');
}

/** The key secrets are sealed with at rest: 32 random bytes, made at the first start (or `forkd setup`), owner-only. */
export function secretKeyFile(config: ForkdConfig): string {
  return join(config.stateDir, 'secrets.key');
}

/** The control plane's store: PostgreSQL when FORKD_DATABASE_URL is set, else its own SQLite file next to the node's. */
export async function openControlStore(config: ForkdConfig, logger?: Logger): Promise<ControlStore> {
  if (!config.databaseUrl) return new SqliteControlStore(join(config.stateDir, 'control.db'));
  const store = await PgControlStore.open(config.databaseUrl);
  logger?.info('control store: PostgreSQL', { database: redactDatabaseUrl(config.databaseUrl) });
  return store;
}

/** Keys, ownership and audit: the control plane's own database. */
export async function openControlPlane(config: ForkdConfig, logger?: Logger): Promise<ControlPlane> {
  const store = await openControlStore(config, logger);
  const replicaId = newReplicaId();
  const keys = new ApiKeys(store);
  await keys.ensureAdminKey(adminKeyFile(config));
  const stopRetention = startAuditRetention(store, config.auditRetentionDays, logger, { holder: replicaId });
  const secretKey = loadSecretKey(secretKeyFile(config));
  return {
    store,
    replicaId,
    keys,
    quotas: new TenantQuotas(store, config.tenantLimits, config.defaultDiskMb),
    cipher: new SecretCipher(secretKey),
    e2bTokens: await AccessTokens.open(config.stateDir, secretKey),
    policy: newPolicyRuntime({ webhook: config.approvalWebhook, logger, store }),
    close: async () => {
      await stopRetention();
      await store.close();
    },
  };
}
