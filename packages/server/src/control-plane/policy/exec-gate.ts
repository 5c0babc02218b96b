import { constants as osConstants } from 'node:os';
import { ForkdError } from '@forkd/protocol';
import type { NodeService, OutputHandlers, ProcessStream, SpawnOptions } from '../../node-contract/index.js';
import type { PolicyRuntime } from './policy-runtime.js';
import type { PolicyAuditor } from './policy-audit.js';
import { commandTexts } from './command-line.js';
import { callLimits, decideExec, type ScopedPolicy } from './policy-evaluator.js';

export function policyRefusal(rule: string, why = 'refused by policy'): ForkdError {
  return new ForkdError('PERMISSION_DENIED', `${why}: rule ${rule}`, { rule });
}

export interface ExecGateDeps {
  svc: NodeService;
  runtime: PolicyRuntime;
  audit: PolicyAuditor;
  tenant: string;
}

/**
 * One exec under the policies that apply to its sandbox: refused, or held
 * for an approver, or run with the strictest limits (duration, output,
 * network off for its duration).
 */
export async function gatedSpawn(d: ExecGateDeps, policies: readonly ScopedPolicy[], id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<ProcessStream> {
  const { svc, runtime, audit } = d;
  const line = commandTexts(opts.argv)[0] ?? '';
  const decision = decideExec(policies, opts.argv);
  const limits = callLimits(policies);
  if (decision.action === 'deny') {
    await audit(id, 'deny', decision.rule, line);
    throw policyRefusal(decision.rule);
  }
  if (decision.action === 'approve') {
    await audit(id, 'wait', decision.rule, line);
    const outcome = await runtime.approvals.wait(
      { sandbox: id, tenant: d.tenant, kind: 'exec', command: line, rule: decision.rule, timeoutSeconds: limits.approvalTimeoutSeconds.value },
      (a) => handlers?.onWaiting?.({ approvalId: a.id, rule: a.rule, expiresAt: a.expiresAt }),
      handlers?.abort,
    );
    await audit(id, outcome, decision.rule, line);
    if (outcome !== 'approved') throw policyRefusal(decision.rule, outcome === 'timeout' ? 'no approver answered in time' : outcome === 'denied' ? 'denied by an approver' : 'the call was cancelled while waiting');
  } else await audit(id, 'allow', decision.rule, line);

  const release = limits.networkOff ? await runtime.cuts.acquire(svc, id) : undefined;
  let pid: number | undefined;
  let ended = false;
  const kill = (limit: 'maxOutputBytes' | 'maxDurationSeconds', rule: string) => {
    if (ended) return;
    ended = true;
    void audit(id, 'limit', rule, line).catch(() => {});
    void Promise.resolve(handlers?.onLimit?.({ limit, rule })).catch(() => {});
    if (pid !== undefined) void svc.signal(id, { pid }, osConstants.signals.SIGKILL).catch(() => {});
  };
  const wrapped = outputCap(handlers, limits.maxOutputBytes, () => kill('maxOutputBytes', limits.maxOutputBytes?.rule ?? ''));
  let stream: ProcessStream;
  try {
    stream = await svc.spawn(id, opts, wrapped);
  } catch (err) {
    await release?.();
    throw err;
  }
  pid = stream.process.pid;
  // Output past the cap that came before the pid was known: kill now.
  if (ended) void svc.signal(id, { pid }, osConstants.signals.SIGKILL).catch(() => {});
  const max = limits.maxDurationSeconds;
  const timer = max ? setTimeout(() => kill('maxDurationSeconds', max.rule), max.value * 1000) : undefined;
  timer?.unref();
  void stream.exit
    .catch(() => null)
    .finally(() => {
      ended = true;
      if (timer) clearTimeout(timer);
      void release?.();
    });
  return stream;
}

/** Output callbacks that pass on at most `cap` bytes (stdout and stderr together), then call `over` once and pass nothing more. */
function outputCap(h: OutputHandlers | undefined, cap: { value: number } | undefined, over: () => void): OutputHandlers | undefined {
  if (!h || !cap) return h;
  let left = cap.value;
  const pass = (f: ((b: Buffer) => void | Promise<void>) | undefined) => (b: Buffer) => {
    if (left < 0) return;
    const beyond = b.length > left;
    const part = beyond ? b.subarray(0, left) : b;
    left = beyond ? -1 : left - b.length;
    const r = part.length > 0 ? f?.(part) : undefined;
    if (beyond) over();
    return r;
  };
  return { ...h, onStdout: pass(h.onStdout), onStderr: pass(h.onStderr) };
}
