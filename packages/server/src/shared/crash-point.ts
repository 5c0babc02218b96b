/**
 * Fault injection for crash-safety tests: `FORKD_CRASH_AT=<point>` makes the
 * daemon kill itself (SIGKILL, no cleanup) when it reaches that point, so
 * tests can prove recovery from a crash in the middle of an operation.
 */
export function crashPoint(name: string): void {
  if (process.env.FORKD_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
