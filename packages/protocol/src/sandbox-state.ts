/**
 * Sandbox lifecycle. The table is the only place that says which transitions
 * exist; the manager refuses any other with CONFLICT.
 */
export const SANDBOX_STATES = ['creating', 'running', 'paused', 'stopping', 'failed'] as const;
export type SandboxState = (typeof SANDBOX_STATES)[number];

export const SANDBOX_TRANSITIONS: Readonly<Record<SandboxState, readonly SandboxState[]>> = {
  creating: ['running', 'failed', 'stopping'],
  running: ['paused', 'stopping', 'failed'],
  /** Memory and processes on disk (CRIU images); no CPU or RAM used. */
  paused: ['running', 'stopping', 'failed'],
  /** A stopped sandbox's record is deleted, not moved to another state. */
  stopping: ['failed'],
  /**
   * A sandbox failed because its processes were lost (host reboot, crash,
   * its init killed) comes back from its latest snapshot or cold from its
   * files (`SandboxInfo.recovered`); any other failure only allows a delete.
   */
  failed: ['running', 'stopping'],
};

export function canTransition(from: SandboxState, to: SandboxState): boolean {
  return SANDBOX_TRANSITIONS[from].includes(to);
}
