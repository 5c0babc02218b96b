import type { ExecContext } from '@forkd/protocol';
import { codeChangingVar } from './code-env.js';
import { shellQuote } from './command-line.js';
import { GUEST_DEFAULT_PATH } from './program-path.js';

/** An exec as the policy evaluator judges it: more than its argv. */
export interface ExecCall {
  argv: readonly string[];
  /** Every variable set over the guest's defaults: the sandbox's env, then the call's, then an `env VAR=x` prefix of argv (later wins). */
  env?: Readonly<Record<string, string>> | undefined;
  /** Absent: the user's home. */
  cwd?: string | undefined;
  /** Absent: the guest agent's user (root). */
  user?: string | undefined;
  /** argv[0] as the guest resolves it (program-path.ts), when known. */
  program?: string | undefined;
}

/** What an approver is shown of one variable's name and value, and of how many variables (an approval is held in memory). */
const SHOWN_NAME_MAX = 256;
const SHOWN_VALUE_MAX = 1024;
const SHOWN_VARS_MAX = 64;

/** The assignments an `env` at argv[0] makes for the program it runs (`env [-i] [--] A=1 B=2 prog`). */
export function argvEnv(argv: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  if ((argv[0] ?? '').split('/').pop() !== 'env') return out;
  for (const a of argv.slice(1)) {
    if (a === '-i' || a === '-' || a === '--' || a === '--ignore-environment') continue;
    const eq = a.indexOf('=');
    if (eq <= 0 || a.startsWith('-')) break;
    out[a.slice(0, eq)] = a.slice(eq + 1);
  }
  return out;
}

export interface DescribedExec {
  call: ExecCall;
  /** The PATH the process gets (its argv[0] is looked up in it). */
  pathVar: string;
  /** What approvers, the audit log and the webhook are shown. */
  context: ExecContext;
}

/**
 * The call as judged and as shown. Shown: the variables the call sets, and
 * the sandbox's own only where they change which code runs (the rest of a
 * sandbox's env is set at create and may hold credentials).
 */
export function describeExec(opts: { argv: readonly string[]; env?: Record<string, string> | undefined; cwd?: string | undefined; user?: string | undefined }, sandboxEnv: Readonly<Record<string, string>> = {}): DescribedExec {
  const prefix = argvEnv(opts.argv);
  const processEnv = { ...sandboxEnv, ...opts.env };
  const env = { ...processEnv, ...prefix };
  const shownNames = new Set([...Object.keys(sandboxEnv).filter((k) => codeChangingVar(k, env[k])), ...Object.keys(opts.env ?? {}), ...Object.keys(prefix)]);
  const shown: Record<string, string> = {};
  for (const k of [...shownNames].slice(0, SHOWN_VARS_MAX)) shown[k.slice(0, SHOWN_NAME_MAX)] = (env[k] ?? '').slice(0, SHOWN_VALUE_MAX);
  return {
    call: { argv: opts.argv, env, cwd: opts.cwd, user: opts.user },
    pathVar: processEnv.PATH ?? GUEST_DEFAULT_PATH,
    context: { env: shown, ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}), ...(opts.user !== undefined ? { user: opts.user } : {}) },
  };
}

/** One line for the audit log: the command line, then what else it ran with. */
export function auditLine(line: string, ctx: ExecContext | undefined): string {
  if (!ctx) return line;
  const parts = [
    ctx.cwd !== undefined ? `cwd=${shellQuote(ctx.cwd)}` : undefined,
    ctx.user !== undefined ? `user=${ctx.user}` : undefined,
    ctx.program !== undefined ? `program=${shellQuote(ctx.program)}` : undefined,
    ...Object.entries(ctx.env).map(([k, v]) => `env ${shellQuote(k)}=${shellQuote(v)}`),
  ].filter((p) => p !== undefined);
  return parts.length === 0 ? line : `${line} [${parts.join(', ')}]`;
}
