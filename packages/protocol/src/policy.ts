import { z } from 'zod';

/**
 * Patterns are JavaScript regular expressions without back-references or
 * lookarounds: the server runs them on V8's linear-time engine (no
 * catastrophic backtracking, like RE2), which has neither. Both sides are
 * capped too: a pattern is at most POLICY_PATTERN_MAX characters (at most
 * POLICY_PATTERNS_MAX per list), and a text longer than POLICY_INPUT_MAX is
 * refused outright by a policy with patterns (see the evaluator).
 */
export const POLICY_PATTERN_MAX = 512;
export const POLICY_PATTERNS_MAX = 64;
export const POLICY_INPUT_MAX = 8192;
export const DEFAULT_APPROVAL_TIMEOUT_SECONDS = 300;

/** Why `p` is not an acceptable policy pattern, or undefined when it is. */
export function policyPatternError(p: string): string | undefined {
  if (p.length > POLICY_PATTERN_MAX) return `pattern longer than ${POLICY_PATTERN_MAX} characters`;
  try {
    new RegExp(p);
  } catch (err) {
    return `not a regular expression: ${(err as Error).message}`;
  }
  if (/\\[1-9]|\\k</.test(p)) return 'back-references are not allowed';
  if (/\(\?<?[=!]/.test(p)) return 'lookarounds are not allowed';
  return undefined;
}

const Pattern = z
  .string()
  .min(1)
  .superRefine((v, ctx) => {
    const err = policyPatternError(v);
    if (err) ctx.addIssue({ code: 'custom', message: `${JSON.stringify(v.slice(0, 80))}: ${err}` });
  });
const Patterns = z.array(Pattern).max(POLICY_PATTERNS_MAX);

/** An absolute path prefix inside the sandbox; normalised when matched (`/etc/` and `/etc` are the same). */
const PathPrefix = z
  .string()
  .min(1)
  .max(4096)
  .refine((p) => p.startsWith('/'), 'a path prefix must be absolute')
  .refine((p) => !p.includes('\0'), 'must not contain NUL bytes');

export const PolicyRules = z.strictObject({
  /** If present, a command must match one of them. */
  allow: Patterns.optional(),
  deny: Patterns.optional(),
  requireApproval: Patterns.optional(),
});
export type PolicyRules = z.infer<typeof PolicyRules>;

/** An environment variable's name as a policy names it (any bytes a caller may send but `=` and NUL). */
const EnvName = z
  .string()
  .min(1)
  .max(256)
  .refine((n) => !n.includes('=') && !n.includes('\0'), 'an environment variable name has no "=" or NUL');

/**
 * Exec rules: the patterns (over the command line, a shell `-c` script and
 * the resolved command line), and what else of the call a scope with an
 * `allow` list accepts: variables that change which code runs (refused
 * unless named in `allowEnv`, see docs/SECURITY.md), the working directory
 * and the user.
 */
export const ExecRules = PolicyRules.extend({
  /** Code-changing variables (`PATH`, `LD_PRELOAD`, `BASH_ENV`, …) this scope's allow list lets a call set, by exact name. */
  allowEnv: z.array(EnvName).max(POLICY_PATTERNS_MAX).optional(),
  /** If present, the working directory (`~` when the call gives none: the user's home) must match one of these patterns. */
  allowCwd: Patterns.optional(),
  /** If present, the user the process runs as (`root` when the call names none) must be one of these. */
  allowUsers: z.array(z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'invalid user name')).max(POLICY_PATTERNS_MAX).optional(),
});
export type ExecRules = z.infer<typeof ExecRules>;

/**
 * A per-call policy, attachable to a tenant, a template and a sandbox (all
 * apply; see docs/SECURITY.md). Exec patterns see the command line as the
 * sandbox's shell would: argv joined with shell quoting, and for a shell
 * `-c` invocation also the script string.
 */
export const PolicyDocument = z.strictObject({
  exec: ExecRules.optional(),
  files: z
    .strictObject({
      /** No write, mkdir, move or remove at or under these. */
      readOnly: z.array(PathPrefix).max(POLICY_PATTERNS_MAX).optional(),
      /** Not readable, listable or statable; left out of listings; and read-only. */
      hidden: z.array(PathPrefix).max(POLICY_PATTERNS_MAX).optional(),
    })
    .optional(),
  /** An exec is killed after this; it caps a request's timeout. */
  maxDurationSeconds: z.number().int().min(1).max(7 * 24 * 3600).optional(),
  /** Output (stdout and stderr together) beyond this is cut and the process killed. */
  maxOutputBytes: z.number().int().min(1).max(1024 ** 4).optional(),
  /** `off`: the sandbox's egress is cut for the duration of each exec (sandbox-wide, see docs/SECURITY.md). */
  network: z.enum(['on', 'off']).optional(),
  /** How long an approval-gated call waits before it is refused. */
  approvalTimeoutSeconds: z.number().int().min(1).max(7 * 24 * 3600).optional(),
  /** Patterns over `SECRET HOST`, once per host of a grant (the grant route and an exec's per-call grants). */
  grants: PolicyRules.optional(),
});
export type PolicyDocument = z.infer<typeof PolicyDocument>;

export const POLICY_SCOPES = ['tenant', 'template', 'sandbox'] as const;
export type PolicyScope = (typeof POLICY_SCOPES)[number];

/** `GET .../policy`: the document set at that scope (`{}` when none). */
export const PolicyAnswer = z.object({ scope: z.enum(POLICY_SCOPES), id: z.string(), policy: PolicyDocument });
export type PolicyAnswer = z.infer<typeof PolicyAnswer>;

/**
 * What an exec runs with besides its argv, as policies judge it and
 * approvers see it: the variables the call sets (its own `env`, an `env
 * VAR=x` prefix of its argv) and any code-changing ones of the sandbox's
 * env; the working directory; the user; argv[0] as the guest resolves it.
 */
export const ExecContext = z.object({
  env: z.record(z.string(), z.string()),
  /** Absent: the user's home. */
  cwd: z.string().optional(),
  /** Absent: the guest agent's user (root). */
  user: z.string().optional(),
  /** The path the guest will execute (through the process's PATH), when it could be resolved. */
  program: z.string().optional(),
});
export type ExecContext = z.infer<typeof ExecContext>;

/** A call waiting for an approver. */
export const ApprovalInfo = z.object({
  id: z.string(),
  sandbox: z.string(),
  tenant: z.string(),
  /** `exec`, or `grant`. */
  kind: z.string(),
  /** The command line (exec) or the grant's name. */
  command: z.string(),
  /** The rule that gated it, e.g. `sandbox:exec.requireApproval[0] "^git push"`. */
  rule: z.string(),
  /** An exec's environment, working directory, user and resolved program. */
  context: ExecContext.optional(),
  createdAt: z.string(),
  expiresAt: z.string(),
});
export type ApprovalInfo = z.infer<typeof ApprovalInfo>;
