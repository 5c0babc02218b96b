import { grantHostError, parseHeaderTemplate, SECRET_NAME_PATTERN } from '@forkd/protocol/grant-syntax';
import { ForkdError, type GrantSpecInput, type ProcessExit, type Sandbox, type SpawnOptions, type WaitingForApproval } from '@forkd/sdk';
import { parseEnvPairs, parseOptions, parsePositiveNumber, splitAtTerminator } from '../args.js';
import type { CliCommand } from '../command.js';
import { openSandbox, requireWebSocket } from '../connect.js';
import { exitStatus } from '../exit-status.js';
import { printJson } from '../format.js';
import { forwardInterrupts } from '../interrupts.js';
import { stdinKind } from '../stdin-kind.js';
import { UsageError } from '../usage-error.js';
import { contextSummary } from './approvals.js';

const USAGE = `Usage: forkd exec [options] ID -- CMD [ARG...]

Runs CMD in sandbox ID, passes its stdout and stderr through byte for byte and
exits with its exit code (128+N when killed by signal N).

CMD and its ARGs are argv, run without a shell: even one argument with spaces
is a single program name. For shell syntax (pipes, globs, &&, variables) run a
shell explicitly:
  forkd exec ID -- bash -lc 'cd /work && make 2>&1 | tail -5'

Piped stdin is streamed to the process as it comes:
  tar c src | forkd exec ID -- tar x -C /work
From a terminal or /dev/null the process gets no stdin (use forkd shell for
interactive programs). Ctrl-C is passed to the process; a second Ctrl-C detaches.

Options:
  -b, --background    start it, print its pid and return; it keeps running
      --tag TAG       name the process (then: forkd attach/kill ID tag:TAG)
  -e, --env K=V       environment variable (repeatable; a bare K copies it from here)
  -w, --cwd DIR       working directory
  -u, --user USER     run as USER (default root)
      --timeout SEC   kill it (SIGKILL) after SEC seconds
      --grant G       a per-call grant, SECRET=HOST[:PORT][,HOST...]=HEADER (PORT 80
                      or 443; none: both), e.g.
                      'TOKEN=api.example.com=Authorization: Bearer {secret}':
                      the process's requests there carry the secret only while
                      this call runs (repeatable; stdin is not streamed then)
      --json          print {"pid", "tag"} with --background; otherwise collect
                      the output and print {"exitCode", "signal", "oomKilled",
                      "stdout", "stderr"}
`;

export interface ExecArgs {
  id: string;
  cmd: string[];
  spawn: SpawnOptions;
  background: boolean;
  timeoutMs: number | undefined;
  json: boolean;
  grants: GrantSpecInput[];
}

/** `SECRET=HOST[,HOST...]=HEADER`: split at the first two `=` (a header's value may hold more). */
export function parseGrantOption(v: string): GrantSpecInput {
  const i = v.indexOf('=');
  const j = i < 0 ? -1 : v.indexOf('=', i + 1);
  if (i <= 0 || j < 0) throw new UsageError(`--grant ${JSON.stringify(v)}: expected SECRET=HOST[:PORT][,HOST...]=HEADER`);
  const secret = v.slice(0, i);
  const hosts = v.slice(i + 1, j).split(',').map((h) => h.trim().toLowerCase());
  const header = v.slice(j + 1);
  if (!SECRET_NAME_PATTERN.test(secret)) throw new UsageError(`--grant: invalid secret name ${JSON.stringify(secret)}`);
  for (const h of hosts) {
    const err = grantHostError(h);
    if (err) throw new UsageError(`--grant: ${err}`);
  }
  const t = parseHeaderTemplate(header);
  if (typeof t === 'string') throw new UsageError(`--grant: ${t}`);
  return { secret, hosts, header };
}

export function parseExecArgs(argv: string[]): ExecArgs {
  const { before, after } = splitAtTerminator(argv);
  let parsed;
  try {
    parsed = parseOptions({
      args: before,
      allowPositionals: true,
      options: {
        background: { type: 'boolean', short: 'b' },
        tag: { type: 'string' },
        env: { type: 'string', short: 'e', multiple: true },
        cwd: { type: 'string', short: 'w' },
        user: { type: 'string', short: 'u' },
        timeout: { type: 'string' },
        grant: { type: 'string', multiple: true },
        json: { type: 'boolean' },
      },
    });
  } catch (err) {
    if (err instanceof UsageError && after === undefined) throw new UsageError(`${err.message} (put the command after '--': forkd exec ID -- CMD ARGS)`);
    throw err;
  }
  const { values, positionals } = parsed;
  const [id, ...rest] = positionals;
  if (!id) throw new UsageError('missing ID');
  if (after !== undefined && rest.length) throw new UsageError(`unexpected argument ${JSON.stringify(rest[0])} before '--'`);
  const cmd = after ?? rest;
  if (!cmd.length) throw new UsageError('missing CMD (forkd exec ID -- CMD [ARG...])');
  const spawn: SpawnOptions = {};
  const env = parseEnvPairs(values.env);
  if (env) spawn.env = env;
  if (values.cwd !== undefined) spawn.cwd = values.cwd;
  if (values.user !== undefined) spawn.user = values.user;
  if (values.tag !== undefined) spawn.tag = values.tag;
  const timeout = parsePositiveNumber('--timeout', values.timeout);
  if (timeout !== undefined && values.background) throw new UsageError('--timeout does not apply to --background');
  const grants = (values.grant ?? []).map(parseGrantOption);
  if (grants.length && values.background) throw new UsageError('--grant does not apply to --background (a per-call grant ends with its call)');
  return { id, cmd, spawn, background: !!values.background, timeoutMs: timeout === undefined ? undefined : Math.ceil(timeout * 1000), json: !!values.json, grants };
}

