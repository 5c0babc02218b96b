import type { Duplex } from 'node:stream';
import { guardListener, type FaultComponent } from './connection-guard.js';

/** How long a spliced connection whose client half-closed it may still carry the other side's answer. */
export const HALF_CLOSED_GRACE_MS = 5000;

/**
 * HTTP servers' sockets are half-open: a client gone (FIN) shows as 'end',
 * never 'close', and a sandbox server that keeps its side open would hold a
 * spliced connection (its relay process and its slot) for ever. After the
 * grace period the connection is closed.
 */
export function closeWhenHalfClosed(socket: Duplex, component: FaultComponent, close: () => void): void {
  socket.on('end', guardListener(component, close, () => setTimeout(close, HALF_CLOSED_GRACE_MS).unref()));
}
