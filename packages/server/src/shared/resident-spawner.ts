import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './config.js';
import { cannotRun, setResidentExec, spawnHere, spawnIpc, type ExecOptions, type ExecOutcome, type IpcChild, type ResidentExec } from './exec.js';

export const SPAWN_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-spawn');

/** Inputs past this go through Node's own spawn (a request is one line of hex). */
const MAX_INPUT = 1024 * 1024;

interface Pending {
  file: string;
  args: readonly string[];
  opts: ExecOptions;
  resolve(o: ExecOutcome): void;
  reject(err: unknown): void;
  timer?: NodeJS.Timeout;
  timedOut: boolean;
}

type Answer = { id?: unknown; pid?: unknown; errno?: unknown; busy?: unknown; code?: unknown; signal?: unknown; out?: unknown; err?: unknown };

const hex = (s: string | Buffer) => (s.length ? Buffer.from(s).toString('hex') : '-');
const strings = (xs: readonly string[]) => hex(xs.map((x) => `${x}\0`).join(''));
const errnoName = (n: number) => Object.entries(constants.errno).find(([, v]) => v === n)?.[0] ?? `errno ${n}`;

/**
 * The request for `opts.stdio`: `s` for what exec does without it (stdout and stderr
 * collected; stdin the input or /dev/null), `q` for all three ignored (runc starting a
 * detached container, whose init inherits them), `d` for that in a session of its own
 * (`opts.detached`: a helper daemon); anything else Node spawns.
 */
function stdioMode(opts: ExecOptions): 's' | 'q' | 'd' | undefined {
  const io = opts.stdio;
  const quiet = Array.isArray(io) && io.length === 3 && io.every((x) => x === 'ignore') && opts.input === undefined;
  if (opts.detached) return quiet ? 'd' : undefined;
  if (io === undefined) return 's';
  if (!Array.isArray(io) || io.length !== 3 || io[0] !== 'ignore' || opts.input !== undefined) return undefined;
  if (io[1] === 'pipe' && io[2] === 'pipe') return 's';
  return quiet ? 'q' : undefined;
}

/**
 * exec() without a fork of the daemon: one resident forkd-spawn (host-tools),
 * a small process, forks and runs each tool, collects its output and says how
 * it ended over Node's IPC channel. Node's spawn forks the whole daemon, whose
 * page tables make that 5-20 ms with the event loop stopped; a lifecycle
 * operation runs ten tools, runc among them. What it cannot take (streamed output, other
 * stdio, a large input, a full table, a channel already closed) Node spawns
 * as before; what it was given when it died fails, never run twice. The helper starts at the first exec and again after it ends; its
 * channel holds the daemon's event loop only while a tool runs.
 */
export class ResidentSpawner implements ResidentExec {
  readonly #file: string;
  #child: IpcChild | undefined;
  readonly #pending = new Map<number, Pending>();
  #next = 0;

  constructor(file = SPAWN_TOOL) {
    this.#file = file;
  }

  /** The helper's pid; 0 while none runs. */
  get pid(): number {
    return this.#child?.pid ?? 0;
  }

  run(file: string, args: readonly string[], opts: ExecOptions): Promise<ExecOutcome> | undefined {
    const mode = stdioMode(opts);
    if (!mode || opts.onStdout || opts.onStderr) return undefined;
    if (opts.input !== undefined && opts.input.length > MAX_INPUT) return undefined;
    const child = this.#helper();
    const id = this.#next++;
    const env = Object.entries(opts.env ?? process.env).flatMap(([k, v]) => (v === undefined ? [] : [`${k}=${v}`]));
    const line = [mode, id, opts.umask === undefined ? -1 : opts.umask & 0o777, hex(opts.cwd ?? ''), strings([file, ...args]), strings(env), hex(opts.input ?? '')].join(' ');
    return new Promise<ExecOutcome>((resolve, reject) => {
      const p: Pending = { file, args, opts, resolve, reject, timedOut: false };
      this.#pending.set(id, p);
      child.ref(true);
      if (!child.send(line)) return this.#fallBack(id);
      if (mode === 'd') opts.onHeld?.(() => void child.send(`r ${id}`));
      if (opts.timeoutMs) {
        p.timer = setTimeout(() => {
          p.timedOut = true;
          child.send(`k ${id} 9`);
        }, opts.timeoutMs);
      }
    });
  }

  close(): void {
    this.#child?.kill();
    this.#child = undefined;
  }

  #helper(): IpcChild {
    if (this.#child) return this.#child;
    const child = spawnIpc(this.#file, []);
    this.#child = child;
    child.onMessage((m) => this.#message(m as Answer));
    void child.exit.then(() => {
      if (this.#child === child) this.#child = undefined;
      // Whether it had started each tool is not known here (it may have run one and died before saying so):
      // none is run again, which could do it twice.
      for (const [id, p] of [...this.#pending]) {
        this.#settle(id);
        p.reject(cannotRun(p.file, p.args, 'forkd-spawn ended while it ran'));
      }
    });
    return child;
  }

  #message(m: Answer): void {
    const id = typeof m.id === 'number' ? m.id : -1;
    const p = this.#pending.get(id);
    if (!p) return;
    if (typeof m.pid === 'number') return void p.opts.onSpawn?.(m.pid);
    if (m.busy === true) return this.#fallBack(id);
    this.#settle(id);
    if (typeof m.errno === 'number') return p.reject(cannotRun(p.file, p.args, `spawn ${p.file} ${errnoName(m.errno)}`));
    const text = (v: unknown) => (typeof v === 'string' ? Buffer.from(v, 'hex').toString('utf8') : '');
    const code = typeof m.code === 'number' && m.code >= 0 ? m.code : null;
    p.resolve({ code, signal: code === null, stdout: text(m.out), stderr: text(m.err), timedOut: p.timedOut });
  }

  #settle(id: number): void {
    const p = this.#pending.get(id);
    if (p?.timer) clearTimeout(p.timer);
    this.#pending.delete(id);
    if (this.#pending.size === 0) this.#child?.ref(false);
  }

  /** Not taken (a full table, or a channel already closed): Node spawns it. */
  #fallBack(id: number): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#settle(id);
    spawnHere(p.file, p.args, p.opts).then(p.resolve, p.reject);
  }
}

let shared: ResidentSpawner | undefined;

/**
 * The daemon's exec() from now on: through one resident spawner (on), or
 * Node's own spawn (off, or no forkd-spawn built). One per process.
 */
export function useResidentSpawner(on: boolean): void {
  if (on && !shared && existsSync(SPAWN_TOOL)) shared = new ResidentSpawner();
  setResidentExec(on ? shared : undefined);
}
