import { ForkdError, type ProcessInfo } from '@forkd/protocol';
import type { ExecExit, OutputHandlers, ProcessSelector, ProcessStream } from '../../node-contract/index.js';
import type { EnvdCall, RpcService, StreamMethod } from './envd-call.js';
import { ProcessRequest, SendInputRequest, SendSignalRequest, StartRequest, UpdateRequest, parseMessage, type Selector } from './envd-messages.js';
import { resolvePath } from './envd-paths.js';
import { RpcError, rpcError } from './e2b-errors.js';
import type { RpcStream } from './rpc-stream.js';

/** envd's `process.Process` over the node contract's spawn/attach and process calls. */

const SIGNAL_NAMES: Record<number, string> = { 1: 'hangup', 2: 'interrupt', 3: 'quit', 6: 'aborted', 9: 'killed', 11: 'segmentation fault', 13: 'broken pipe', 15: 'terminated' };

/** The EndEvent the reference fills from Go's process state. */
export function endEvent(exit: ExecExit): Record<string, unknown> {
  if (exit.signal > 0 || exit.oomKilled) {
    const status = `signal: ${SIGNAL_NAMES[exit.signal || 9] ?? `signal ${exit.signal}`}`;
    return { exitCode: -1, exited: false, status, error: status };
  }
  const status = `exit status ${exit.exitCode}`;
  return { exitCode: exit.exitCode, exited: true, status, ...(exit.exitCode !== 0 ? { error: status } : {}) };
}

export function signalNumber(v: string | number): number {
  if (v === 'SIGNAL_SIGKILL' || v === 9) return 9;
  if (v === 'SIGNAL_SIGTERM' || v === 15) return 15;
  throw new RpcError('unimplemented', 'invalid signal');
}

function selector(s: Selector): ProcessSelector {
  return s.pid !== undefined ? { pid: s.pid } : { tag: s.tag! };
}

/** Processes E2B lists: every process started through the API that is still running. */
export function processInfo(p: ProcessInfo): Record<string, unknown> {
  return { config: { cmd: p.cmd[0] ?? '', args: p.cmd.slice(1), envs: {} }, pid: p.pid, ...(p.tag ? { tag: p.tag } : {}) };
}

/**
 * Output goes out as it comes; anything that arrived before the node told the
 * pid is held until the start event went first (the SDK requires it).
 */
async function runStream(call: EnvdCall, stream: RpcStream, pty: boolean, open: (h: OutputHandlers) => Promise<ProcessStream>, onStarted?: (p: ProcessStream) => void): Promise<void> {
  let started = false;
  const early: unknown[] = [];
  const emit = (kind: 'stdout' | 'stderr', d: Buffer) => {
    const m = { event: { data: { [pty ? 'pty' : kind]: d.toString('base64') } } };
    if (started) return stream.send(m);
    early.push(m);
    return undefined;
  };
  let ps: ProcessStream;
  try {
    ps = await open({ onStdout: (d) => emit('stdout', d), onStderr: (d) => emit('stderr', d) });
  } catch (err) {
    stream.end(rpcError(err, call.requestId));
    return;
  }
  const unregister = call.streams.add(call.id, () => stream.abort());
  void stream.send({ event: { start: { pid: ps.process.pid } } });
  for (const m of early) void stream.send(m);
  started = true;
  onStarted?.(ps);
  let exited = false;
  // A client that goes away leaves the process running (envd's semantics).
  stream.onClose(() => {
    unregister();
    if (!exited) ps.process.detach();
  });
  try {
    const exit = await ps.exit;
    exited = true;
    if (exit) await stream.send({ event: { end: endEvent(exit) } });
    stream.end();
  } catch (err) {
    exited = true;
    stream.end(rpcError(err, call.requestId));
  } finally {
    unregister();
  }
}

