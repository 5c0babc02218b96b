import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { toForkdError } from '@forkd/protocol';

/** A request header as one string (Node gives arrays for repeated ones). */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Answers an upgrade request that will not be upgraded with forkd's JSON error, then closes. */
export function refuseUpgrade(socket: Duplex, err: unknown): void {
  const fe = toForkdError(err);
  const body = JSON.stringify(fe.toJSON());
  socket.end(`HTTP/1.1 ${fe.status} ${http.STATUS_CODES[fe.status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}
