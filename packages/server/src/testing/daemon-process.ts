import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';
import { sweepStaleTestDirs } from './test-node.js';

export const CLI = join(REPO_ROOT, 'packages/cli/dist/main.js');
export const NODE_FLAGS = ['--experimental-websocket', '--no-warnings'];

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs the real `forkd` CLI binary at `url` with `env` (no key of the
 * caller's own environment: FORKD_API_KEY is cleared unless `env` sets it
 * after). `stdin`: bytes piped and closed, or `devnull` for none at all.
 * `onStdout` sees its output as it comes.
 */
export function runCli(url: string, env: NodeJS.ProcessEnv, args: string[], stdin: string | Buffer | 'devnull' = 'devnull', onStdout?: (text: string) => void): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { ...process.env, FORKD_API_KEY: '', ...env, FORKD_URL: url }, stdio: [stdin === 'devnull' ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (d: Buffer) => {
      out.push(d);
      onStdout?.(Buffer.concat(out).toString());
    });
    child.stderr!.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() }));
    if (stdin !== 'devnull') child.stdin!.end(stdin);
  });
}

export interface DaemonProcess {
  child: ChildProcess;
  url: string;
  /** The admin key `forkd serve` made in its state dir. */
  apiKey: string;
  log(): string;
}

export interface NodeProcess {
  child: ChildProcess;
  url: string;
  /** The node token it answers: FORKD_NODE_TOKEN_FILE's, by default the one it made in its state dir. */
  token: string;
  log(): string;
}

/** A random port below Linux's ephemeral range (32768+): an outgoing connection's local port there made a CI run's listen fail. */
export function randomPort(): number {
  return 20000 + Math.floor(Math.random() * 12000);
}

/** Where a daemon runs from and listens: another build's CLI (an upgrade test's older commit), a port of its own (a restart on the same URL). */
export interface ServeOptions {
  cli?: string;
  port?: number;
}

/** Runs `forkd serve ARGS` on a random port; resolves with its URL and log once it listens. */
function startServe(env: NodeJS.ProcessEnv, args: string[], wrap: string[] = [], o: ServeOptions = {}): Promise<{ child: ChildProcess; url: string; log(): string }> {
  const argv = [...wrap, process.execPath, ...NODE_FLAGS, o.cli ?? CLI, 'serve', ...args];
  const child = spawn(argv[0]!, argv.slice(1), {
    env: { ...env, FORKD_PORT: String(o.port ?? randomPort()) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      log += d.toString();
      const m = /"msg":"listening","url":"([^"]+)"/.exec(log);
      if (m) resolve({ child, url: m[1]!, log: () => log });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`daemon exited (${code}):\n${log}`)));
  });
}

const stateDir = (env: NodeJS.ProcessEnv) => env.FORKD_STATE_DIR ?? '/var/lib/forkd';

/** Starts a real `forkd serve` on a random port and resolves once it listens. */
export async function startDaemonProcess(env: NodeJS.ProcessEnv, o: ServeOptions = {}): Promise<DaemonProcess> {
  await sweepStaleTestDirs();
  const d = await startServe(env, [], [], o);
  return { ...d, apiKey: readFileSync(join(stateDir(env), 'admin.key'), 'utf8').trim() };
}

/** Starts a real `forkd serve --role node` (the node contract over HTTP) on a random port; `wrap` runs it inside something (a network namespace: `nsenter --net=…`). */
export async function startNodeProcess(env: NodeJS.ProcessEnv, wrap: string[] = []): Promise<NodeProcess> {
  await sweepStaleTestDirs();
  const d = await startServe(env, ['--role', 'node'], wrap);
  return { ...d, token: readFileSync(env.FORKD_NODE_TOKEN_FILE || join(stateDir(env), 'node.token'), 'utf8').trim() };
}

/** Starts a real `forkd serve --role control-plane` (with FORKD_NODE_URL: over that node; without: over a fleet). */
export async function startControlPlaneProcess(env: NodeJS.ProcessEnv): Promise<DaemonProcess> {
  const d = await startServe(env, ['--role', 'control-plane']);
  return { ...d, apiKey: readFileSync(join(stateDir(env), 'admin.key'), 'utf8').trim() };
}

export async function stopDaemonProcess(d: { child: ChildProcess } | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return;
  const exited = new Promise((r) => d.child.once('exit', r));
  d.child.kill(signal);
  await exited;
}
