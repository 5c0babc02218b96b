import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../shared/logger.js';
import { WarmPool } from './warm-pool.js';

test('a warm-pool member is handed out only for the template it was started from: one of a deleted or rebuilt template of the name is destroyed, never adopted', async () => {
  let current = 'tpl_old';
  let n = 0;
  const destroyed: string[] = [];
  const pool = new WarmPool({ start: async () => ({ id: `sbx-${++n}`, templateId: current }), destroy: async (id) => void destroyed.push(id), keeps: () => true, logger: silentLogger }, { size: 2, always: ['py'], recent: 0 });
  pool.fill();
  await pool.settled();
  assert.deepEqual([...pool.held()], ['sbx-1', 'sbx-2']);
  assert.equal(pool.take({ name: 'py', id: 'tpl_old' }), 'sbx-1', 'the template it was started from');
  await pool.settled();

  // `py` deleted and made again (by any tenant): a new id under the same name.
  current = 'tpl_new';
  assert.equal(pool.take({ name: 'py', id: 'tpl_new' }), undefined, 'no member of the old template is handed out');
  assert.deepEqual(destroyed.sort(), ['sbx-2', 'sbx-3']);
  await pool.settled();
  assert.equal(pool.take({ name: 'py', id: 'tpl_new' }), 'sbx-4');
  await pool.close();
});

test('besides the always-kept templates, the most recently wanted ones get one member each; one pushed out, forgotten or failing to start is dropped', async () => {
  let n = 0;
  const destroyed: string[] = [];
  const failing = new Set(['gone']);
  const pool = new WarmPool(
    {
      start: async (t) => {
        if (failing.has(t)) throw new Error('template gone');
        return { id: `${t}-${++n}`, templateId: t };
      },
      destroy: async (id) => void destroyed.push(id),
      keeps: (t) => !t.startsWith('stage-'),
      logger: silentLogger,
    },
    { size: 1, always: ['base'], recent: 2 },
  );
  pool.want('a');
  await pool.settled();
  pool.want('b');
  await pool.settled();
  assert.deepEqual([...pool.held()].sort(), ['a-2', 'b-3', 'base-1']);
  pool.want('c');
  await pool.settled();
  assert.deepEqual([...pool.held()].sort(), ['b-3', 'base-1', 'c-4'], 'a, the least recent, is pushed out');
  assert.deepEqual(destroyed, ['a-2']);
  assert.equal(pool.take({ name: 'b', id: 'b' }), 'b-3');
  await pool.settled();
  assert.ok(pool.held().has('b-5'), 'taken: refilled');
  pool.forget('c');
  assert.ok(destroyed.includes('c-4'));
  pool.want('stage-1');
  await pool.settled();
  assert.ok(![...pool.held()].some((id) => id.startsWith('stage-')), 'a staged template is never kept');
  pool.want('gone');
  await pool.settled();
  assert.ok(![...pool.held()].some((id) => id.startsWith('gone')));
  assert.equal(pool.take({ name: 'x', id: 'x' }), undefined, 'a miss makes x wanted');
  await pool.settled();
  assert.ok([...pool.held()].some((id) => id.startsWith('x-')));
  await pool.close();
  assert.deepEqual([...pool.held()], []);
});

test('a pool of size 0 starts nothing, whatever is wanted', async () => {
  let started = 0;
  const pool = new WarmPool({ start: async (t) => ({ id: `${t}-${++started}`, templateId: t }), destroy: async () => {}, keeps: () => true, logger: silentLogger }, { size: 0, always: ['base'], recent: 2 });
  pool.want('a');
  assert.equal(pool.take({ name: 'a', id: 'a' }), undefined);
  await pool.settled();
  assert.equal(started, 0);
});

test('settled() resolves when there is nothing to start (a fill that ends at once used to leave it spinning)', async () => {
  const pool = new WarmPool({ start: async (t) => ({ id: t, templateId: t }), destroy: async () => {}, keeps: () => true, logger: silentLogger }, { size: 1, always: [], recent: 0 });
  pool.fill();
  await Promise.race([pool.settled(), new Promise((_, reject) => setTimeout(() => reject(new Error('settled() never resolved')), 1000))]);
  pool.want('a');
  await pool.settled();
  pool.fill();
  await Promise.race([pool.settled(), new Promise((_, reject) => setTimeout(() => reject(new Error('settled() never resolved')), 1000))]);
});
