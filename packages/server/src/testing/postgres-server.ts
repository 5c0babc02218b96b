import { appendFile, chown, mkdtemp, readdir, rm } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { exec } from '../shared/exec.js';

/** A throwaway PostgreSQL server for tests: Debian's binaries, its own data directory, loopback only. */
export interface PostgresServer {
  /** The superuser's URL of a database (trust auth: no password). */
  url(database: string): string;
  /** A new empty database; returns its URL. */
  createDatabase(): Promise<string>;
  /** Stops the server (`fast`: its data written out, which durability off would lose in a crash) until `start`. */
  halt(): Promise<void>;
  /** Starts a halted server again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server and deletes its directory. */
  stop(): Promise<void>;
}

const PG_ROOT = '/usr/lib/postgresql';

/** The newest installed PostgreSQL's bin directory; a clear error (never a skip) when there is none. */
export async function postgresBinDir(): Promise<string> {
  const versions = existsSync(PG_ROOT) ? (await readdir(PG_ROOT)).filter((v) => existsSync(join(PG_ROOT, v, 'bin/initdb'))) : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (!newest) throw new Error(`PostgreSQL is not installed (no ${PG_ROOT}/*/bin/initdb): the PostgreSQL store's tests need it; run ./forkd setup, which installs Debian's postgresql package`);
  return join(PG_ROOT, newest, 'bin');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** PostgreSQL refuses to run as root: as root, its tools run as the `postgres` user (setpriv, util-linux). */
async function asPostgres(): Promise<{ run: (argv: string[]) => Promise<unknown>; uid: number; gid: number } | { run: (argv: string[]) => Promise<unknown>; uid?: undefined; gid?: undefined }> {
  if (process.getuid?.() !== 0) return { run: ([file, ...args]) => exec(file!, args, { timeoutMs: 120_000 }) };
  const uid = Number((await exec('id', ['-u', 'postgres'])).stdout.trim());
  const gid = Number((await exec('id', ['-g', 'postgres'])).stdout.trim());
  const run = (argv: string[]) => exec('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '--', ...argv], { timeoutMs: 120_000 });
  return { run, uid, gid };
}

/**
 * Starts a PostgreSQL server in a temporary directory: initdb with trust
 * authentication (it listens on 127.0.0.1 and a Unix socket in that
 * directory only), durability off (a test's data need not survive a crash).
 */
export async function startPostgres(): Promise<PostgresServer> {
  const bin = await postgresBinDir();
  const dir = await mkdtemp(join(tmpdir(), 'forkd-pg-'));
  const data = join(dir, 'data');
  const user = await asPostgres();
  if (user.uid !== undefined) await chown(dir, user.uid, user.gid);
  try {
    await user.run([join(bin, 'initdb'), '-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
    const port = await freePort();
    const conf = [`listen_addresses = '127.0.0.1'`, `port = ${port}`, `unix_socket_directories = '${dir}'`, 'fsync = off', 'synchronous_commit = off', 'full_page_writes = off', 'max_connections = 200'];
    await appendFile(join(data, 'postgresql.conf'), `\n${conf.join('\n')}\n`);
    const server = handle(bin, dir, port, user.run);
    await server.start();
    return server;
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

function handle(bin: string, dir: string, port: number, run: (argv: string[]) => Promise<unknown>): PostgresServer {
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`;
  const pgCtl = (...args: string[]) => run([join(bin, 'pg_ctl'), '-D', join(dir, 'data'), ...args]);
  let n = 0;
  return {
    url,
    async halt() {
      await pgCtl('-m', 'fast', '-w', 'stop');
    },
    async start() {
      await pgCtl('-l', join(dir, 'server.log'), '-w', '-t', '60', 'start');
    },
    async createDatabase() {
      const name = `forkd_test_${++n}`;
      const admin = postgres(url('postgres'), { max: 1, onnotice: () => {} });
      try {
        await admin.unsafe(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end({ timeout: 5 });
      }
      return url(name);
    },
    async stop() {
      await pgCtl('-m', 'immediate', '-w', 'stop').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}
