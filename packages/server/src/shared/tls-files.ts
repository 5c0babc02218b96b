import { createSecureContext, type Server as TlsServer } from 'node:tls';
import { readFile, stat } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import { ForkdError } from '@forkd/protocol';
import type { Logger } from './logger.js';

/** A server's certificate chain and private key, PEM. */
export interface TlsPair {
  cert: Buffer;
  key: Buffer;
}

/** Where a pair is read from, and what a new one must pass before it is served. */
export interface TlsSource {
  certFile: string;
  keyFile: string;
  /** Said in errors: the variables that name the files. */
  variables: string;
  /** Throws when the pair is not one this server may serve (a certificate for other names). */
  check?: (pair: TlsPair) => void;
}

/** Parses the pair as the TLS stack will (a key that is not the certificate's fails here, not at the first handshake), then `check`. */
function validate(pair: TlsPair, source: TlsSource): void {
  createSecureContext({ cert: pair.cert, key: pair.key });
  source.check?.(pair);
}

/** The pair, read and checked now: a missing, unreadable or mismatched file fails the start, not the first handshake. */
export async function readTlsPair(source: TlsSource): Promise<TlsPair> {
  const read = (f: string) =>
    readFile(f).catch((err: unknown) => {
      throw new ForkdError('FAILED_PRECONDITION', `cannot read ${f} (${source.variables}): ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    });
  const pair = { cert: await read(source.certFile), key: await read(source.keyFile) };
  try {
    validate(pair, source);
  } catch (err) {
    throw new ForkdError('FAILED_PRECONDITION', `${source.certFile} and ${source.keyFile} (${source.variables}): ${(err as Error).message}`);
  }
  return pair;
}

/** Throws unless the certificate (the chain's first) is valid for `name`. */
export function requireCovers(cert: Buffer, name: string, hint: string): void {
  const x = new X509Certificate(cert);
  if (!x.checkHost(name)) throw new Error(`the certificate (${x.subjectAltName ?? x.subject}) is not valid for ${name}: ${hint}`);
}

/** What identifies a file's content without reading it: a renewal (new inode, size or time) changes it. Symlinks are followed, as certbot's live/ links are. */
async function signature(files: string[]): Promise<string> {
  const s = await Promise.all(files.map((f) => stat(f).then((x) => `${x.ino}:${x.size}:${x.mtimeMs}:${x.ctimeMs}`, () => 'missing')));
  return s.join('|');
}

/**
 * Serves renewed certificates without a restart: every `everyMs` the two
 * files' inode, size and times are compared with the last seen; on a change
 * the pair is read, checked as at start and handed to the server for new
 * connections (open ones keep theirs). A half-renewed or wrong pair is
 * logged and the served one kept; the next change is tried again.
 */
export function watchTlsPair(server: TlsServer, source: TlsSource, logger: Logger, everyMs = 30_000): () => void {
  let last: string | undefined;
  let busy = false;
  const tick = async () => {
    if (busy) return;
    busy = true;
    try {
      const now = await signature([source.certFile, source.keyFile]);
      if (last === undefined || now === last) return void (last = now);
      last = now;
      const pair = await readTlsPair(source);
      server.setSecureContext({ cert: pair.cert, key: pair.key });
      logger.info('TLS certificate reloaded', { file: source.certFile, validTo: new X509Certificate(pair.cert).validTo });
    } catch (err) {
      logger.warn('TLS certificate not reloaded: the one served is kept', { file: source.certFile, error: (err as Error).message });
    } finally {
      busy = false;
    }
  };
  void tick();
  const timer = setInterval(() => void tick(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