interface Outcome {
  pid: number;
  exit: ProcessExit;
  stdout?: string;
  stderr?: string;
}

const write = (stream: NodeJS.WriteStream) => (chunk: Uint8Array) => void stream.write(chunk);
const notifyDropped = (n: number) => void process.stderr.write(`forkd: ${n} bytes of output were dropped (reader too slow)\n`);
const notifyRewound = () => void process.stderr.write('forkd: the sandbox was rewound; the output goes on from that state\n');

function notifyWaiting(w: WaitingForApproval): void {
  const ctx = contextSummary(w.context);
  process.stderr.write(`forkd: waiting for approval ${w.approvalId} (rule ${w.rule}; until ${w.expiresAt}${ctx ? `; with ${ctx}` : ''}): forkd approve ${w.approvalId}\n`);
}

/** Nothing to stream (a terminal, /dev/null, per-call grants): one NDJSON exec request, no WebSocket; the process's stdin is empty. */
async function viaExecRoute(sb: Sandbox, args: ExecArgs): Promise<Outcome> {
  let pid = 0;
  const restore = forwardInterrupts((sig) => {
    if (pid) void sb.signal(pid, sig).catch(() => {});
  });
  try {
    const r = await sb.exec(args.cmd, {
      ...args.spawn,
      timeoutMs: args.timeoutMs,
      grants: args.grants,
      capture: args.json,
      onStarted: (p) => (pid = p.pid),
      onStdout: args.json ? undefined : write(process.stdout),
      onStderr: args.json ? undefined : write(process.stderr),
      onDropped: notifyDropped,
      onRewound: notifyRewound,
      onWaiting: notifyWaiting,
      onLimit: (l) => process.stderr.write(`forkd: process ended by policy limit ${l.limit} (rule ${l.rule})\n`),
    });
    const { stdout, stderr, ...exit } = r;
    return { pid: r.pid, exit, ...(args.json ? { stdout, stderr } : {}) };
  } finally {
    restore();
  }
}

/** Piped stdin: the WebSocket stream, stdin forwarded live and closed at its end. */
async function viaStream(sb: Sandbox, args: ExecArgs): Promise<Outcome> {
  requireWebSocket('forkd exec with piped stdin');
  const session = await sb.stream({ cmd: args.cmd, ...args.spawn, onWaiting: notifyWaiting });
  const out: Uint8Array[] = [];
  const err: Uint8Array[] = [];
  session.onStdout(args.json ? (c) => out.push(c) : write(process.stdout));
  session.onStderr(args.json ? (c) => err.push(c) : write(process.stderr));
  session.onDropped(notifyDropped);
  session.onRewound(notifyRewound);
  const restore = forwardInterrupts((sig) => trySignal(session, sig));
  // The stream route has no server-side timeout: enforce it from here.
  const timer = args.timeoutMs === undefined ? undefined : setTimeout(() => trySignal(session, 'SIGKILL'), args.timeoutMs);
  void (async () => {
    try {
      for await (const chunk of process.stdin) await session.write(chunk as Uint8Array);
      session.closeStdin();
    } catch {
      // the process exited or the stream closed: nothing left to feed
    }
  })();
  try {
    const exit = await session.exit;
    if (!exit) throw new ForkdError('UNAVAILABLE', `the stream closed before process ${session.pid} exited; it was detached and may still be running`);
    const decode = (chunks: Uint8Array[]) => new TextDecoder().decode(Buffer.concat(chunks));
    return { pid: session.pid, exit, ...(args.json ? { stdout: decode(out), stderr: decode(err) } : {}) };
  } finally {
    if (timer) clearTimeout(timer);
    restore();
    process.stdin.destroy();
  }
}

function trySignal(session: { signal(s: string): void }, sig: string): void {
  try {
    session.signal(sig);
  } catch {
    // already gone
  }
}

export const execCommand: CliCommand = {
  name: 'exec',
  usage: USAGE,
  async run(argv) {
    const args = parseExecArgs(argv);
    const sb = await openSandbox(args.id);
    if (args.background) {
      const r = await sb.spawnBackground(args.cmd, args.spawn);
      if (args.json) printJson(r);
      else process.stdout.write(`${r.pid}\n`);
      return 0;
    }
    // Per-call grants ride on the exec route (the stream route has none): stdin is not streamed then.
    const outcome = stdinKind() !== 'data' || args.grants.length ? await viaExecRoute(sb, args) : await viaStream(sb, args);
    if (args.json) {
      printJson({ pid: outcome.pid, ...outcome.exit, stdout: outcome.stdout, stderr: outcome.stderr });
      return outcome.exit.signal ? 128 + outcome.exit.signal : outcome.exit.exitCode;
    }
    return exitStatus(outcome.exit);
  },
};
