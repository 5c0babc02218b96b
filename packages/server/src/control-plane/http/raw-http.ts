import http, { type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { toForkdError } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { errorBody, logRequestError, newRequestId, REQUEST_ID_HEADER } from './public-error.js';

/** A request header as one string (Node gives arrays for repeated ones). */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The request's target as a URL, or undefined for one no URL parser takes (`//x:99999/`): never a throw. */
export function requestUrl(req: IncomingMessage, base: string): URL | undefined {
  try {
    return new URL(req.url ?? '/', base);
  } catch {
    return undefined;
  }
}

/**
 * Answers an upgrade request that will not be upgraded with forkd's JSON
 * error (as a tenant may see it: nobody was authenticated as an admin yet),
 * then closes. The whole error goes to the log under the request id.
 */
export function refuseUpgrade(socket: Duplex, err: unknown, logger?: Logger, path?: string): void {
  const fe = toForkdError(err);
  const requestId = newRequestId();
  if (logger) logRequestError(logger, err, { requestId, method: 'UPGRADE', ...(path ? { path: path.split('?')[0] } : {}) });
  const body = JSON.stringify(errorBody(err, requestId, false));
  socket.end(`HTTP/1.1 ${fe.status} ${http.STATUS_CODES[fe.status] ?? 'Error'}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${REQUEST_ID_HEADER}: ${requestId}\r\nconnection: close\r\n\r\n${body}`);
}
