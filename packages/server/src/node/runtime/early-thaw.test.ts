import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { offerThaw, settleThaw, THAW_CLAIMED, THAW_TOKEN, THAWED_AT } from './early-thaw.js';

async function withHook(fn: (hook: string, thaws: () => number, thaw: () => Promise<void>) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-thaw-'));
  let n = 0;
  try {
    await fn(join(dir, 'forkd-hook'), () => n, async () => void n++);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** What the action script's watcher does once it saw CRIU's refreeze (thaw.c claim_and_thaw). */
async function watcherClaims(hook: string, report?: string): Promise<void> {
  await rename(`${hook}${THAW_TOKEN}`, `${hook}${THAW_CLAIMED}`);
  if (report !== undefined) await writeFile(`${hook}${THAWED_AT}`, report);
}

test('no watcher claimed the thaw: forkd takes the token and thaws itself', async () => {
  await withHook(async (hook, thaws, thaw) => {
    await offerThaw(hook);
    const before = BigInt(Date.now()) * 1_000_000n;
    const at = await settleThaw(hook, thaw);
    assert.equal(thaws(), 1);
    assert.ok(at >= before);
    assert.ok(!existsSync(`${hook}${THAW_TOKEN}`), 'the token is gone: a late watcher cannot claim it');
  });
});

test('the watcher thawed: its instant is the thaw, forkd writes nothing to the freezer', async () => {
  await withHook(async (hook, thaws, thaw) => {
    await offerThaw(hook);
    await watcherClaims(hook, '1765000000123456789\n');
    assert.equal(await settleThaw(hook, thaw), 1765000000123456789n);
    assert.equal(thaws(), 0);
  });
});

test('a report that comes a little after the claim is waited for', async () => {
  await withHook(async (hook, thaws, thaw) => {
    await offerThaw(hook);
    await watcherClaims(hook);
    setTimeout(() => void writeFile(`${hook}${THAWED_AT}`, '42\n'), 30);
    assert.equal(await settleThaw(hook, thaw), 42n);
    assert.equal(thaws(), 0);
  });
});

test('a watcher whose thaw failed (0), wrote garbage, or never reported: forkd thaws', async () => {
  for (const report of ['0\n', 'x\n', undefined]) {
    await withHook(async (hook, thaws, thaw) => {
      await offerThaw(hook);
      await watcherClaims(hook, report);
      await settleThaw(hook, thaw, 50);
      assert.equal(thaws(), 1, `report ${JSON.stringify(report)}`);
    });
  }
});

test('the token is made anew: one already there (a stale or planted file) fails the offer', async () => {
  await withHook(async (hook) => {
    await writeFile(`${hook}${THAW_TOKEN}`, '');
    await assert.rejects(offerThaw(hook), { code: 'EEXIST' });
  });
});