const start: StreamMethod = async (call, msg, stream, deadlineMs) => {
  const req = parseMessage(StartRequest, msg);
  const argv = [req.process.cmd, ...req.process.args];
  call.target = argv.join(' ').slice(0, 1000);
  let cwd: string;
  try {
    cwd = resolvePath(req.process.cwd ?? undefined, call.user);
    if (req.process.cwd) {
      const st = await call.view.stat(call.id, cwd).catch((err: unknown) => {
        if (err instanceof ForkdError && err.code === 'NOT_FOUND') return undefined;
        throw err;
      });
      if (!st || st.type !== 'dir') throw new RpcError('invalid_argument', `cwd '${cwd}' does not exist`);
    }
  } catch (err) {
    stream.end(rpcError(err, call.requestId));
    return;
  }
  const pty = req.pty ? { cols: req.pty.size?.cols || 80, rows: req.pty.size?.rows || 24 } : undefined;
  const opts = { argv, env: req.process.envs, cwd, user: call.user, ...(pty ? { pty } : { stdin: req.stdin ?? true }), ...(req.tag ? { tag: req.tag } : {}) };
  await runStream(call, stream, !!pty, (h) => call.view.spawn(call.id, opts, h), (ps) => {
    // The deadline is the process's (envd's semantics): at Connect-Timeout-Ms it is killed, connected or not.
    if (!deadlineMs) return;
    const t = setTimeout(() => void call.view.signal(call.id, { pid: ps.process.pid }, 9).catch(() => {}), deadlineMs);
    t.unref();
    void ps.exit.finally(() => clearTimeout(t)).catch(() => {});
  });
};

const connect: StreamMethod = async (call, msg, stream) => {
  const req = parseMessage(ProcessRequest, msg);
  const sel = selector(req.process);
  // PTY output is sent as `pty` data: ask the node which kind the process is first.
  let isPty = false;
  try {
    const p = (await call.view.listProcesses(call.id)).find((x) => ('pid' in sel ? x.pid === sel.pid : x.tag === sel.tag));
    if (!p) throw new RpcError('not_found', `process with ${'pid' in sel ? `pid ${sel.pid}` : `tag ${sel.tag}`} not found`);
    isPty = p.pty;
  } catch (err) {
    stream.end(rpcError(err, call.requestId));
    return;
  }
  await runStream(call, stream, isPty, (h) => call.view.attach(call.id, sel, h));
};

async function waitGone(call: EnvdCall, pid: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const p = (await call.view.listProcesses(call.id)).find((x) => x.pid === pid);
    if (!p || !p.running) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function notFound(err: unknown, sel: ProcessSelector): never {
  if (err instanceof ForkdError && err.code === 'NOT_FOUND') throw new RpcError('not_found', `process with ${'pid' in sel ? `pid ${sel.pid}` : `tag ${sel.tag}`} not found`);
  throw err;
}

export const processService: RpcService = {
  unary: {
    List: async (call) => ({ processes: (await call.view.listProcesses(call.id)).filter((p) => p.running).map(processInfo) }),
    SendInput: async (call, msg) => {
      const req = parseMessage(SendInputRequest, msg);
      const sel = selector(req.process);
      const data = Buffer.from(req.input.stdin ?? req.input.pty ?? '', 'base64');
      if (data.length) await call.view.writeStdin(call.id, sel, data, false).catch((e: unknown) => notFound(e, sel));
      return {};
    },
    SendSignal: async (call, msg) => {
      const req = parseMessage(SendSignalRequest, msg);
      const sel = selector(req.process);
      const sig = signalNumber(req.signal);
      await call.view.signal(call.id, sel, sig).catch((e: unknown) => notFound(e, sel));
      // The SDK's callers check right after that the process is gone (kill -0 fails).
      if (sig === 9 && 'pid' in sel) await waitGone(call, sel.pid);
      return {};
    },
    CloseStdin: async (call, msg) => {
      const sel = selector(parseMessage(ProcessRequest, msg).process);
      await call.view.writeStdin(call.id, sel, undefined, true).catch((e: unknown) => notFound(e, sel));
      return {};
    },
    Update: async (call, msg) => {
      const req = parseMessage(UpdateRequest, msg);
      const sel = selector(req.process);
      const size = req.pty?.size;
      if (!size) return {};
      const ps = await call.view.attach(call.id, sel).catch((e: unknown) => notFound(e, sel));
      try {
        if (!ps.process.pty) throw new RpcError('invalid_argument', 'the process has no terminal');
        ps.process.resize(size.cols || 80, size.rows || 24);
      } finally {
        ps.process.detach();
      }
      return {};
    },
  },
  streams: {
    Start: { method: start, keepalive: { event: { keepalive: {} } } },
    Connect: { method: connect, keepalive: { event: { keepalive: {} } } },
  },
};
