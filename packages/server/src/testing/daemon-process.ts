import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';

export const CLI = join(REPO_ROOT, 'packages/cli/dist/main.js');
export const NODE_FLAGS = ['--experimental-websocket', '--no-warnings'];

export interface DaemonProcess {
  child: ChildProcess;
  url: string;
  /** The admin key `forkd serve` made in its state dir. */
  apiKey: string;
  log(): string;
}

/** Starts a real `forkd serve` on a random port and resolves once it listens. */
export function startDaemonProcess(env: NodeJS.ProcessEnv): Promise<DaemonProcess> {
  const child = spawn(process.execPath, [...NODE_FLAGS, CLI, 'serve'], {
    // Below Linux's ephemeral range (32768+): an outgoing connection's local port there made a CI run's listen fail.
    env: { ...env, FORKD_PORT: String(20000 + Math.floor(Math.random() * 12000)) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      log += d.toString();
      const m = /"msg":"listening","url":"([^"]+)"/.exec(log);
      if (m) resolve({ child, url: m[1]!, apiKey: readFileSync(join(env.FORKD_STATE_DIR ?? '/var/lib/forkd', 'admin.key'), 'utf8').trim(), log: () => log });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`daemon exited (${code}):\n${log}`)));
  });
}

export async function stopDaemonProcess(d: DaemonProcess | undefined, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return;
  const exited = new Promise((r) => d.child.once('exit', r));
  d.child.kill(signal);
  await exited;
}
