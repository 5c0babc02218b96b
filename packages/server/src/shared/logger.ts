import { currentContext } from './request-context.js';

/** Structured JSON logs on stderr; one line per event, fields flat; a line logged while serving a request carries its id. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export function createLogger(level: LogLevel = (process.env.FORKD_LOG_LEVEL as LogLevel) || 'info', sink: (line: string) => void = (l) => process.stderr.write(l + '\n')): Logger {
  const min = ORDER[level] ?? 20;
  const log = (lvl: LogLevel) => (msg: string, fields?: Record<string, unknown>) => {
    if (ORDER[lvl] < min) return;
    const requestId = currentContext()?.requestId;
    sink(JSON.stringify({ time: new Date().toISOString(), level: lvl, msg, ...(requestId ? { requestId } : {}), ...fields }));
  };
  return { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') };
}

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
