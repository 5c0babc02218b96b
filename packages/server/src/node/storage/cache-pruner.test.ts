import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CachePruner } from './cache-pruner.js';

const logger = () => {
  const lines: string[] = [];
  return { lines, info: (m: string, f?: object) => void lines.push(`info ${m} ${JSON.stringify(f)}`), warn: (m: string, f?: object) => void lines.push(`warn ${m} ${JSON.stringify(f)}`) };
};

test('each cache is pruned with the age in days; one that throws is logged and the others still run', async () => {
  const asked: [string, number][] = [];
  const log = logger();
  const p = new CachePruner(
    {
      steps: { prune: async (ms) => (asked.push(['steps', ms]), Promise.reject(new Error('disk gone'))) },
      images: { prune: async (ms) => (asked.push(['images', ms]), { removed: ['image-layers/a'], failed: 0 }) },
    },
    2,
    log,
  );
  await p.run();
  assert.deepEqual(asked, [['steps', 2 * 86_400_000], ['images', 2 * 86_400_000]]);
  assert.match(log.lines[0]!, /^warn pruning a build cache failed .*steps.*disk gone/);
  assert.match(log.lines[1]!, /^info build cache pruned .*"removed":1/);
});

test('started, it prunes after the first delay; 0 days never prunes', async () => {
  let runs = 0;
  const caches = { c: { prune: async () => (runs++, { removed: [], failed: 0 }) } };
  const on = new CachePruner(caches, 7, logger());
  on.start(5);
  const off = new CachePruner(caches, 0, logger());
  off.start(5);
  await new Promise((r) => setTimeout(r, 60));
  await on.stop();
  await off.stop();
  assert.equal(runs, 1);
});
