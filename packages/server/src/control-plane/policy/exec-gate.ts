import { constants as osConstants } from 'node:os';
import { ForkdError, type ExecContext } from '@forkd/protocol';
import type { NodeService, OutputHandlers, ProcessStream, SpawnOptions } from '../../node-contract/index.js';
import type { PolicyRuntime } from './policy-runtime.js';
import type { PolicyAuditor, PolicyEvent } from './policy-audit.js';
import { commandTexts } from './command-line.js';
import { auditLine, describeExec, type ExecCall } from './exec-call.js';
import { resolveProgram } from './program-path.js';
import { callLimits, decideExec, type Decision, type ScopedPolicy } from './policy-evaluator.js';

export function policyRefusal(rule: string, why = 'refused by policy'): ForkdError {
  return new ForkdError('PERMISSION_DENIED', `${why}: rule ${rule}`, { rule });
}

/** The audit of one call's decisions. */
type CallAudit = (event: PolicyEvent, rule: string | undefined) => Promise<void>;

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
  const { svc, runtime } = d;
  const { call, context } = await judgedCall(svc, policies, id, opts);
  const command = commandTexts(opts.argv)[0] ?? '';
  const line = auditLine(command, context);
  const audit: CallAudit = (ev, rule) => d.audit(id, ev, rule, line);
  const limits = callLimits(policies);
  await admitCall(d, id, command, context, decideExec(policies, call), limits.approvalTimeoutSeconds.value, audit, handlers);

  const release = limits.networkOff ? await runtime.cuts.acquire(svc, id) : undefined;
  let pid: number | undefined;
  let ended = false;
  const kill = (limit: 'maxOutputBytes' | 'maxDurationSeconds', rule: string) => {
    if (ended) return;
    ended = true;
    void audit('limit', rule).catch(() => {});
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

/** The call as the evaluator judges it: with the sandbox's env and argv[0] resolved inside the sandbox, when an exec rule could care. */
async function judgedCall(svc: NodeService, policies: readonly ScopedPolicy[], id: string, opts: SpawnOptions): Promise<{ call: ExecCall; context: ExecContext | undefined }> {
  if (!policies.some((p) => p.policy.exec)) return { call: { argv: opts.argv }, context: undefined };
  const info = await svc.get(id);
  const { call, pathVar, context } = describeExec(opts, info.env);
  const program = await resolveProgram(opts.argv[0] ?? '', pathVar, opts.cwd, async (path) => svc.stat(id, path).catch(() => undefined));
  if (program !== undefined) {
    call.program = program;
    context.program = program;
  }
  return { call, context };
}

/** Refused (PERMISSION_DENIED naming the rule), held for an approver (who is shown the command and its context), or let through; each audited. */
async function admitCall(d: ExecGateDeps, id: string, command: string, context: ExecContext | undefined, decision: Decision, timeoutSeconds: number, audit: CallAudit, handlers: OutputHandlers | undefined): Promise<void> {
  if (decision.action === 'deny') {
    await audit('deny', decision.rule);
    throw policyRefusal(decision.rule);
  }
  if (decision.action === 'allow') return audit('allow', decision.rule);
  await audit('wait', decision.rule);
  const outcome = await d.runtime.approvals.wait(
    { sandbox: id, tenant: d.tenant, kind: 'exec', command, context, rule: decision.rule, timeoutSeconds },
    (a) => handlers?.onWaiting?.({ approvalId: a.id, rule: a.rule, expiresAt: a.expiresAt, ...(a.context ? { context: a.context } : {}) }),
    handlers?.abort,
  );
  await audit(outcome, decision.rule);
  if (outcome !== 'approved') throw policyRefusal(decision.rule, outcome === 'timeout' ? 'no approver answered in time' : outcome === 'denied' ? 'denied by an approver' : 'the call was cancelled while waiting');
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
