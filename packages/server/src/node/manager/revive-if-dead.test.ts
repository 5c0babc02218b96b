import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { testManager, type TestManager } from './manager-test-kit.js';

let t: TestManager;
before(async () => {
  t = await testManager();
});
after(async () => {
  await t.close();
});

test('an init ended but not yet reaped (still counted): a periodic look passes it by, an announced end is confirmed and brought back', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.snapshot(s.id);
  const key = (await t.store.getSandbox(s.id))?.instance ?? s.id;
  t.runtime.kill(key);
  // A zombie init: runc calls it stopped, the pids controller still counts it until its parent reaps it.
  t.runtime.instances.get(key)!.pids = 1;
  assert.equal(await t.manager.reviveIfDead(s.id), false, 'filtered by the task count: no runtime call per periodic look');
  assert.equal((await t.manager.get(s.id)).recovered, undefined);
  assert.equal(await t.manager.reviveIfDead(s.id, true), true);
  const info = await t.manager.get(s.id);
  assert.equal(info.state, 'running');
  assert.ok(info.recovered, 'brought back');
  // A live sandbox an exit watch fired for by mistake (one being destroyed, say) is confirmed alive: nothing done.
  assert.equal(await t.manager.reviveIfDead(s.id, true), false);
  await t.manager.delete(s.id);
});
