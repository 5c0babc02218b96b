import { randomBytes } from 'node:crypto';
import { toForkdError, type ErrorBody, type ForkdError } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';

/** `req-` + 64 random bits: names one API request in responses, stream events, the audit log and the server's log. */
export function newRequestId(): string {
  return `req-${randomBytes(8).toString('hex')}`;
}

export const REQUEST_ID_HEADER = 'x-request-id';

/**
 * Details a tenant may see: they describe the tenant's own request or
 * sandbox (which fields were invalid, a size limit, the output of its own
 * setup command, the errno of a file operation in its sandbox, when to retry
 * after too many failed authentications, which of its limits or of the
 * server's per-sandbox maxima refused it, which rule of its policy refused a call). The host's capacity behind an
 * admission refusal is the operator's. Everything
 * else — commands, tool output tails, log paths, exit codes of host tools —
 * is the host's and stays in the server's log.
 */
const TENANT_DETAILS = new Set(['issues', 'limitBytes', 'outputTail', 'errno', 'retryAfterSeconds', 'limit', 'max', 'used', 'requested', 'rule']);
/** Details that say the message itself came from a host tool (so it may quote its output). */
const TOOL_DETAILS = ['cmd', 'stderrTail', 'logPath'];
/** An absolute path of two or more components: in a server-side failure it is a host path, not the tenant's. */
const HOST_PATH = /(^|[\s'"(=:,[])\/[\w.@+-]+\/[\w.@+/-]*/;

const GENERIC: Partial<Record<ForkdError['code'], string>> = {
  INTERNAL: 'internal error',
  TIMEOUT: 'an operation on the host timed out',
  UNAVAILABLE: 'the operation could not be completed on the host',
};

function generic(fe: ForkdError, requestId: string): string {
  return `${GENERIC[fe.code] ?? fe.code.toLowerCase().replaceAll('_', ' ')}; the operator can find it by request id ${requestId}`;
}

/**
 * What a caller is shown of an error. Admin keys (the operator) see all of
 * it. Tenants see the code, forkd's own message and the request id: an
 * INTERNAL error, or one whose message comes from a host tool or names a host
 * path, is replaced by a generic message; details are filtered to theirs.
 */
export function publicError(err: unknown, requestId: string, admin: boolean): ErrorBody['error'] {
  const fe = toForkdError(err);
  if (admin) return { code: fe.code, message: fe.message, ...(fe.details ? { details: fe.details } : {}), requestId };
  const fromTool = TOOL_DETAILS.some((k) => fe.details?.[k] !== undefined);
  const hidden = fe.code === 'INTERNAL' || fromTool || (fe.status >= 500 && HOST_PATH.test(fe.message));
  const details = Object.fromEntries(Object.entries(fe.details ?? {}).filter(([k]) => TENANT_DETAILS.has(k)));
  return { code: fe.code, message: hidden ? generic(fe, requestId) : fe.message, ...(Object.keys(details).length ? { details } : {}), requestId };
}

export function errorBody(err: unknown, requestId: string, admin: boolean): ErrorBody {
  return { error: publicError(err, requestId, admin) };
}

/**
 * The whole error on the server's log, under the request id the caller got:
 * server-side failures as errors (with details, tails, paths and the cause's
 * stack), refusals (4xx) at info.
 */
export function logRequestError(logger: Logger, err: unknown, fields: { requestId: string } & Record<string, unknown>): void {
  const fe = toForkdError(err);
  const cause = fe.cause instanceof Error ? fe.cause : err instanceof Error && err !== fe ? err : undefined;
  const entry = { ...fields, code: fe.code, error: fe.message, ...(fe.details ? { details: fe.details } : {}), ...(cause?.stack ? { stack: cause.stack } : fe.status >= 500 && fe.stack ? { stack: fe.stack } : {}) };
  if (fe.status >= 500) logger.error('request failed', entry);
  else logger.info('request refused', entry);
}
