import { join } from 'node:path';
import type { ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { ControlStore } from '../store/control-store.js';
import { SqliteControlStore } from '../store/sqlite-control-store.js';
import { ApiKeys } from './auth/api-keys.js';
import { startAuditRetention } from './audit-retention.js';
import { TenantQuotas } from './quota/tenant-quotas.js';
import { loadSecretKey, SecretCipher } from './secrets/secret-cipher.js';
import { newPolicyRuntime, type PolicyRuntime } from './policy/policy-runtime.js';

export interface ControlPlane {
  store: ControlStore;
  keys: ApiKeys;
  /** Per-tenant limits and the capacity operations in flight reserved (one instance: reservations are shared by every request). */
  quotas: TenantQuotas;
  /** Seals and opens secret values (the key: secretKeyFile, root-only). */
  cipher: SecretCipher;
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

/** Keys, ownership and audit: the control plane's own database, next to the node's. */
export async function openControlPlane(config: ForkdConfig, logger?: Logger): Promise<ControlPlane> {
  const store = new SqliteControlStore(join(config.stateDir, 'control.db'));
  const keys = new ApiKeys(store);
  await keys.ensureAdminKey(adminKeyFile(config));
  const stopRetention = startAuditRetention(store, config.auditRetentionDays, logger);
  return {
    store,
    keys,
    quotas: new TenantQuotas(store, config.tenantLimits, config.defaultDiskMb),
    cipher: new SecretCipher(loadSecretKey(secretKeyFile(config))),
    policy: newPolicyRuntime({ webhook: config.approvalWebhook, logger }),
    close: async () => {
      stopRetention();
      await store.close();
    },
  };
}
