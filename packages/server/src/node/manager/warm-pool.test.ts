import assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../shared/logger.js';
import { WarmPool } from './warm-pool.js';

test('a warm-pool member is handed out only for the template it was started from: one of a deleted or rebuilt template of the name is destroyed, never adopted', async () => {
  let current = 'tpl_old';
  let n = 0;
  const destroyed: string[] = [];
  const pool = new WarmPool({ start: async () => ({ id: `sbx-${++n}`, templateId: current }), destroy: async (id) => void destroyed.push(id), logger: silentLogger }, 2, ['py']);
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
