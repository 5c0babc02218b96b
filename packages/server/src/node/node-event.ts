import type { ErrorCode } from '@forkd/protocol';

/**
 * Something that happened to a sandbox without an API call asking for it
 * (its processes were lost, it was brought back). The node reports it; the
 * control plane files it in the sandbox's event log (the audit log), where
 * `forkd logs` shows it beside the calls.
 */
export interface NodeEvent {
  at: string;
  sandboxId: string;
  /**
   * `lost` or `recover`; `snapshot-skipped`: a timeline snapshot the pool had no room for;
   * `snapshot-lost`: the state a rewind left could not be dumped after the rewind answered;
   * `secret.use`: a grant's header added to a request (never the value).
   */
  operation: 'lost' | 'recover' | 'snapshot-skipped' | 'snapshot-lost' | 'secret.use';
  /** What happened, for people (the snapshot used, the time lost, or why it failed). */
  detail: string;
  code: 'OK' | ErrorCode;
  durationMs: number;
}

export type NodeEventSink = (e: NodeEvent) => void;
