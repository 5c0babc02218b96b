import type { Logger } from './logger.js';

/**
 * The one guard around every listener that handles a tenant's bytes (socket
 * `data`, stream, upgrade and message handlers of the proxies, resolver,
 * envd gateway, WebSocket endpoints and guest connections). A throw escaping
 * such a listener reaches the process's `uncaughtException` and would take
 * every tenant's sandboxes down with it; here it ends only that connection,
 * is counted per component for `/metrics` and is logged for the operator.
 */
export type FaultComponent =
  | 'egress-proxy'
  | 'egress-forwarder'
  | 'dns'
  | 'envd'
  | 'websocket'
  | 'port-proxy'
  | 'guest'
  | 'node-http'
  | 'api'
  | 'uncaught';

/** Handler faults counted per component since the process started. */
export class FaultCounters {
  readonly #counts = new Map<string, number>();

  count(component: FaultComponent): void {
    this.#counts.set(component, (this.#counts.get(component) ?? 0) + 1);
  }

  get(component: FaultComponent): number {
    return this.#counts.get(component) ?? 0;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#counts);
  }
}

/** Process-wide: a node's and a control plane's components count into the one map of their process. */
export const handlerFaults = new FaultCounters();

let faultLogger: Logger | undefined;

/** Where guarded faults are logged (the daemon sets its logger at start; before that they are only counted). */
export function setFaultLogger(logger: Logger | undefined): void {
  faultLogger = logger;
}

/** Records one fault: counted and logged, never thrown. */
export function recordFault(component: FaultComponent, err: unknown, fields?: Record<string, unknown>): void {
  handlerFaults.count(component);
  try {
    faultLogger?.warn('handler fault: connection closed', { component, err: errorText(err), ...fields });
  } catch {
    // A logger that throws must not turn a contained fault into an escaped one.
  }
}

function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return String(err);
  } catch {
    return 'unprintable error';
  }
}

/**
 * Wraps a listener: a throw, or a rejection of the promise it returns, is
 * recorded and `close` ends that one connection. `close` itself is guarded
 * too (destroying a half-dead socket can throw).
 */
export function guardListener<A extends unknown[]>(
  component: FaultComponent,
  close: (err: unknown) => void,
  fn: (...args: A) => unknown,
): (...args: A) => void {
  const fail = (err: unknown) => {
    recordFault(component, err);
    try {
      close(err);
    } catch (closeErr) {
      recordFault(component, closeErr, { during: 'close' });
    }
  };
  return (...args: A) => {
    try {
      const r = fn(...args);
      if (r && typeof (r as Promise<unknown>).then === 'function') (r as Promise<unknown>).then(undefined, fail);
    } catch (err) {
      fail(err);
    }
  };
}

/** Ends a socket-like thing without throwing, whatever state it is in. */
export function destroyQuietly(s: { destroy(err?: Error): unknown } | undefined): void {
  try {
    s?.destroy();
  } catch {
    // already gone
  }
}
