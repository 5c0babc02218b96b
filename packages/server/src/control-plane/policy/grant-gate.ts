import type { ApprovalInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { ControlStore } from '../../store/control-store.js';
import { policyRefusal } from './exec-gate.js';
import { policyAuditor, type PolicyCaller } from './policy-audit.js';
import { callLimits, decideGrant } from './policy-evaluator.js';
import { sandboxPolicies } from './policy-gate.js';
import type { PolicyRuntime } from './policy-runtime.js';

/**
 * For the grant routes (`POST /v1/sandboxes/{id}/grants`, per-call grants on
 * exec): resolves when the policies let `name` (a secret's name or a host) be
 * granted to sandbox `id` — at once, or after an approver approved it — and
 * throws PERMISSION_DENIED naming the rule otherwise. Every decision is
 * audited like an exec's (`policy.*`, target `RULE: grant NAME`).
 */
export async function gateGrant(
  svc: NodeService,
  store: ControlStore,
  runtime: PolicyRuntime,
  who: PolicyCaller,
  id: string,
  name: string,
  onWaiting?: (a: ApprovalInfo) => void | Promise<void>,
): Promise<void> {
  const ps = await sandboxPolicies(svc, store, id, runtime.templateOf);
  if (ps.length === 0) return;
  const audit = policyAuditor(store, who);
  const call = `grant ${name}`;
  const d = decideGrant(ps, name);
  if (d.action === 'deny') {
    await audit(id, 'deny', d.rule, call);
    throw policyRefusal(d.rule);
  }
  if (d.action === 'allow') return audit(id, 'allow', d.rule, call);
  await audit(id, 'wait', d.rule, call);
  const outcome = await runtime.approvals.wait({ sandbox: id, tenant: who.tenant, kind: 'grant', command: name, rule: d.rule, timeoutSeconds: callLimits(ps).approvalTimeoutSeconds.value }, (a) => onWaiting?.(a));
  await audit(id, outcome, d.rule, call);
  if (outcome !== 'approved') throw policyRefusal(d.rule, outcome === 'timeout' ? 'no approver answered in time' : outcome === 'denied' ? 'denied by an approver' : 'the call was cancelled while waiting');
}
