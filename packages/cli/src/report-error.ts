import { ForkdError, type ErrorCode } from '@forkd/protocol/errors';
import { UsageError } from './usage-error.js';

const ERRNO_CODES: Record<string, ErrorCode> = {
  ENOENT: 'NOT_FOUND',
  EACCES: 'PERMISSION_DENIED',
  EPERM: 'PERMISSION_DENIED',
  EEXIST: 'ALREADY_EXISTS',
  EISDIR: 'INVALID_ARGUMENT',
  ENOTDIR: 'INVALID_ARGUMENT',
  ENOSPC: 'RESOURCE_EXHAUSTED',
  EPIPE: 'CANCELLED',
};

/** Local failures (files in `cp`, sockets) speak the same codes as the server's. */
export function toCliError(err: unknown): ForkdError {
  if (err instanceof ForkdError) return err;
  const errno = (err as NodeJS.ErrnoException | null)?.code;
  const code = (errno && ERRNO_CODES[errno]) || 'INTERNAL';
  return new ForkdError(code, err instanceof Error ? err.message : String(err), undefined, { cause: err });
}

/**
 * Prints `error: CODE: message` and returns the exit status: 2 for usage
 * errors, 1 otherwise. FORKD_DEBUG=1 adds the request id, the server's stderr tail
 * (admin keys only) and stacks.
 */
export function reportError(err: unknown, opts: { command?: string | undefined; env?: NodeJS.ProcessEnv; write?: (s: string) => void } = {}): number {
  const write = opts.write ?? ((s: string) => process.stderr.write(s));
  const debug = !!(opts.env ?? process.env).FORKD_DEBUG && (opts.env ?? process.env).FORKD_DEBUG !== '0';
  if (err instanceof UsageError) {
    write(`error: INVALID_ARGUMENT: ${err.message}\n`);
    write(`Run 'forkd ${opts.command ? `${opts.command} ` : ''}--help' for usage.\n`);
    return 2;
  }
  const fe = toCliError(err);
  write(`error: ${fe.code}: ${fe.message}\n`);
  if (fe.code === 'UNAUTHENTICATED') write('hint: set FORKD_API_KEY (an admin makes one with forkd keys create), or run as root on the server, whose admin key forkd setup left in /var/lib/forkd/admin.key\n');
  if (debug) {
    if (fe.requestId) write(`request id: ${fe.requestId}\n`);
    const tail = fe.details?.stderrTail;
    if (typeof tail === 'string' && tail.trim()) write(`--- stderr tail ---\n${tail.replace(/\n?$/, '\n')}`);
    const stack = (fe.cause instanceof Error ? fe.cause : fe).stack;
    if (stack) write(`${stack}\n`);
  }
  return 1;
}
