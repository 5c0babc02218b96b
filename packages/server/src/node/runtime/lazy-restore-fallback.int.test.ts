import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Limits } from '@forkd/protocol';
import { isRoot } from '../../testing/test-node.js';
import { openRuncHarness } from './runc-test-harness.js';

/**
 * A lazy restore starts runc beside its `criu lazy-pages` daemon, and CRIU's
 * connect to it waits until it listens (libforkd-uffd, FORKD_LAZY_WAIT_MS).
 * A daemon that ends without ever listening must not leave that wait to run
 * its 10 s, nor fail the restore: CRIU gives up once the daemon is gone
 * (FORKD_LAZY_PID), and the runtime restores again, eagerly. Here the
 * daemon is a stand-in that ends, having never listened, once the restore's
 * CRIU has started (its log is there), so runc surely ran before it ended.
 */
describe('RuncRuntime: a lazy restore whose pages daemon ends before it listens', { skip: !isRoot && 'needs root (runc, CRIU, a Btrfs pool)' }, () => {
  test('restores eagerly at once, its memory back, instead of waiting for the daemon', async () => {
    const h = await openRuncHarness(async (o, node) => {
      const tools = join(node.dir, 'tools');
      await mkdir(tools, { recursive: true });
      const criu = join(tools, 'criu');
      const script = [
        '#!/bin/sh',
        'if [ "$1" = lazy-pages ]; then',
        '  while [ "$#" -gt 0 ] && [ "$1" != --work-dir ]; do shift; done',
        '  while [ ! -e "$2/restore.log" ]; do sleep 0.01; done',
        '  exit 1',
        'fi',
        `exec ${o.criu} "$@"`,
      ];
      await writeFile(criu, script.join('\n') + '\n', { mode: 0o755 });
      return { ...o, criu, lazyRestore: true, lazyRestoreMinBytes: 0, lazyConnectWait: true };
    });
    try {
      const spec = async (k: string) => ({ root: await h.root(k), hostname: k, limits: Limits.parse({ memoryMb: 256, cpus: 1, pids: 128 }), env: {}, idmap: h.idmap });
      await h.runtime.start('lazy-a', await spec('lazy-a'));
      const value = await h.memory('lazy-a');
      const imagesDir = await h.dir();
      const snapKey = 'snapshots/lazy-a-1/rootfs';
      const whileFrozen = await h.frozenCommit('lazy-a', snapKey);
      await h.runtime.checkpoint('lazy-a', { imagesDir, workDir: await h.dir(), leaveRunning: false, ...(whileFrozen ? { whileFrozen } : {}) });
      await h.runtime.destroy('lazy-a');
      const t0 = performance.now();
      const st = await h.runtime.restore('lazy-b', { ...(await spec('lazy-b')), root: await h.rootFrom('lazy-b', snapKey) }, { imagesDir });
      const ms = performance.now() - t0;
      assert.equal(st.status, 'running');
      assert.equal(await h.memory('lazy-b'), value, 'its memory, restored eagerly');
      assert.ok(ms < 6_000, `restored in ${Math.round(ms)} ms: the connect gave up once the daemon was gone, not after its 10 s`);
      await h.runtime.destroy('lazy-b');
    } finally {
      await h.close();
    }
  });
});
