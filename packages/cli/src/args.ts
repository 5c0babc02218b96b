import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from './usage-error.js';

/** node:util parseArgs in strict mode, with its errors turned into usage errors. */
export function parseOptions<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ strict: true, ...config });
  } catch (err) {
    // parseArgs' advice ("place it after '--'") is right for exec, noise elsewhere: keep the first sentence.
    const msg = (err as Error).message.split('. ')[0] ?? String(err);
    throw new UsageError(msg.replace(/^Unknown option/, 'unknown option').replace(/^Option/, 'option'));
  }
}

/**
 * Splits `[options] ID -- CMD...`: positionals before the first `--` and every
 * argument after it, untouched (so `--help` there belongs to the command).
 */
export function splitAtTerminator(argv: readonly string[]): { before: string[]; after: string[] | undefined } {
  const i = argv.indexOf('--');
  return i < 0 ? { before: [...argv], after: undefined } : { before: argv.slice(0, i), after: argv.slice(i + 1) };
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** `--env K=V` (repeatable). A bare `K` copies the variable from the caller's environment, like docker. */
export function parseEnvPairs(pairs: readonly string[] | undefined, localEnv: NodeJS.ProcessEnv = process.env): Record<string, string> | undefined {
  if (!pairs?.length) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    const name = eq < 0 ? p : p.slice(0, eq);
    if (!ENV_NAME.test(name)) throw new UsageError(`--env ${JSON.stringify(p)}: expected NAME=VALUE`);
    if (eq >= 0) out[name] = p.slice(eq + 1);
    else if (localEnv[name] !== undefined) out[name] = localEnv[name]!;
    else throw new UsageError(`--env ${name}: not set here (use ${name}=VALUE)`);
  }
  return out;
}

export function parsePositiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9][0-9]*$/.test(value)) throw new UsageError(`${flag} must be a positive integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

export function parsePositiveNumber(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!value.trim() || !Number.isFinite(n) || n <= 0) throw new UsageError(`${flag} must be a positive number, got ${JSON.stringify(value)}`);
  return n;
}

/** A process on the command line: `PID` or `tag:TAG`. */
export function parseProcessArg(value: string): number | string {
  if (/^[1-9][0-9]*$/.test(value)) return Number(value);
  if (/^tag:[A-Za-z0-9._:-]{1,64}$/.test(value)) return value;
  throw new UsageError(`expected a PID or tag:TAG, got ${JSON.stringify(value)}`);
}

/** Exactly `names.length` positionals, named in the error when missing or extra. */
export function expectPositionals(positionals: readonly string[], names: readonly string[]): string[] {
  if (positionals.length < names.length) throw new UsageError(`missing ${names.slice(positionals.length).join(' ')}`);
  if (positionals.length > names.length) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[names.length])}`);
  return [...positionals];
}

/** `K=V` labels (metadata): both sides taken as they are, the key non-empty. */
export function parseLabelPairs(flag: string, pairs: readonly string[] | undefined): Record<string, string> | undefined {
  if (!pairs?.length) return undefined;
  const out: Record<string, string> = {};
  for (const p of pairs) {
    const eq = p.indexOf('=');
    if (eq <= 0) throw new UsageError(`${flag} ${JSON.stringify(p)}: expected KEY=VALUE`);
    out[p.slice(0, eq)] = p.slice(eq + 1);
  }
  return out;
}
