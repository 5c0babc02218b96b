import { DEFAULT_APPROVAL_TIMEOUT_SECONDS, POLICY_INPUT_MAX, type PolicyDocument, type PolicyRules, type PolicyScope } from '@forkd/protocol';
import { codeChangingVar } from './code-env.js';
import { commandTexts, shellQuote } from './command-line.js';
import type { ExecCall } from './exec-call.js';
import { linearRegExp } from './linear-regexp.js';
import { underPrefix } from './path-prefix.js';

/** One policy document and where it is attached. */
export interface ScopedPolicy {
  scope: PolicyScope;
  id: string;
  policy: PolicyDocument;
}

/**
 * What the policies say of one call, and the rule that said it (a name such
 * as `tenant:exec.deny[0] "^rm -rf /$"`, shown to the caller and audited).
 * `allow` with no rule: no policy had anything to say.
 */
export type Decision = { action: 'allow'; rule?: string | undefined } | { action: 'deny'; rule: string } | { action: 'approve'; rule: string };

/** A limit and the rule that set it (the strictest of all scopes). */
export interface Limit {
  value: number;
  rule: string;
}

export interface CallLimits {
  maxDurationSeconds?: Limit | undefined;
  maxOutputBytes?: Limit | undefined;
  /** Set: egress is cut for the duration of the call, by this rule. */
  networkOff?: string | undefined;
  approvalTimeoutSeconds: Limit;
}

const ruleName = (p: ScopedPolicy, key: string, i?: number, pattern?: string) => `${p.scope}:${key}${i === undefined ? '' : `[${i}]`}${pattern === undefined ? '' : ` ${JSON.stringify(pattern)}`}`;

/** Patterns are validated at set time; one that no longer compiles refuses the call (INVALID_ARGUMENT naming it) rather than matching nothing. */
function matches(pattern: string, texts: readonly string[]): boolean {
  const re = linearRegExp(pattern);
  return texts.some((t) => re.test(t));
}

/** Every pattern of a document (for the check at set time). */
export function policyPatterns(p: PolicyDocument): string[] {
  const rules = [p.exec, p.grants];
  return [...rules.flatMap((r) => [...(r?.allow ?? []), ...(r?.deny ?? []), ...(r?.requireApproval ?? [])]), ...(p.exec?.allowCwd ?? [])];
}

/**
 * All scopes apply: a deny anywhere refuses, an allow list anywhere must be
 * matched (each scope's list on its own, so a sandbox's list cannot widen a
 * tenant's), a requireApproval anywhere gates. Deny is checked before allow
 * lists, both before approval: a call that would be refused never waits.
 */
function decide(policies: readonly ScopedPolicy[], pick: (p: PolicyDocument) => PolicyRules | undefined, key: string, texts: readonly string[], admit?: (p: ScopedPolicy) => string | undefined): Decision {
  const withRules = policies.filter((p) => pick(p.policy));
  if (withRules.length === 0) return { action: 'allow' };
  // The cap on what a pattern is run over: longer input is refused, not cut (a cut would let a denied tail through).
  if (texts.some((t) => t.length > POLICY_INPUT_MAX)) return { action: 'deny', rule: `policy:${key}.inputLength (more than ${POLICY_INPUT_MAX} characters)` };
  for (const p of withRules) {
    const deny = pick(p.policy)?.deny ?? [];
    for (const [i, pat] of deny.entries()) if (matches(pat, texts)) return { action: 'deny', rule: ruleName(p, `${key}.deny`, i, pat) };
  }
  let allowedBy: string | undefined;
  for (const p of withRules) {
    const allow = pick(p.policy)?.allow;
    if (allow !== undefined) {
      const i = allow.findIndex((pat) => matches(pat, texts));
      if (i < 0) return { action: 'deny', rule: ruleName(p, `${key}.allow`) };
      allowedBy ??= ruleName(p, `${key}.allow`, i, allow[i]);
    }
    const refused = admit?.(p);
    if (refused !== undefined) return { action: 'deny', rule: refused };
  }
  for (const p of withRules) {
    const gate = pick(p.policy)?.requireApproval ?? [];
    for (const [i, pat] of gate.entries()) if (matches(pat, texts)) return { action: 'approve', rule: ruleName(p, `${key}.requireApproval`, i, pat) };
  }
  return { action: 'allow', rule: allowedBy };
}

