import { ERROR_CODES } from '@forkd/protocol';
import type { NodeEventSink } from '../node/node-event.js';
import type { ControlPlane } from './control-plane.js';

/**
 * Files what happened to a sandbox without a call (its processes lost, its
 * recovery) in the audit log, under the sandbox's tenant and with no key:
 * `forkd logs` shows it among the calls, operation `lost` or `recover`.
 */
export function auditNodeEvents(control: ControlPlane): NodeEventSink {
  return (e) =>
    control.store.appendAudit({
      at: e.at,
      // A sandbox with no owner is filed under no tenant: only admin keys (who read every tenant's records) see it.
      tenant: control.store.owner('sandbox', e.sandboxId),
      sandboxId: e.sandboxId,
      operation: e.operation,
      target: e.detail,
      code: e.code,
      status: e.code === 'OK' ? 200 : ERROR_CODES[e.code],
      durationMs: e.durationMs,
    });
}
