import { toForkdError, type ErrorCode } from '@forkd/protocol';
import { publicError } from '../http/public-error.js';

/**
 * The one place forkd's closed error codes become E2B's: the control plane's
 * `{code, message}` bodies (the SDK branches on the numeric `code`), and
 * Connect-RPC's string codes on envd. Messages go through publicError, so a
 * tenant never sees a host path or a host tool's output here either.
 */

/** The body of every non-2xx control-plane answer: `code` equals the HTTP status. */
export interface E2bErrorBody {
  code: number;
  message: string;
}

/** forkd status → the status E2B's SDK expects for the same failure (412 is not one it knows). */
const API_STATUS: Partial<Record<ErrorCode, number>> = {
  FAILED_PRECONDITION: 400,
  REWOUND: 409,
  PAYLOAD_TOO_LARGE: 400,
  CANCELLED: 500,
  NOT_IMPLEMENTED: 400,
};

export function apiError(err: unknown, requestId: string): { status: number; body: E2bErrorBody; retryAfter?: number | undefined } {
  const fe = toForkdError(err);
  const status = API_STATUS[fe.code] ?? fe.status;
  const retry = fe.details?.retryAfterSeconds;
  return { status, body: { code: status, message: publicError(fe, requestId, false).message }, retryAfter: typeof retry === 'number' ? retry : undefined };
}

/** A control-plane refusal made by the E2B layer itself (not a forkd error). */
export class E2bApiError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export type ConnectCode =
  | 'canceled'
  | 'unknown'
  | 'invalid_argument'
  | 'deadline_exceeded'
  | 'not_found'
  | 'already_exists'
  | 'permission_denied'
  | 'resource_exhausted'
  | 'failed_precondition'
  | 'aborted'
  | 'out_of_range'
  | 'unimplemented'
  | 'internal'
  | 'unavailable'
  | 'data_loss'
  | 'unauthenticated';

/** The HTTP status of a unary Connect error (the Connect spec's table). */
export const CONNECT_STATUS: Record<ConnectCode, number> = {
  canceled: 499,
  unknown: 500,
  invalid_argument: 400,
  deadline_exceeded: 504,
  not_found: 404,
  already_exists: 409,
  permission_denied: 403,
  resource_exhausted: 429,
  failed_precondition: 400,
  aborted: 409,
  out_of_range: 400,
  unimplemented: 501,
  internal: 500,
  unavailable: 503,
  data_loss: 500,
  unauthenticated: 401,
};

const CONNECT_CODE: Record<ErrorCode, ConnectCode> = {
  INVALID_ARGUMENT: 'invalid_argument',
  UNAUTHENTICATED: 'unauthenticated',
  PERMISSION_DENIED: 'permission_denied',
  NOT_FOUND: 'not_found',
  ALREADY_EXISTS: 'already_exists',
  CONFLICT: 'aborted',
  REWOUND: 'aborted',
  FAILED_PRECONDITION: 'failed_precondition',
  PAYLOAD_TOO_LARGE: 'resource_exhausted',
  RESOURCE_EXHAUSTED: 'resource_exhausted',
  CANCELLED: 'canceled',
  INTERNAL: 'internal',
  NOT_IMPLEMENTED: 'unimplemented',
  UNAVAILABLE: 'unavailable',
  TIMEOUT: 'deadline_exceeded',
};

/** An envd RPC failure with a Connect code. */
export class RpcError extends Error {
  readonly code: ConnectCode;
  constructor(code: ConnectCode, message: string) {
    super(message);
    this.code = code;
  }
}

export function rpcError(err: unknown, requestId: string): { code: ConnectCode; message: string } {
  if (err instanceof RpcError) return { code: err.code, message: err.message };
  const fe = toForkdError(err);
  return { code: CONNECT_CODE[fe.code], message: publicError(fe, requestId, false).message };
}

/** The reference proxy's answer for a sandbox that is unknown, killed, expired or paused (HTTP 502). */
export function sandboxNotFoundBody(sandboxId: string): { sandboxId: string; message: string; code: 502 } {
  return { sandboxId, message: 'The sandbox was not found', code: 502 };
}

export const ENVD_UNAUTHORIZED = 'unauthorized access, please provide a valid access token or method signing if supported';
