import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { PgControlStore } from '../store/pg-control-store.js';
import { startPostgres, type PostgresServer } from '../testing/postgres-server.js';
import { waitFor } from '../testing/helpers.js';

const REPLICA_JS = fileURLToPath(new URL('../testing/retention-replica.js', import.meta.url));
const EVERY_MS = 100;
const TTL_MS = 1500;

interface Replica {
  child: ChildProcess;
  /** Times (ms since the epoch) at which it pruned something. */
  prunes: number[];
  log(): string;
}

function startReplica(url: string, holder: string): Promise<Replica> {
  const child = spawn(process.execPath, ['--enable-source-maps', REPLICA_JS, url, holder, String(EVERY_MS), String(TTL_MS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const r: Replica = { child, prunes: [], log: () => out };
  let out = '';
  return new Promise((resolve, reject) => {
    const onData = (d: Buffer) => {
      out += d.toString();
      for (const line of d.toString().split('\n')) {
        if (line.includes('audit records past retention deleted')) r.prunes.push(Date.now());
        if (line.includes('replica ready')) resolve(r);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.on('exit', (code) => reject(new Error(`replica ${holder} exited (${code}):\n${out}`)));
  });
}

let server: PostgresServer;
const children: ChildProcess[] = [];
before(async () => {
  server = await startPostgres();
});
after(async () => {
  for (const c of children) c.kill('SIGKILL');
  await server?.stop();
});

test('two control-plane processes on one PostgreSQL: audit retention runs on one; SIGKILL it and the other takes over once the lease lapses', async () => {
  const url = await server.createDatabase();
  const store = await PgControlStore.open(url);
  const old = () => store.appendAudit({ at: new Date(Date.now() - 3 * 86_400_000).toISOString(), operation: 'old', code: 'OK', status: 200, durationMs: 1 });
  try {
    const [a, b] = await Promise.all([startReplica(url, 'replica-a'), startReplica(url, 'replica-b')]);
    children.push(a.child, b.child);
    // Records past retention keep arriving; for two seconds, one replica alone prunes them.
    const feed = setInterval(() => void old(), 40);
    try {
      await sleep(2000);
      const [holder, other] = a.prunes.length > 0 ? [a, b] : [b, a];
      assert.ok(holder.prunes.length >= 5, `the holder pruned ${holder.prunes.length} times`);
      assert.equal(other.prunes.length, 0, `the other replica pruned too:\n${other.log()}`);

      const killedAt = Date.now();
      holder.child.kill('SIGKILL');
      await waitFor(() => other.prunes.length > 0, 10_000);
      const takeover = other.prunes[0]! - killedAt;
      // The lease was renewed at most one tick before the kill: it lapses no sooner than TTL - tick after it.
      assert.ok(takeover >= TTL_MS - EVERY_MS - 100, `taken over ${takeover} ms after the kill, before the lease lapsed`);
      assert.ok(takeover <= TTL_MS + 5 * EVERY_MS + 1000, `taken over only ${takeover} ms after the kill`);
    } finally {
      clearInterval(feed);
    }
    await waitFor(async () => (await store.queryAudit({ limit: 1000, operation: 'old' })).length === 0, 5000);
  } finally {
    await store.close();
  }
});
