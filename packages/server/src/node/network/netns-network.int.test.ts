import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec, spawnStream } from '../../shared/exec.js';
import { isRoot } from '../../testing/test-node.js';
import { NETNS_ADOPT, NetnsNetwork } from './netns-network.js';
import { networkConformance } from './network-conformance.js';

/**
 * NetnsNetwork (namespaces bind-mounted in a directory, veths, nftables)
 * against the Network contract, with a table, interface prefix and host
 * range of its own, all removed at the end.
 */
const skip = !isRoot && 'needs root (network namespaces, veths, nftables)';

const ECHO = `require('net').createServer((s) => s.pipe(s)).listen(Number(process.argv[1]), '127.0.0.1', () => console.log('ready'));`;

/** A helper process that prints `ready` once it can be used; killed by `stop`. */
async function helper(file: string, args: string[]): Promise<{ pid: number; stop(): Promise<void>; ready: Promise<void> }> {
  const h = spawnStream(file, args);
  // Killed at the end: its pipes close under us.
  h.stream.on('error', () => {});
  const ready = new Promise<void>((resolve, reject) => {
    let out = '';
    h.stream.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('ready')) resolve();
    });
    void h.exit.then((e) => reject(new Error(`${file} exited (${e.code}): ${e.stderr}`)));
  });
  ready.catch(() => {});
  return {
    pid: h.pid,
    ready,
    async stop() {
      h.kill();
      await h.exit;
    },
  };
}

async function nsIno(p: string): Promise<string> {
  const st = await stat(p);
  return `${st.dev}:${st.ino}`;
}

networkConformance(
  'NetnsNetwork',
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'forkd-netns-conformance-'));
    const tag = randomBytes(2).toString('hex');
    const network = new NetnsNetwork(join(dir, 'netns'), { table: `forkdnc${tag}`, ifPrefix: `nc${tag}x`, hostNet: `10.${128 + (parseInt(tag, 16) % 120)}` });
    return {
      network,
      async echo(_id, path, port) {
        const e = await helper('nsenter', [`--net=${path}`, process.execPath, '-e', ECHO, String(port)]);
        await e.ready;
        return () => e.stop();
      },
      async process() {
        const p = await helper('unshare', ['--net', 'sleep', '600']);
        // unshare makes the namespace, then execs sleep (same pid): wait for both, since a busy host can
        // show the new namespace while the cmdline is still unshare's.
        const ours = await nsIno('/proc/self/ns/net');
        const ready = async () => (await nsIno(`/proc/${p.pid}/ns/net`).catch(() => ours)) !== ours && (await readFile(`/proc/${p.pid}/cmdline`, 'utf8').catch(() => '')).startsWith('sleep');
        for (let i = 0; i < 1000 && !(await ready()); i++) await sleep(5);
        if (!(await ready())) throw new Error(`not in its namespace yet: ${await readFile(`/proc/${p.pid}/cmdline`, 'utf8').catch(() => 'gone')}`);
        return p;
      },
      sameNamespace: async (_id, path, pid) => (await nsIno(path)) === (await nsIno(`/proc/${pid}/ns/net`)),
      hostLinks: () => readdir('/sys/class/net'),
      async close() {
        for (const id of await network.list()) await network.release(id);
        await network.dropTable();
        await network.endHolder();
        await network.close();
        await rm(dir, { recursive: true, force: true });
      },
    };
  },
  { skip },
);

test('forkd-netns-adopt --release unmounts a held namespace in the holder, the file left (what release does before removing it); nothing held is no error', { skip }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-netns-release-'));
  const tag = randomBytes(2).toString('hex');
  const network = new NetnsNetwork(join(dir, 'netns'), { table: `forkdnr${tag}`, ifPrefix: `nr${tag}x`, hostNet: `10.${128 + (parseInt(tag, 16) % 120)}` });
  try {
    const path = await network.prepare('rel');
    const holder = /^\/proc\/(\d+)\/root/.exec(path)?.[1];
    assert.ok(holder, path);
    const file = join(dir, 'netns', 'rel');
    const held = async () => (await readFile(`/proc/${holder}/mountinfo`, 'utf8')).includes(` ${file} `);
    assert.equal(await held(), true);
    const release = () => exec(NETNS_ADOPT, ['--mount-ns', `/proc/${holder}/ns/mnt`, '--release', file]);
    await release();
    assert.equal(await held(), false);
    assert.ok(existsSync(file), 'the file stays: release() removes it');
    await release();
    await network.release('rel');
  } finally {
    await network.dropTable();
    await network.endHolder();
    await network.close();
    await rm(dir, { recursive: true, force: true });
  }
});
