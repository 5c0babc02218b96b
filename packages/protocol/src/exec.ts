import { z } from 'zod';
import { GrantSpec } from './secrets.js';
import { TAG_PATTERN } from './ids.js';
import { ExecContext } from './policy.js';

const EnvMap = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'invalid env var name').max(256), z.string().max(65536));
const NoNul = z.string().max(65536).refine((s) => !s.includes('\0'), 'must not contain NUL bytes');

/**
 * A process to start: either `cmd` (argv, run as is) or `command` (a string run
 * by `bash -lc`). Exactly one of them.
 */
export const SpawnRequest = z
  .strictObject({
    cmd: z.array(NoNul).min(1).max(4096).optional(),
    command: NoNul.optional(),
    env: EnvMap.optional(),
    cwd: NoNul.optional(),
    user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, 'invalid user name').optional(),
    tag: z.string().regex(TAG_PATTERN, 'invalid tag').optional(),
    pty: z.boolean().optional(),
    cols: z.number().int().min(1).max(1000).optional(),
    rows: z.number().int().min(1).max(1000).optional(),
    /** Keep stdin open as a pipe (otherwise it is /dev/null). */
    stdin: z.boolean().optional(),
  })
  .refine((r) => (r.cmd === undefined) !== (r.command === undefined), 'give exactly one of cmd or command');
export type SpawnRequest = z.infer<typeof SpawnRequest>;

/** What an exec adds to a spawn (its own object so other surfaces, e.g. MCP tools, reuse the fields). */
export const ExecExtras = z.object({
  /** Start and return at once; the process keeps running and can be re-attached. */
  background: z.boolean().optional(),
  /** Bytes (base64) written to stdin, then stdin is closed. */
  stdinData: z.string().max(16 * 1024 * 1024).optional(),
  timeoutMs: z.number().int().min(1).max(7 * 24 * 3600 * 1000).optional(),
});

export const ExecRequest = z.intersection(
  SpawnRequest,
  ExecExtras.extend({
    /** Per-call grants: they exist only while this call runs (removed when it returns or its stream ends). */
    grants: z.array(GrantSpec).max(16).optional(),
  }),
);
export type ExecRequest = z.infer<typeof ExecRequest>;

/**
 * Where a process stream is, to resume it after its connection went (a
 * daemon restart): the process's spawn `token` (48 bits, so a pid reused by
 * another process is refused) and the ring `offset` received up to. A
 * stream's position is the `offset` of its `started` event (or of the last
 * `position` event), plus 5 + the byte length of each stdout/stderr event
 * after it (the guest's ring counts each output frame's 5 header bytes).
 */
export const ResumePoint = z.strictObject({
  token: z.number().int().min(0).max(2 ** 48 - 1),
  offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
});
export type ResumePoint = z.infer<typeof ResumePoint>;

/** An attach over the node contract (control plane to node): resuming, or not. */
export const NodeAttachRequest = z.strictObject({ resume: ResumePoint.optional() });

/** The query of a re-attach that resumes (`GET .../processes/{sel}/output?token=&offset=`): both or neither (see resumeOf). */
export const AttachQuery = z.strictObject({
  token: z.coerce.number().int().min(0).max(2 ** 48 - 1).optional(),
  offset: z.coerce.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
});

/** The resume point an attach query names, or undefined for a plain attach; one without the other is refused. */
export function resumeOf(q: z.infer<typeof AttachQuery>): ResumePoint | undefined | null {
  if (q.token === undefined && q.offset === undefined) return undefined;
  if (q.token === undefined || q.offset === undefined) return null;
  return { token: q.token, offset: q.offset };
}

/** One line of an NDJSON exec/attach stream. Output is base64 so any bytes survive. */
export const ExecEvent = z.union([
  /** `token` and `offset` (a resumable stream): see ResumePoint. */
  z.object({ type: z.literal('started'), pid: z.number(), tag: z.string().optional(), pty: z.boolean(), token: z.number().optional(), offset: z.number().optional() }),
  z.object({ type: z.enum(['stdout', 'stderr']), data: z.string() }),
  /** The stream's position moved other than by its output (a re-attach after output was dropped, a rewind): see ResumePoint. */
  z.object({ type: z.literal('position'), offset: z.number() }),
  z.object({ type: z.literal('dropped'), bytes: z.number() }),
  /** The sandbox was rewound under the stream; its process exists in that state and the stream goes on. */
  z.object({ type: z.literal('rewound') }),
  z.object({ type: z.literal('exit'), exitCode: z.number(), signal: z.number(), oomKilled: z.boolean() }),
  z.object({ type: z.literal('error'), error: z.object({ code: z.string(), message: z.string() }) }),
  /** The call waits for an approver (policy `requireApproval`): it runs on approval, or ends with PERMISSION_DENIED. */
  z.object({ type: z.literal('waiting'), approvalId: z.string(), rule: z.string(), expiresAt: z.string(), context: ExecContext.optional() }),
  /** A policy limit ended the process: its output was cut (`maxOutputBytes`) or it ran too long (`maxDurationSeconds`). */
  z.object({ type: z.literal('limit'), limit: z.enum(['maxOutputBytes', 'maxDurationSeconds']), rule: z.string() }),
]);
export type ExecEvent = z.infer<typeof ExecEvent>;

export interface ExecResult {
  exitCode: number;
  signal: number;
  oomKilled: boolean;
  stdout: string;
  stderr: string;
}

export const ProcessInfo = z.object({
  pid: z.number(),
  tag: z.string().optional(),
  cmd: z.array(z.string()),
  pty: z.boolean(),
  running: z.boolean(),
  exitCode: z.number().optional(),
  signal: z.number().optional(),
});
export type ProcessInfo = z.infer<typeof ProcessInfo>;

export const SignalRequest = z.strictObject({
  signal: z.union([z.number().int().min(1).max(64), z.enum(['SIGTERM', 'SIGKILL', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGSTOP', 'SIGCONT'])]).default('SIGTERM'),
});

export const StdinRequest = z.strictObject({
  data: z.string().max(16 * 1024 * 1024).optional(),
  eof: z.boolean().optional(),
});

/** Process selector in URLs: a pid, or `tag:<tag>`. */
export function parseProcessSelector(s: string): { pid: number } | { tag: string } | null {
  if (/^[1-9][0-9]{0,9}$/.test(s)) return { pid: Number(s) };
  if (s.startsWith('tag:') && TAG_PATTERN.test(s.slice(4))) return { tag: s.slice(4) };
  return null;
}
