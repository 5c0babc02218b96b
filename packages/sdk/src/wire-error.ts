import { ForkdError, isErrorCode } from '@forkd/protocol/errors';

/** The `{code, message, details?, requestId?}` carried inside stream events (NDJSON `error` lines, WebSocket `error` messages). */
export function wireError(e: { code?: unknown; message?: unknown; details?: unknown; requestId?: unknown } | undefined): ForkdError {
  const code = isErrorCode(e?.code) ? e.code : 'INTERNAL';
  const details = typeof e?.details === 'object' && e.details !== null && !Array.isArray(e.details) ? (e.details as Record<string, unknown>) : undefined;
  return new ForkdError(code, typeof e?.message === 'string' ? e.message : 'stream error', details, typeof e?.requestId === 'string' ? { requestId: e.requestId } : undefined);
}

/** Failures while reading an already answered body: an abort is the caller's doing, anything else a lost connection. */
export function streamReadError(err: unknown): ForkdError {
  if (err instanceof ForkdError) return err;
  if ((err as { name?: string } | null)?.name === 'AbortError') return new ForkdError('CANCELLED', 'request aborted', undefined, { cause: err });
  return new ForkdError('UNAVAILABLE', `connection to forkd lost: ${describeCause(err)}`, undefined, { cause: err });
}

export function describeCause(err: unknown): string {
  const e = err as { message?: string; cause?: { code?: string; message?: string } } | null;
  const cause = e?.cause?.code ?? e?.cause?.message;
  return [e?.message ?? String(err), cause].filter(Boolean).join(': ');
}
