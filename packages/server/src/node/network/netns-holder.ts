import { readFileSync, statSync } from 'node:fs';
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError } from '@forkd/protocol';
import { exec, spawnDaemon, type ExecResult } from '../../shared/exec.js';

/** Beside the namespaces' files (no sandbox key starts with a dot): the holder's pid and its mount namespace's inode. */
const HOLDER_FILE = '.holder';
const START_MS = 5000;

/**
 * The mount namespace that holds the sandboxes' network namespaces (their
 * nsfs bind mounts): a private one of a long-lived holder process, not the
 * host's. Every tool that reads the whole mount table (runc, CRIU and
 * systemd read /proc/self/mountinfo per operation) would otherwise pay for
 * every sandbox on the host at each sandbox's start. The files the binds
 * cover stay in `dir` on the host; the namespaces are reached through the
 * holder's root (`/proc/<pid>/root/<dir>/<key>`), by any root process.
 *
 * The holder outlives the daemon (a restart finds it by pid and namespace
 * inode, which no other live process can share); a reboot ends it with the
 * namespaces. Its namespace starts as a copy of the host's, so binds a daemon
 * before it made there are carried over, and is the host's slave: the host's
 * later mounts and unmounts reach it (it pins no filesystem the host lets
 * go), its own binds never reach the host.
 */
export class NetnsHolder {
  readonly #dir: string;
  #pid = 0;
  #ino = 0;
  #starting: Promise<number> | undefined;

  constructor(dir: string) {
    this.#dir = resolve(dir);
  }

  /** Where `name` in the namespaces' directory is seen through the holder; without one, the host's file (no namespace there). */
  path(name: string): string {
    const pid = this.pid;
    return pid ? `/proc/${pid}/root${join(this.#dir, name)}` : join(this.#dir, name);
  }

  /**
   * The live holder's pid; 0: none (until `ensure`). Checked against its
   * namespace's inode at every use: a dead holder's pid taken by another
   * process (a sandbox's) must never lead a path into that process's root.
   */
  get pid(): number {
    return this.#pid && nsInode(this.#pid) === this.#ino ? this.#pid : this.#found();
  }

  /** Runs `file` in the holder's mount namespace (started if there is none): a bind or unmount there. */
  async run(file: string, args: readonly string[], opts: { allowFailure?: boolean } = {}): Promise<ExecResult> {
    return exec('nsenter', [`--mount=${await this.mountNs()}`, '--', file, ...args], opts);
  }

  /** The holder's mount namespace (started if there is none), for a tool that enters it itself. */
  async mountNs(): Promise<string> {
    return `/proc/${await this.ensure()}/ns/mnt`;
  }

  /** The holder's pid, started if none is alive. */
  ensure(): Promise<number> {
    this.#pid = this.pid;
    if (this.#pid) return Promise.resolve(this.#pid);
    this.#starting ??= this.#start().finally(() => (this.#starting = undefined));
    return this.#starting;
  }

  /** Ends the holder, and with it every namespace held only there (a test node's end; a daemon keeps its own). */
  async end(): Promise<void> {
    const pid = this.pid;
    this.#pid = 0;
    if (pid) process.kill(pid, 'SIGKILL');
    await rm(join(this.#dir, HOLDER_FILE), { force: true });
  }

  /** The holder a daemon before this one started, if it is still alive. */
  #found(): number {
    let text = '';
    try {
      text = readFileSync(join(this.#dir, HOLDER_FILE), 'utf8');
    } catch {
      return 0;
    }
    const [pid, ino] = text.trim().split(' ').map(Number);
    if (!pid || !ino || nsInode(pid) !== ino) return 0;
    this.#ino = ino;
    return pid;
  }

  async #start(): Promise<number> {
    await mkdir(this.#dir, { recursive: true });
    const own = nsInode('self');
    let exited = false;
    const pid = spawnDaemon('unshare', ['--mount', '--propagation', 'slave', 'sleep', 'infinity'], process.env, () => (exited = true));
    // Ready once it is in a mount namespace of its own (unshare's, before it execs sleep).
    for (const t0 = Date.now(); !exited && Date.now() - t0 < START_MS; await sleep(2)) {
      const ino = nsInode(pid);
      if (ino && ino !== own && (await stat(join(`/proc/${pid}/root`, this.#dir)).catch(() => undefined))) {
        await writeFile(join(this.#dir, HOLDER_FILE), `${pid} ${ino}\n`, { mode: 0o600 });
        this.#pid = pid;
        this.#ino = ino;
        return pid;
      }
    }
    if (!exited) process.kill(pid, 'SIGKILL');
    throw new ForkdError('INTERNAL', 'the network namespaces holder (unshare --mount) did not start', { cmd: 'unshare --mount --propagation slave sleep infinity' });
  }
}

function nsInode(pid: number | 'self'): number {
  try {
    return statSync(`/proc/${pid}/ns/mnt`).ino;
  } catch {
    return 0;
  }
}

/** Mount points under `dir` in its holder's namespace (none without a holder): what tests count against the sandboxes. */
export async function heldMounts(dir: string): Promise<string[]> {
  const abs = resolve(dir);
  const pid = new NetnsHolder(abs).pid;
  if (!pid) return [];
  const info = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => '');
  return info
    .split('\n')
    .map((l) => l.split(' ')[4] ?? '')
    .filter((t) => t.startsWith(`${abs}/`));
}
