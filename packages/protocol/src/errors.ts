/**
 * The closed table of error codes forkd answers with, and the HTTP status each
 * maps to. Every layer (guest client, node, HTTP API, SDK, CLI) speaks these
 * codes, so callers branch on `code`, never on message text.
 */
export const ERROR_CODES = {
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  CONFLICT: 409,
  /** A stream's process does not exist in the state its sandbox was rewound to. */
  REWOUND: 409,
  FAILED_PRECONDITION: 412,
  PAYLOAD_TOO_LARGE: 413,
  RESOURCE_EXHAUSTED: 429,
  CANCELLED: 499,
  INTERNAL: 500,
  NOT_IMPLEMENTED: 501,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

export interface ErrorBody {
  /** `requestId` names the request in the server's log (where an operator finds what a tenant is not shown). */
  error: { code: ErrorCode; message: string; details?: Record<string, unknown>; requestId?: string };
}

/**
 * Marks a ForkdError whichever copy of this module made it. The CLI's bundle
 * carries its own copy while `forkd serve` and `forkd mcp` load the server's and
 * the MCP server's from node_modules: one process, two classes, and an
 * `instanceof` that compared classes would turn the other's errors into INTERNAL.
 */
const BRAND = Symbol.for('forkd.ForkdError');

export class ForkdError extends Error {
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[BRAND] === true;
  }

  override readonly name = 'ForkdError';
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;
  /** The server's id of the request that failed (`x-request-id`), when it came from a server. */
  readonly requestId: string | undefined;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, options?: { cause?: unknown; requestId?: string | undefined }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = details;
    this.requestId = options?.requestId;
    Object.defineProperty(this, BRAND, { value: true });
  }

  get status(): number {
    return ERROR_CODES[this.code];
  }

  toJSON(): ErrorBody {
    return { error: { code: this.code, message: this.message, ...(this.details ? { details: this.details } : {}), ...(this.requestId ? { requestId: this.requestId } : {}) } };
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** Normalises anything thrown at a boundary into a ForkdError (unknowns become INTERNAL). */
export function toForkdError(err: unknown): ForkdError {
  if (err instanceof ForkdError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new ForkdError('INTERNAL', message, undefined, { cause: err });
}

/** Rebuilds a ForkdError from a wire body; anything malformed becomes INTERNAL. */
export function fromErrorBody(body: unknown, status: number): ForkdError {
  const e = (body as Partial<ErrorBody> | null)?.error;
  if (e && isErrorCode(e.code) && typeof e.message === 'string') {
    return new ForkdError(e.code, e.message, typeof e.details === 'object' && e.details ? e.details : undefined, typeof e.requestId === 'string' ? { requestId: e.requestId } : undefined);
  }
  return new ForkdError(status === 404 ? 'NOT_FOUND' : 'INTERNAL', `unexpected response (HTTP ${status})`);
}
