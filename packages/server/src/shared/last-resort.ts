import { handlerFaults, setFaultLogger } from './connection-guard.js';
import type { Logger } from './logger.js';

/**
 * Marks an error after which this process's state cannot be trusted (a
 * store or an on-disk record found corrupt): the last-resort handler exits
 * on it, and crash recovery restarts from what is on disk.
 */
export class CorruptStateError extends Error {
  override readonly name = 'CorruptStateError';
}

/** SQLite's own word that a database file is damaged (better-sqlite3 puts it in `code`). */
const CORRUPT_SQLITE = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB']);

function isCorruption(err: unknown): boolean {
  if (err instanceof CorruptStateError) return true;
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && CORRUPT_SQLITE.has(code);
}

/**
 * The daemon's policy for an error nothing caught: any tenant's bytes that
 * slipped past a guard must not stop every other tenant's sandboxes, so the
 * process records it (counted as the `uncaught` component in `/metrics`,
 * logged with its stack) and keeps serving. Only a CorruptStateError (or
 * SQLite's SQLITE_CORRUPT / SQLITE_NOTADB) exits,
 * because continuing on corrupt state could lose what users stored.
 */
export function lastResortPolicy(logger: Logger, exit: (code: number) => void): (err: unknown, origin: string) => void {
  return (err, origin) => {
    if (isCorruption(err)) {
      logger.error('corrupt state: exiting for crash recovery', { origin, err: (err as Error).message, stack: (err as Error).stack });
      exit(70);
      return;
    }
    handlerFaults.count('uncaught');
    logger.error('uncaught error: kept serving', { origin, err: err instanceof Error ? err.message : safeString(err), stack: err instanceof Error ? err.stack : undefined });
  };
}

function safeString(v: unknown): string {
  try {
    return String(v);
  } catch {
    return 'unprintable value';
  }
}

/** Installs lastResortPolicy on the process; returns its removal. */
export function installLastResortHandlers(logger: Logger, exit: (code: number) => void = (c) => process.exit(c)): () => void {
  setFaultLogger(logger);
  const onError = lastResortPolicy(logger, exit);
  const onException = (err: Error, origin: string) => onError(err, origin);
  const onRejection = (reason: unknown) => onError(reason, 'unhandledRejection');
  process.on('uncaughtException', onException);
  process.on('unhandledRejection', onRejection);
  return () => {
    process.off('uncaughtException', onException);
    process.off('unhandledRejection', onRejection);
    setFaultLogger(undefined);
  };
}
