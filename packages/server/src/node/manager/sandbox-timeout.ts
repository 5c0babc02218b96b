/** Sandboxes start-up recovery works on at once (restores: CPU and disk bound). */
export const RECOVERY_CONCURRENCY = 4;

/**
 * How long the reconciler's pass and start-up recovery wait for one sandbox
 * before going on without it: a policy snapshot or pause talks to the guest
 * at most a few times (dumpable on and off, quiesce), each bounded by the
 * guest deadline, plus CRIU's own time. The work itself is not cut short.
 */
export function sandboxTimeoutMs(guestDeadlineMs: number): number {
  return 4 * guestDeadlineMs;
}
