import assert from 'node:assert/strict';
import type { ProcessExit, Sandbox } from '@forkd/sdk';
import { waitFor } from './helpers.js';

/** A shell loop printing 1, 2, 3… every 50 ms until `/tmp/stop-TAG` exists, then exiting with `code`. */
export function counterCommand(tag: string, code: number): string[] {
  return ['sh', '-c', `i=0; while [ ! -e /tmp/stop-${tag} ]; do i=$((i+1)); echo $i; sleep 0.05; done; exit ${code}`];
}

/** One attached counter: what it printed, and its exit (or the stream's failure). */
export interface AttachedCounter {
  kind: 'exec' | 'stream' | 'pty' | 'burst';
  tag: string;
  code: number;
  pid: () => number;
  text: () => string;
  dropped: number[];
  exit: Promise<ProcessExit | ExecLike | null>;
}

type ExecLike = { exitCode: number; signal: number };

/**
 * A counter attached each way a client follows a process: the NDJSON exec
 * (`sandbox.exec`), the WebSocket stream with live stdin, and a terminal.
 * They go on printing while the daemon is down; their streams must resume.
 */
export async function attachCounters(sb: Sandbox): Promise<AttachedCounter[]> {
  const decoder = () => {
    let s = '';
    return { push: (c: Uint8Array) => void (s += Buffer.from(c).toString()), text: () => s };
  };
  const exec = decoder();
  let execPid = 0;
  const dropped: number[][] = [[], [], []];
  const execExit = sb.exec(counterCommand('exec', 7), { capture: false, onStdout: exec.push, onStarted: (p) => (execPid = p.pid), onDropped: (n) => dropped[0]!.push(n) });
  execExit.catch(() => {});
  const stream = await sb.stream({ cmd: counterCommand('stream', 3) });
  const streamOut = decoder();
  stream.onStdout(streamOut.push);
  stream.onDropped((n) => dropped[1]!.push(n));
  const pty = await sb.pty({ cols: 80, rows: 24, cmd: counterCommand('pty', 5) });
  const ptyOut = decoder();
  pty.onData(ptyOut.push);
  pty.onDropped((n) => dropped[2]!.push(n));
  const counters: AttachedCounter[] = [
    { kind: 'exec', tag: 'exec', code: 7, pid: () => execPid, text: exec.text, dropped: dropped[0]!, exit: execExit },
    { kind: 'stream', tag: 'stream', code: 3, pid: () => stream.pid, text: streamOut.text, dropped: dropped[1]!, exit: stream.exit },
    { kind: 'pty', tag: 'pty', code: 5, pid: () => pty.pid, text: ptyOut.text, dropped: dropped[2]!, exit: pty.exit },
  ];
  for (const c of counters) await waitFor(() => lines(c).length >= 5, 20_000, `${c.kind} counter printing`);
  return counters;
}

/**
 * A counter printing ~800 KiB/s (8 KiB lines, 100 a second) through the
 * NDJSON exec: a few seconds of a stopped daemon are more than the guest's
 * 1 MiB ring, so its output must be held for the resumed stream, not dropped.
 */
export function attachBurst(sb: Sandbox): AttachedCounter {
  let text = '';
  const dropped: number[] = [];
  let pid = 0;
  const cmd = ['sh', '-c', 'i=0; while [ ! -e /tmp/stop-burst ]; do i=$((i+1)); printf "%s %08190d\\n" $i 0; sleep 0.01; done; exit 6'];
  const exit = sb.exec(cmd, { capture: false, onStarted: (p) => (pid = p.pid), onStdout: (c) => void (text += Buffer.from(c).toString()), onDropped: (n) => dropped.push(n) });
  exit.catch(() => {});
  return { kind: 'burst', tag: 'burst', code: 6, pid: () => pid, text: () => text, dropped, exit };
}

/** The numbers a counter printed (a terminal ends its lines with \r\n). */
export function lines(c: AttachedCounter): number[] {
  return c
    .text()
    .split(/\r?\n/)
    .filter((l) => l !== '')
    .map((l) => parseInt(l, 10));
}

/** The start time of each process (field 22 of /proc/PID/stat): the same pid and start time is the same process, not a restored one. */
export async function startTimes(sb: Sandbox, pids: number[]): Promise<string[]> {
  const r = await sb.exec(['sh', '-c', pids.map((p) => `cut -d' ' -f22 /proc/${p}/stat || echo gone`).join('; ')]);
  if (r.stdout.includes('gone')) assert.fail(`processes ${pids.join(' ')}: ${r.stdout} ${r.stderr}; running: ${JSON.stringify(await sb.processes())}`);
  return r.stdout.trim().split('\n');
}

/**
 * Lets the counters print past `seen` lines more, stops them and checks each
 * stream ended with its process's exit code and printed 1..N once each, in
 * order: nothing lost, nothing repeated across the daemon's stop and start.
 */
export async function finishCounters(sb: Sandbox, counters: AttachedCounter[], more = 10, context = ''): Promise<void> {
  const target = counters.map((c) => lines(c).length + more);
  for (const [i, c] of counters.entries()) await waitFor(() => lines(c).length >= target[i]!, 30_000, `${c.kind} counter resumed`);
  await sb.exec(['touch', ...counters.map((c) => `/tmp/stop-${c.tag}`)]);
  for (const c of counters) {
    const exit = await c.exit;
    assert.ok(exit, `${c.kind}: an exit, not a detach`);
    assert.equal(exit.exitCode, c.code, `${c.kind}'s exit code`);
    const got = lines(c);
    // The context (how long the daemon was away) tells a drop by a slow restart (the guest holds output 30 s) from one at the stop.
    assert.deepEqual(c.dropped, [], `${c.kind}: nothing dropped${context ? ` (${context})` : ''}`);
    assert.deepEqual(got, got.map((_, i) => i + 1), `${c.kind}: every number once, in order`);
  }
}
