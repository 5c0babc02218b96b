import { ForkdError, isErrorCode } from '../vendor/errors.js';

/** The stream byte that prefixes a binary frame from the server (server/.../stream-socket.ts). */
export const STDOUT = 1;
export const STDERR = 2;

/** A message from the server on a stream socket, decoded; anything unknown or malformed is `ignored`. */
export type ServerMessage =
  | { type: 'data'; stream: number; bytes: Uint8Array }
  /** `token` and `offset`: where the stream can resume from (absent: it cannot; see StreamPosition). */
  | { type: 'started'; pid: number; pty: boolean; token?: number; offset?: number }
  | { type: 'position'; offset: number }
  | { type: 'exit'; exitCode: number; signal: number; oomKilled: boolean }
  | { type: 'rewound' }
  | { type: 'dropped'; bytes: number }
  | { type: 'error'; error: ForkdError }
  /** Held under per-call policy until approved (before `started`). */
  | { type: 'waiting'; approvalId: string; rule: string }
  /** Ended by a per-call limit. */
  | { type: 'limit'; limit: string; rule: string }
  | { type: 'ignored' };

const IGNORED: ServerMessage = { type: 'ignored' };

function str(v: unknown): string {
  return typeof v === 'string' ? v.slice(0, 500) : '';
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function errorOf(e: unknown): ForkdError {
  const o = (typeof e === 'object' && e !== null ? e : {}) as { code?: unknown; message?: unknown; requestId?: unknown };
  const code = isErrorCode(o.code) ? o.code : 'INTERNAL';
  return new ForkdError(code, typeof o.message === 'string' ? o.message : 'stream error', undefined, typeof o.requestId === 'string' ? { requestId: o.requestId } : undefined);
}

/** Decodes one WebSocket message (text: JSON control; binary: a stream byte then data). Never throws. */
export function parseServerMessage(data: unknown): ServerMessage {
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) {
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.byteLength === 0) return IGNORED;
    return { type: 'data', stream: bytes[0]!, bytes: bytes.subarray(1) };
  }
  if (typeof data !== 'string') return IGNORED;
  let m: unknown;
  try {
    m = JSON.parse(data);
  } catch {
    return IGNORED;
  }
  if (typeof m !== 'object' || m === null) return IGNORED;
  const msg = m as Record<string, unknown>;
  switch (msg.type) {
    case 'started': {
      const resumable = typeof msg.token === 'number' && typeof msg.offset === 'number';
      return { type: 'started', pid: num(msg.pid), pty: msg.pty === true, ...(resumable ? { token: num(msg.token), offset: num(msg.offset) } : {}) };
    }
    case 'position':
      return { type: 'position', offset: num(msg.offset) };
    case 'exit':
      return { type: 'exit', exitCode: num(msg.exitCode), signal: num(msg.signal), oomKilled: msg.oomKilled === true };
    case 'rewound':
      return { type: 'rewound' };
    case 'dropped':
      return { type: 'dropped', bytes: num(msg.bytes) };
    case 'error':
      return { type: 'error', error: errorOf(msg.error) };
    case 'waiting':
      return { type: 'waiting', approvalId: str(msg.approvalId), rule: str(msg.rule) };
    case 'limit':
      return { type: 'limit', limit: str(msg.limit), rule: str(msg.rule) };
    default:
      return IGNORED;
  }
}
