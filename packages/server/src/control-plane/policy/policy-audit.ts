import type { ControlStore } from '../../store/control-store.js';

/** What the gate decided: allow, deny, a wait for approval and its end, or a limit that ended a process. */
export type PolicyEvent = 'allow' | 'deny' | 'wait' | 'approved' | 'denied' | 'timeout' | 'cancelled' | 'limit';

export interface PolicyCaller {
  tenant: string;
  keyId?: string | undefined;
}

/** Appends one decision to the audit log: operation `policy.<event>`, the rule and the call as the target (`sandboxId` empty: a call with no sandbox yet, a template build's). */
export type PolicyAuditor = (sandboxId: string, event: PolicyEvent, rule: string | undefined, call: string) => Promise<void>;

export function policyAuditor(store: ControlStore, who: PolicyCaller): PolicyAuditor {
  return async (sandboxId, event, rule, call) => {
    const refused = event === 'deny' || event === 'denied' || event === 'timeout';
    await store.appendAudit({
      at: new Date().toISOString(),
      ...(who.keyId ? { keyId: who.keyId } : {}),
      tenant: who.tenant,
      ...(sandboxId ? { sandboxId } : {}),
      operation: `policy.${event}`,
      target: `${rule ?? 'no rule'}: ${call}`.slice(0, 1000),
      code: refused ? 'PERMISSION_DENIED' : 'OK',
      status: refused ? 403 : 200,
      durationMs: 0,
    });
  };
}
