import { ERROR_CODES, type ErrorCode } from '@forkd/protocol';
import type { Logger } from '../shared/logger.js';
import type { ControlPlane } from './control-plane.js';

/**
 * What a node reports of a sandbox without a call asking for it (the node's
 * NodeEvent, described here by shape: the control plane imports nothing of a
 * node but its contract).
 */
export interface SandboxEvent {
  at: string;
  sandboxId: string;
  operation: string;
  detail: string;
  code: 'OK' | ErrorCode;
  durationMs: number;
}

/**
 * Files what happened to a sandbox without a call (its processes lost, its
 * recovery) in the audit log, under the sandbox's tenant and with no key:
 * `forkd logs` shows it among the calls, operation `lost` or `recover`.
 */
export function auditNodeEvents(control: ControlPlane, logger?: Logger): (e: SandboxEvent) => void {
  const file = async (e: SandboxEvent) =>
    control.store.appendAudit({
      at: e.at,
      // A sandbox with no owner is filed under no tenant: only admin keys (who read every tenant's records) see it.
      tenant: await control.store.owner('sandbox', e.sandboxId),
      sandboxId: e.sandboxId,
      operation: e.operation,
      target: e.detail,
      code: e.code,
      status: e.code === 'OK' ? 200 : ERROR_CODES[e.code],
      durationMs: e.durationMs,
    });
  // The node does not wait for its events to be filed: a store that fails is logged, never thrown into the node.
  return (e) => void file(e).catch((err: unknown) => logger?.warn('node event not audited', { sandboxId: e.sandboxId, operation: e.operation, error: String(err) }));
}
