import type { SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import type { SandboxPolicy, SandboxRecord, SnapshotRecord } from '../../store/store.js';

/** What the API shows of a sandbox's record. */
export function toInfo(r: SandboxRecord): SandboxInfo {
  return {
    id: r.id,
    template: r.template,
    templateId: r.templateId,
    state: r.state,
    limits: r.limits,
    env: r.env,
    metadata: r.metadata,
    createdAt: r.createdAt,
    hostname: r.id,
    ...(r.error ? { error: r.error } : {}),
    ...(r.forkedFrom ? { forkedFrom: r.forkedFrom } : {}),
    ...(r.policy?.expiresAt ? { expiresAt: r.policy.expiresAt, onTimeout: r.policy.onTimeout ?? 'pause' } : {}),
    ...(r.policy?.timeoutPauseMemory === false ? { timeoutPauseMemory: false as const } : {}),
    ...(r.recovered ? { recovered: r.recovered } : {}),
    ...(r.network ? { network: r.network } : {}),
    // A paused record without a snapshot to resume from is a filesystem-only pause.
    ...(r.state === 'paused' ? { pausedMemory: !!r.resumeFrom } : {}),
  };
}

export function toSnapshotInfo(r: SnapshotRecord): SnapshotInfo {
  return { ...r };
}

/** A policy whose lifetime (if it has one) starts now. */
export function freshLifetime(p: SandboxPolicy | undefined, now = Date.now()): SandboxPolicy | undefined {
  if (!p?.timeoutSeconds) return p && { ...p, expiresAt: undefined };
  return { ...p, expiresAt: new Date(now + p.timeoutSeconds * 1000).toISOString() };
}
