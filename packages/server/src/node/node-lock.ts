import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { ForkdError } from '@forkd/protocol';

/** `details.reason` of the error a second node on a state directory gets. */
export const NODE_IN_USE = 'node-in-use';

export interface NodeLock {
  release(): Promise<void>;
}

/**
 * One node per state directory. A second one (`forkd setup` or another
 * `forkd serve` while a daemon runs) would run recovery over the first one's
 * live state: warm-pool sandboxes have no record, so it destroyed them as
 * orphans and the daemon's next create that adopted one failed with `runc
 * update ... container does not exist`. The lock is an abstract Unix socket
 * named after the directory: the kernel frees it when the process dies
 * however it dies (SIGKILL, OOM), so no stale lock survives a crash, and the
 * socket is close-on-exec, so sandboxes and helper daemons never hold it.
 */
export async function lockNode(stateDir: string): Promise<NodeLock> {
  const dir = resolve(stateDir);
  const name = `\0forkd-node-${createHash('sha256').update(dir).digest('hex').slice(0, 32)}`;
  const server = createServer();
  server.unref();
  const err = await new Promise<NodeJS.ErrnoException | undefined>((done) => {
    server.once('error', done);
    server.listen({ path: name }, () => done(undefined));
  });
  const pidFile = join(dir, 'node.pid');
  if (err?.code === 'EADDRINUSE') {
    const pid = (await readFile(pidFile, 'utf8').catch(() => '')).trim();
    throw new ForkdError('FAILED_PRECONDITION', `another forkd process${pid ? ` (pid ${pid})` : ''} is using ${dir}; stop it first (forkd serve owns its node while it runs)`, { reason: NODE_IN_USE, ...(pid ? { pid: Number(pid) } : {}) });
  }
  if (err) throw err;
  await writeFile(pidFile, `${process.pid}\n`, { mode: 0o600 });
  return { release: () => closeServer(server) };
}

function closeServer(server: Server): Promise<void> {
  return new Promise((done) => server.close(() => done()));
}
