import type { ExitWatch } from './runtime.js';

/** A source of an instance's end: calls `fire` when it sees one; returns its stop (undefined: it cannot see any here). */
export type ExitSource = (fire: () => void) => (() => void) | undefined;

/**
 * One watch over every source of an instance's end: `onExit` once, from
 * whichever says so first, then every source stops. `everyExit` comes from
 * `host` (the kernel's notice of an empty cgroup); `own` announces only the
 * ends the runtime causes itself.
 */
export function firstExit(onExit: () => void, host: ExitSource, own: ExitSource): ExitWatch {
  let fired = false;
  const stops: Array<(() => void) | undefined> = [];
  const stop = () => {
    for (const s of stops) s?.();
  };
  const fire = () => {
    if (fired) return;
    fired = true;
    stop();
    onExit();
  };
  stops.push(host(fire));
  const everyExit = stops[0] !== undefined;
  stops.push(own(fire));
  if (fired) stop();
  return { stop, everyExit };
}
