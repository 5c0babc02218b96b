/**
 * Estimates for progress lines, shared by the server (which writes some, an
 * image's layers unpacked) and the CLI (set-up, builds, copies). No clock of
 * its own: callers pass the elapsed time in.
 */

export interface ByteProgress {
  done: number;
  /** Undefined: not known (then no time left). */
  total?: number | undefined;
  elapsedMs: number;
}

/** Bytes per second so far and the time left at that rate (undefined until a byte moved, or without a total). */
export function byteRate(p: ByteProgress): { perSecond: number | undefined; remainingMs: number | undefined } {
  const perSecond = p.elapsedMs > 0 && p.done > 0 ? p.done / (p.elapsedMs / 1000) : undefined;
  if (perSecond === undefined || p.total === undefined) return { perSecond, remainingMs: undefined };
  return { perSecond, remainingMs: (Math.max(p.total - p.done, 0) / perSecond) * 1000 };
}

/** "~40s left", "~3m left", "~1h5m left": rounded up, so the last seconds never read as 0. */
export function formatRemaining(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000));
  if (s < 60) return `~${s}s left`;
  const m = Math.ceil(s / 60);
  return m < 60 ? `~${m}m left` : `~${Math.floor(m / 60)}h${m % 60}m left`;
}
