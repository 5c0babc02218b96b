import type { ExecEvent } from '@forkd/protocol';
import { fromBase64 } from './base64.js';
import type { PolicyLimitHit, ProcessExit, StartedProcess, WaitingForApproval } from './types.js';
import { wireError } from './wire-error.js';

export interface ProcessEventHandlers {
  onStarted?: ((p: StartedProcess) => void) | undefined;
  onStdout?: ((chunk: Uint8Array) => void) | undefined;
  onStderr?: ((chunk: Uint8Array) => void) | undefined;
  onDropped?: ((bytes: number) => void) | undefined;
  onRewound?: (() => void) | undefined;
  onWaiting?: ((w: WaitingForApproval) => void) | undefined;
  onLimit?: ((l: PolicyLimitHit) => void) | undefined;
  /** The `started` event's resume point fields, and `position` events (see StreamPosition). */
  onStartedAt?: ((e: { token?: unknown; offset?: unknown }) => void) | undefined;
  onPosition?: ((offset: number) => void) | undefined;
}

/**
 * Dispatches exec/attach events until the process exits. Resolves null when
 * the stream ends without `exit`: the process was detached and keeps running.
 * Unknown event types are ignored so newer servers stay compatible.
 */
export async function consumeProcessEvents(events: AsyncIterable<unknown>, h: ProcessEventHandlers): Promise<ProcessExit | null> {
  for await (const raw of events) {
    const e = raw as ExecEvent;
    switch (e?.type) {
      case 'started':
        h.onStartedAt?.(e);
        h.onStarted?.({ pid: e.pid, tag: e.tag, pty: e.pty });
        break;
      case 'position':
        h.onPosition?.(e.offset);
        break;
      case 'stdout':
        h.onStdout?.(fromBase64(e.data));
        break;
      case 'stderr':
        h.onStderr?.(fromBase64(e.data));
        break;
      case 'dropped':
        h.onDropped?.(e.bytes);
        break;
      case 'rewound':
        h.onRewound?.();
        break;
      case 'waiting':
        h.onWaiting?.({ approvalId: e.approvalId, rule: e.rule, expiresAt: e.expiresAt, ...(e.context ? { context: e.context } : {}) });
        break;
      case 'limit':
        h.onLimit?.({ limit: e.limit, rule: e.rule });
        break;
      case 'exit':
        return { exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled };
      case 'error':
        throw wireError(e.error);
    }
  }
  return null;
}