/**
 * What one scope's exec rules refuse of a call besides its command line:
 * under an `allow` list, a variable that changes which code runs and is not
 * in `allowEnv`, or an argv[0] with a `..` step (`/usr/bin/../../tmp/x`
 * would pass `^/usr/bin/`); a cwd outside `allowCwd`; a user outside
 * `allowUsers`. Undefined: nothing.
 */
function execRefusal(p: ScopedPolicy, c: ExecCall): string | undefined {
  const rules = p.policy.exec;
  if (!rules) return undefined;
  if (rules.allow !== undefined) {
    const named = new Set(rules.allowEnv ?? []);
    for (const [k, v] of Object.entries(c.env ?? {})) {
      if (codeChangingVar(k, v) && !named.has(k)) return `${ruleName(p, 'exec.allowEnv')} (${JSON.stringify(k)} changes which code runs; name it in allowEnv to permit it)`;
    }
    if ((c.argv[0] ?? '').split('/').includes('..')) return `${ruleName(p, 'exec.allow')} (argv[0] has a ".." step)`;
  }
  const cwd = c.cwd ?? '~';
  if (rules.allowCwd !== undefined && !rules.allowCwd.some((pat) => matches(pat, [cwd]))) return `${ruleName(p, 'exec.allowCwd')} (cwd ${JSON.stringify(cwd)})`;
  const user = c.user ?? 'root';
  if (rules.allowUsers !== undefined && !rules.allowUsers.includes(user)) return `${ruleName(p, 'exec.allowUsers')} (user ${JSON.stringify(user)})`;
  return undefined;
}

/**
 * An exec: its patterns see the command line, for `sh -c` the script (see
 * command-line.ts), and, when argv[0] was resolved to another path, the
 * command line with that path as argv[0] (`/usr/bin/ls -l` for `ls -l`);
 * its env, cwd and user are judged by execRefusal. A bare argv is a call
 * with nothing else set.
 */
export function decideExec(policies: readonly ScopedPolicy[], call: ExecCall | readonly string[]): Decision {
  const c: ExecCall = isArgv(call) ? { argv: call } : call;
  const texts = commandTexts(c.argv);
  if (c.program !== undefined && c.program !== c.argv[0]) texts.push([c.program, ...c.argv.slice(1)].map(shellQuote).join(' '));
  return decide(policies, (p) => p.exec, 'exec', texts, (p) => execRefusal(p, c));
}

const isArgv = (c: ExecCall | readonly string[]): c is readonly string[] => Array.isArray(c);

/** A grant call (a secret's name or a host), for the grant routes. */
export function decideGrant(policies: readonly ScopedPolicy[], name: string): Decision {
  return decide(policies, (p) => p.grants, 'grants', [name]);
}

export type FileAccess = 'read' | 'write';

/** Hidden paths are neither read nor written; read-only ones are not written (write, mkdir, move, remove). */
export function decideFile(policies: readonly ScopedPolicy[], access: FileAccess, path: string): Decision {
  for (const p of policies) {
    for (const [i, h] of (p.policy.files?.hidden ?? []).entries()) if (underPrefix(path, h)) return { action: 'deny', rule: ruleName(p, 'files.hidden', i, h) };
  }
  if (access === 'read') return { action: 'allow' };
  for (const p of policies) {
    for (const [i, r] of (p.policy.files?.readOnly ?? []).entries()) if (underPrefix(path, r)) return { action: 'deny', rule: ruleName(p, 'files.readOnly', i, r) };
  }
  return { action: 'allow' };
}

/** Hidden paths are left out of listings (as if they did not exist). */
export function isHidden(policies: readonly ScopedPolicy[], path: string): boolean {
  return decideFile(policies, 'read', path).action === 'deny';
}

/** The strictest of each limit over every scope. */
export function callLimits(policies: readonly ScopedPolicy[]): CallLimits {
  const min = (key: 'maxDurationSeconds' | 'maxOutputBytes' | 'approvalTimeoutSeconds'): Limit | undefined => {
    let best: Limit | undefined;
    for (const p of policies) {
      const v = p.policy[key];
      if (v !== undefined && (best === undefined || v < best.value)) best = { value: v, rule: ruleName(p, key) };
    }
    return best;
  };
  const off = policies.find((p) => p.policy.network === 'off');
  return {
    maxDurationSeconds: min('maxDurationSeconds'),
    maxOutputBytes: min('maxOutputBytes'),
    networkOff: off && ruleName(off, 'network'),
    approvalTimeoutSeconds: min('approvalTimeoutSeconds') ?? { value: DEFAULT_APPROVAL_TIMEOUT_SECONDS, rule: 'default:approvalTimeoutSeconds' },
  };
}
