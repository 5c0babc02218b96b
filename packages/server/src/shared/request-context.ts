import { AsyncLocalStorage } from 'node:async_hooks';

/** The trace a piece of work belongs to (W3C ids, lowercase hex). */
export interface TraceParent {
  traceId: string;
  spanId: string;
}

/** What every log line and span of one API request shares. */
export interface RequestContext {
  requestId?: string | undefined;
  trace?: TraceParent | undefined;
}

const storage = new AsyncLocalStorage<RequestContext>();

/**
 * Runs `fn` with `ctx` merged over the current context, for everything it
 * awaits and starts: the logger and tracer read it, so no call site has to
 * pass a request id or a parent span down by hand.
 */
export function withContext<T>(ctx: RequestContext, fn: () => T): T {
  return storage.run({ ...storage.getStore(), ...ctx }, fn);
}

export function currentContext(): RequestContext | undefined {
  return storage.getStore();
}

/** How a node call carries the request id it serves (the control plane's `x-request-id`), so the node's lines carry it too. */
export const NODE_REQUEST_ID_HEADER = 'x-request-id';

/** A request id as forkd makes them (`req-` + 16 hex digits); anything else in the header is not an id. */
export function requestIdFrom(header: string | undefined): string | undefined {
  return header !== undefined && /^req-[0-9a-f]{16}$/.test(header) ? header : undefined;
}
